// tests/autograd/test_softmax_cuda.cpp — the CUDA softmax kernels (cuda/softmax.cu) against the
// CPU ones, forward and backward, softmax and log_softmax, over every row length that picks a
// different kernel or code path, with fully masked rows; and the kernel ladder
// (cuda/softmax_ladder.cu). Every case skips visibly without a GPU (test::have_gpu).
//
// Tolerances. Both devices compute in f32 with the max subtracted first, but with different exp
// implementations (the CPU's polynomial, runtime/cpu/fast_math.h; CUDA's expf, ≤ 2 ulp) and
// different summation orders (CPU: 8-wide vectors; CUDA: 32 lanes then a shuffle tree). Each
// probability is exp(x − m)·(1/s): a few ulps from the exp, and s's relative rounding, at most
// ~cols·2⁻²⁴ in the worst case and ~√cols·2⁻²⁴ typically (≤ 1e-5 for cols = 13001). So
// probabilities (≤ 1) agree to 1e-6 absolute + 2e-5 relative; log_softmax values (|y| up to ~25
// here) to 2e-5 + 2e-5 relative; gradients (|dx| ≤ 2) to 1e-5 + 2e-5. Infinities must match
// exactly (a −inf on one device and a finite number on the other is a bug, not rounding).
#include <cmath>
#include <limits>

#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/kernels/softmax.h"

using namespace mase;
using mase::test::random_tensor;

namespace test_softmax_cuda {

namespace {

constexpr float kInf = std::numeric_limits<float>::infinity();

// got == want element by element: equal infinities, else within atol + rtol·|want|; no NaN.
void check_close_inf(const Tensor& got, const Tensor& want, double atol, double rtol) {
  REQUIRE(got.shape() == want.shape());
  std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  int64_t bad = 0, first = -1;
  for (size_t i = 0; i < g.size(); ++i) {
    const bool ok = std::isinf(w[i]) ? g[i] == w[i]
                                     : std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]);
    if (!ok && bad++ == 0) first = static_cast<int64_t>(i);
  }
  INFO("first mismatch at element " << first << " of " << got.shape() << ": got "
       << (first >= 0 ? g[first] : 0.0) << ", want " << (first >= 0 ? w[first] : 0.0));
  CHECK(bad == 0);
}

// (rows, cols) random in [-6, 6], with row 0 fully −inf, row 1 −inf on its first half, and (for
// rows ≥ 3) row 2 holding one large value at its end (the max in the last vector / chunk).
Tensor masked_scores(int64_t rows, int64_t cols, uint64_t seed) {
  std::vector<float> v = random_tensor({rows, cols}, seed, -6, 6, DType::f32).to_vector<float>();
  for (int64_t c = 0; c < cols; ++c) v[c] = -kInf;
  if (rows > 1)
    for (int64_t c = 0; c < cols / 2; ++c) v[cols + c] = -kInf;
  if (rows > 2) v[2 * cols + cols - 1] = 30;
  return Tensor::from(v, {rows, cols});
}

// softmax or log_softmax of x on both devices: outputs, and dx for the same random dy.
void check_both_devices(const Tensor& x_cpu, const Tensor& x_gpu_packed, bool log) {
  INFO((log ? "log_softmax" : "softmax") << " of " << x_cpu.shape());
  Tensor xc = x_cpu.detach().clone().set_requires_grad(true);
  Tensor xg = x_gpu_packed.detach();
  xg.set_requires_grad(true);
  Tensor yc = log ? log_softmax(xc) : softmax(xc);
  Tensor yg = log ? log_softmax(xg) : softmax(xg);
  check_close_inf(yg.detach().to(Device::cpu()), yc, log ? 2e-5 : 1e-6, 2e-5);
  Tensor dy = random_tensor(x_cpu.shape(), 11, -1, 1, DType::f32);
  backward(yc, dy);
  backward(yg, dy.detach().to(Device::cuda()));
  check_close_inf(xg.grad().detach().to(Device::cpu()), xc.grad(), 1e-5, 2e-5);
}

}  // namespace

TEST_CASE("softmax CUDA: CPU == CUDA over row lengths that pick each kernel") {
  if (!test::have_gpu()) return;
  // (rows, cols): 1 .. 1024 cols run one warp per row (float4 where cols % 4 == 0, registers
  // for 1, 2, 4, 8, … vectors a lane); 1025 .. 12032 one block per row with the row cached in
  // shared memory (backward caches dy and y: up to 6016); beyond, two reads of the row. Row
  // counts that are not multiples of the 4 rows of a warp kernel's block.
  const int64_t shapes[][2] = {{5000, 1}, {4999, 31}, {1001, 128}, {37, 257}, {3, 33},
                               {129, 1024}, {7, 1025}, {5, 4096}, {3, 5000}, {3, 6145},
                               {2, 13001}, {1, 12288}, {3, 12032}, {2, 6016}, {2, 6020}};
  uint64_t seed = 1;
  for (const auto& s : shapes) {
    Tensor x = masked_scores(s[0], s[1], seed++);
    for (bool log : {false, true}) check_both_devices(x, x.detach().to(Device::cuda()), log);
  }
}

TEST_CASE("softmax CUDA: rows that are not 16-byte aligned take the scalar loads") {
  if (!test::have_gpu()) return;
  // A (R, C) view starting one float into its storage: C % 4 == 0 but every row is misaligned,
  // so the float4 path must not be taken (it would fault or read the wrong floats).
  for (int64_t cols : {128, 4096}) {
    const int64_t rows = 9;
    Tensor flat = random_tensor({1 + rows * cols}, 3, -5, 5, DType::f32);
    Tensor x = view(slice(flat, 0, 1, 1 + rows * cols), {rows, cols});
    Tensor g = view(slice(flat.detach().to(Device::cuda()), 0, 1, 1 + rows * cols), {rows, cols});
    REQUIRE(g.is_contiguous());
    for (bool log : {false, true}) check_both_devices(x, g, log);
  }
}

TEST_CASE("softmax CUDA: a fully masked row is 0 (softmax) and -inf (log_softmax) with no NaN") {
  if (!test::have_gpu()) return;
  for (int64_t cols : {3, 1000, 5000, 20000}) {  // warp kernel, cached block, uncached block
    INFO("cols " << cols);
    Tensor x = Tensor::full({2, cols}, -kInf, DType::f32).detach().to(Device::cuda());
    for (double y : softmax(x).to_vector<double>()) REQUIRE(y == 0.0);
    for (double y : log_softmax(x).to_vector<double>()) REQUIRE(y == -INFINITY);
  }
}

TEST_CASE("softmax CUDA: every version of the kernel ladder gives the production result") {
  if (!test::have_gpu()) return;
  // 12032 and 12288: either side of the shared-memory cache's 47 KB (version 3 refuses 12288)
  for (int64_t cols : {1, 257, 1024, 4096, 12032, 12288, 13001}) {
    const int64_t rows = 67;
    Tensor x = masked_scores(rows, cols, 5).detach().to(Device::cuda());
    Tensor want = softmax(x).detach().to(Device::cpu());
    for (int v = 1; v <= cuda::kSoftmaxVersions; ++v) {
      INFO("version " << v << ", cols " << cols);
      if (!cuda::softmax_version_applies(v, cols)) {
        CHECK_THROWS_AS(cuda::softmax_forward_version(v, x.data<float>(), x.data<float>(), rows,
                                                      cols), ShapeError);
        continue;
      }
      Tensor y = Tensor::empty({rows, cols}, DType::f32, Device::cuda());
      cuda::softmax_forward_version(v, y.data<float>(), x.data<float>(), rows, cols);
      check_close_inf(y.detach().to(Device::cpu()), want, 1e-6, 2e-5);
    }
  }
}

}  // namespace test_softmax_cuda
