// bench/attention_check.cpp — see attention_check.h.
#include "bench/attention_check.h"

#include <cmath>

#include "autograd/ops.h"
#include "bench/common.h"
#include "runtime/allocator.h"
#include "runtime/philox.h"

namespace mase::bench {

std::vector<double> attention_row(const Tensor& qx, const Tensor& kx, const Tensor& vx,
                                  int64_t NH, int64_t b, int64_t h, int64_t i) {
  const int64_t T = qx.size(1), C = qx.size(2), HS = C / NH;
  auto at = [&](const Tensor& x, int64_t t, int64_t d) {
    return double(x.data<float>()[(b * T + t) * C + h * HS + d]);
  };
  std::vector<double> s(T), out(HS, 0.0);
  double m = -INFINITY, sum = 0;
  for (int64_t j = 0; j < T; ++j) {
    for (int64_t d = 0; d < HS; ++d) s[j] += at(qx, i, d) * at(kx, j, d);
    s[j] /= std::sqrt(double(HS));
    m = std::max(m, s[j]);
  }
  for (int64_t j = 0; j < T; ++j) sum += (s[j] = std::exp(s[j] - m));
  for (int64_t j = 0; j < T; ++j)
    for (int64_t d = 0; d < HS; ++d) out[d] += s[j] / sum * at(vx, j, d);
  return out;
}

std::string check_attention_rows(const Tensor& out, const Tensor& qx, const Tensor& kx,
                                 const Tensor& vx, int64_t NH, const AttentionTolerance& tol) {
  const int64_t B = qx.size(0), T = qx.size(1);
  for (uint64_t s = 0; s < 32; ++s) {
    const int64_t b = philox_word(42, s, 0) % B, h = philox_word(42, s, 1) % NH;
    const int64_t i = philox_word(42, s, 2) % T;
    const Tensor row = select(select(select(out, 0, b), 0, h), 0, i).to(Device::cpu());
    const std::string err =
        compare(row, attention_row(qx, kx, vx, NH, b, h, i), tol.out_atol, tol.out_rtol);
    if (!err.empty()) return cat("row (", b, ", ", h, ", ", i, "): ", err);
  }
  return "";
}

std::string check_sdpa_forward(const std::function<Tensor(bool fused)>& run, const Tensor& qx,
                               const Tensor& kx, const Tensor& vx, int64_t NH,
                               const AttentionTolerance& tol) {
  NoGradGuard no_grad;
  for (bool fused : {true, false}) {
    const AttentionTolerance& bounds = fused || tol.naive_too ? tol : AttentionTolerance{};
    const std::string err = check_attention_rows(run(fused), qx, kx, vx, NH, bounds);
    if (!err.empty()) return cat(fused ? "fused " : "naive ", err);
  }
  return "";
}

std::string check_sdpa_backward(const std::function<void(bool fused)>& run,
                                const std::vector<Tensor>& leaves, const AttentionTolerance& tol) {
  std::vector<Tensor> grads[2];
  for (int fused = 0; fused < 2; ++fused) {
    for (const Tensor& x : leaves) x.set_grad(Tensor());
    run(fused == 1);
    for (const Tensor& x : leaves) grads[fused].push_back(x.grad().to(Device::cpu()));
  }
  for (size_t i = 0; i < leaves.size(); ++i) {
    const std::string err =
        compare(grads[1][i], grads[0][i].to_vector<double>(), tol.grad_atol, tol.grad_rtol);
    if (!err.empty()) return cat("gradient of ", "qkv"[i % 3], ": ", err);
  }
  return "";
}

double peak_alloc_mb(Device device, const std::function<void()>& fn) {
  const size_t before = allocator_stats(device).in_use_bytes;
  reset_peak_stats(device);
  fn();
  return double(allocator_stats(device).peak_in_use_bytes - before) / 1e6;
}

}  // namespace mase::bench
