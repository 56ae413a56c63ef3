// tests/runtime/test_mxint8_mma.cpp — the MXINT8 × MXINT8 tensor-core kernel (cuda/mxint8_mma.cu)
// equals the CPU's int8 GEMM (cpu::int8_gemm_scaled_reference, scales mx_step(s)) bit for bit,
// also for blocks whose shared exponents multiply past fp32; and int8_add_block_pow2, the
// kernel's way to apply such scales in fp32, equals the CPU's rule int8_add_block for every
// pair of MXINT8 scales (runtime/kernels/int8_scale.h). Without a GPU the CUDA cases are
// skipped (visibly); the "(CPU)" case runs everywhere.
#include <bit>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/kernels/int8_gemm.h"
#include "runtime/kernels/int8_scale.h"
#include "runtime/kernels/mxint8_linear.h"
#include "runtime/kernels/quant_elem.h"

using namespace mase;

namespace {

bool same_float(float a, float b) {
  return (std::isnan(a) && std::isnan(b)) || std::bit_cast<uint32_t>(a) == std::bit_cast<uint32_t>(b);
}

// Operands of one product: codes (rows, K) and E8M0 scale bytes (rows, K/32).
struct MxOperand {
  std::vector<int8_t> q;
  std::vector<uint8_t> s;
};

MxOperand random_operand(int64_t rows, int64_t K, uint32_t seed, const std::vector<uint8_t>& bytes) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> code(-127, 127);
  std::uniform_int_distribution<size_t> pick(0, bytes.size() - 1);
  MxOperand o{std::vector<int8_t>(size_t(rows * K)), std::vector<uint8_t>(size_t(rows * K / 32))};
  for (auto& v : o.q) v = int8_t(code(gen));
  for (auto& v : o.s) v = bytes[pick(gen)];
  return o;
}

// y (M, N) on the CPU: the int8 GEMM's scalar reference on the codes and scales mx_step(s)
std::vector<float> cpu_product(const MxOperand& x, const MxOperand& w, int64_t M, int64_t N,
                               int64_t K) {
  std::vector<float> sx(x.s.size()), sw(w.s.size()), y(size_t(M * N));
  for (size_t i = 0; i < sx.size(); ++i) sx[i] = quant::mx_step(x.s[i]);
  for (size_t i = 0; i < sw.size(); ++i) sw[i] = quant::mx_step(w.s[i]);
  cpu::int8_gemm_scaled_reference(y.data(), N, x.q.data(), K, sx.data(), w.q.data(), K, sw.data(),
                                  M, N, K, 32, nullptr);
  return y;
}

// y (M, N) from the kernel
std::vector<float> gpu_product(const MxOperand& x, const MxOperand& w, int64_t M, int64_t N,
                               int64_t K) {
  const Tensor xq = Tensor::from(x.q, {M, K}).to(Device::cuda());
  const Tensor xs = Tensor::from(x.s, {M, K / 32}).to(Device::cuda());
  const Tensor wq = Tensor::from(w.q, {N, K}).to(Device::cuda());
  const Tensor ws = Tensor::from(w.s, {N, K / 32}).to(Device::cuda());
  Tensor y = Tensor::empty({M, N}, DType::f32, Device::cuda());
  cuda::mxint8_mma_forward(y.data<float>(), xq.data<int8_t>(), xs.data<uint8_t>(),
                           wq.data<int8_t>(), ws.data<uint8_t>(), M, N, K);
  const Tensor yc = y.to(Device::cpu());
  return std::vector<float>(yc.data<float>(), yc.data<float>() + M * N);
}

int64_t count_differences(const std::vector<float>& a, const std::vector<float>& b, std::string* first) {
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i)
    if (!same_float(a[i], b[i]) && bad++ == 0) *first = cat("element ", i, ": CPU ", a[i], ", CUDA ", b[i]);
  return bad;
}

}  // namespace

TEST_CASE("int8_add_block_pow2 equals int8_add_block for every pair of MXINT8 scales (CPU)") {
  // sums: 0, small, the largest of a block (32·127·127, 32·128·128), odd ones; accumulators:
  // 0, ±0, the fp32 extremes, values at many scales, and (below, per pair) the term's own size
  const int32_t sums[] = {0, 1, -1, 3, -127, 128, 16129, -98765, 516128, -516128, 1 << 19};
  const float accs[] = {0.f, -0.f, 1.f, -1.5f, FLT_MIN, -3 * FLT_MIN, 0x1p-149f, -0x1p-140f,
                        0x1.fffffep-127f, FLT_MAX, -FLT_MAX, 1e-30f, -7.25e20f, 0x1.8p100f};
  int64_t bad = 0, checked = 0;
  std::string first;
  auto check = [&](float acc, int32_t s, uint32_t ex, uint32_t ew) {
    const float sa = quant::mx_step(ex), sb = quant::mx_step(ew);
    const float want = int8_add_block(acc, s, sa, sb), got = int8_add_block_pow2(acc, s, sa, sb);
    ++checked;
    if (!same_float(want, got) && bad++ == 0)
      first = cat("acc ", acc, " s ", s, " scale bytes ", ex, ", ", ew, ": rule ", want, ", pow2 ", got);
  };
  for (uint32_t ex = 0; ex <= 255; ++ex)
    for (uint32_t ew = 0; ew <= 255; ++ew)
      for (int32_t s : sums) {
        for (float acc : accs) check(acc, s, ex, ew);
        // the term itself, rounded, nearby and halved: cancellation and ties
        const double t = double(s) * double(quant::mx_step(ex)) * double(quant::mx_step(ew));
        const float tf = float(t);
        if (std::isfinite(tf))
          for (float acc : {-tf, std::nextafter(-tf, 0.f), tf * 0x1p-24f, -tf * 0x1.8p-25f, tf * 0x1p30f})
            check(acc, s, ex, ew);
      }
  INFO(first);
  CHECK(bad == 0);
  CHECK(checked > 256 * 256 * 11 * 14);
  // the case the kernel's old order, (c·sa)·sb, got wrong: 128·2^121 is inf, 128·2^28 is not
  CHECK(int8_add_block_pow2(0.f, 128, quant::mx_step(254), quant::mx_step(40)) == 0x1p35f);
}

TEST_CASE("mxint8 mma (CUDA) equals the CPU int8 GEMM bit for bit") {
  if (!test::have_gpu()) return;
  // M and N no multiple of the 128 × 128 tile: the edges are masked; scales around 1
  const int64_t M = 200, N = 136, K = 96;
  std::vector<uint8_t> bytes;
  for (uint32_t b = 120; b <= 140; ++b) bytes.push_back(uint8_t(b));
  const MxOperand x = random_operand(M, K, 1, bytes), w = random_operand(N, K, 2, bytes);
  std::string first;
  CHECK_MESSAGE(count_differences(cpu_product(x, w, M, N, K), gpu_product(x, w, M, N, K), &first) == 0, first);
}

TEST_CASE("mxint8 mma (CUDA): shared exponents that multiply past fp32 give the CPU's bits") {
  if (!test::have_gpu()) return;
  // scale bytes at both ends (2^−133, subnormal steps, 2^121) mixed with ordinary ones, so
  // that tiles take both of the kernel's copies (mma_block)
  const int64_t M = 200, N = 136, K = 128;
  const std::vector<uint8_t> bytes = {0, 1, 6, 7, 40, 100, 133, 140, 200, 250, 253, 254};
  MxOperand x = random_operand(M, K, 3, bytes), w = random_operand(N, K, 4, bytes);
  // y[0, 0], block 0: 32·127·127 = 516128 at 2^121 · 2^−93 = 2^28, finite (the kernel's old
  // order took 516128·2^121 = inf first); blocks 1..3 of row 0 / column 0: sums of 0
  for (int64_t k = 0; k < K; ++k) {
    x.q[size_t(k)] = k < 32 ? 127 : 0;
    w.q[size_t(k)] = k < 32 ? 127 : 0;
  }
  x.s[0] = 254;
  w.s[0] = 40;
  const std::vector<float> want = cpu_product(x, w, M, N, K), got = gpu_product(x, w, M, N, K);
  CHECK(want[0] == float(516128.0 * 0x1p28));
  std::string first;
  CHECK_MESSAGE(count_differences(want, got, &first) == 0, first);
}
