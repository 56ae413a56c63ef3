// tests/autograd/test_cuda_matmul.cpp — edge cases of cuda/matmul.cu and cuda/matmul_bf16.cu that
// the layout tests (test_matmul_batched.cpp) do not reach: an empty inner dim K = 0, plain and
// batched, in fp32 and in --precision bf16. C = Σ over no k = 0 on both devices. Before the fix
// the bf16 path converted a span of (0 − 1)·ld + N elements of B (≤ 0) with a launch of 0
// blocks: "invalid configuration argument" on the GPU; K = 0 now stays on the fp32 path, as on
// the CPU (runtime/cpu/matmul.cpp). Skipped without a GPU.
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"
#include "runtime/kernels/matmul.h"

using namespace mase;
using mase::test::random_tensor;

namespace test_cuda_matmul {

namespace {

Tensor param(const Shape& s, uint64_t seed) {
  return random_tensor(s, seed, -1, 1, DType::f32).set_requires_grad(true);
}

void check_empty_k() {
  auto mm = [](const Tensors& in) { return matmul(in[0], in[1]); };
  test::check_cpu_cuda(mm, {param({3, 5, 0}, 1), param({0, 6}, 2)});         // one GEMM (rows fold)
  test::check_cpu_cuda(mm, {param({3, 4, 5, 0}, 3), param({3, 4, 0, 5}, 4)});  // a batch
  auto lin = [](const Tensors& in) { return linear(in[0], in[1], in[2]); };   // C = bias
  test::check_cpu_cuda(lin, {param({3, 5, 0}, 5), param({6, 0}, 6), param({6}, 7)});
}

}  // namespace

TEST_CASE("matmul CUDA: K = 0 gives zeros (and the bias) like the CPU, fp32 and bf16") {
  if (!test::have_gpu()) return;
  check_empty_k();
  struct Bf16 {  // restored however the case ends
    Bf16() { cuda::set_gemm_precision(GemmPrecision::bf16); }
    ~Bf16() { cuda::set_gemm_precision(GemmPrecision::fp32); }
  } bf16;
  check_empty_k();
}

}  // namespace test_cuda_matmul
