// tests/autograd/test_matmul_batched.cpp — batched matmuls on the GPU: each layout that
// cuda::gemm_batched issues as one cuBLAS call (runtime/kernels/matmul.h, batch_grid) ==
// the CPU, forward and backward, and the same again with TF32 tensor cores within a stated
// tolerance. (The plans themselves: tests/runtime/test_batch_plans.cpp, without a GPU.)
#include <cstdlib>

#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"
#include "runtime/kernels/matmul.h"

using namespace mase;
using mase::test::random_tensor;

namespace test_matmul_batched {

namespace {

constexpr int64_t B = 3, T = 5, NH = 4, HS = 8, C = NH * HS;

// (B, T, C) -> (B, NH, T, HS): the head split of BERT's attention, a strided view
Tensor split_heads(const Tensor& x) { return transpose(view(x, {B, T, NH, HS}), 1, 2); }

Tensor param(const Shape& s, uint64_t seed) {
  return random_tensor(s, seed, -1, 1, DType::f32).set_requires_grad(true);
}

// Every layout: head-split (two-level grid: pointer arrays), packed 4-d (one level: strided
// batched), a broadcast operand (stride 0), and a 3-level permuted batch (runs).
void check_all_layouts(double atol, double rtol) {
  auto qk = [](const Tensors& in) {  // q·kᵀ per head: (B, NH, T, T)
    return matmul(split_heads(in[0]), transpose(split_heads(in[1]), -2, -1));
  };
  test::check_cpu_cuda(qk, {param({B, T, C}, 1), param({B, T, C}, 2)}, atol, rtol);
  auto pv = [](const Tensors& in) {  // p·v per head: (B, NH, T, HS)
    return matmul(in[0], split_heads(in[1]));
  };
  test::check_cpu_cuda(pv, {param({B, NH, T, T}, 3), param({B, T, C}, 4)}, atol, rtol);
  auto shared = [](const Tensors& in) { return matmul(in[0], in[1]); };  // b broadcast over B
  test::check_cpu_cuda(shared, {param({B, NH, T, HS}, 5), param({1, NH, HS, 6}, 6)}, atol, rtol);
  auto runs = [](const Tensors& in) {  // batch dims (2, 3, 2) of a permuted tensor
    return matmul(permute(in[0], {1, 0, 2, 3, 4}), in[1]);
  };
  test::check_cpu_cuda(runs, {param({3, 2, 2, 4, 5}, 7), param({2, 3, 2, 5, 3}, 8)}, atol, rtol);
}

}  // namespace

TEST_CASE("matmul batched: CUDA == CPU for head-split, packed, broadcast and irregular batches") {
  if (!test::have_gpu()) return;
  check_all_layouts(1e-5, 1e-5);
  setenv("MASE_GEMM_BATCHED", "loop", 1);  // the one-GEMM-per-matrix path agrees too
  check_all_layouts(1e-5, 1e-5);
  unsetenv("MASE_GEMM_BATCHED");
}

TEST_CASE("matmul batched: TF32 on CUDA == CPU within TF32's rounding") {
  if (!test::have_gpu()) return;
  // TF32 keeps 10 of fp32's 23 mantissa bits: each input is off by at most 2^-11 relative, so
  // a product of inputs in [-1, 1] by at most ~2^-10, and a dot product of K terms by
  // K·2^-10·max|a·b| <= 8·2^-10 ≈ 7.8e-3 (K <= 8 here; the backward's K is T or B·NH·T rows
  // summed over, up to 60, where random signs keep the error near √60·2^-10 ≈ 7.6e-3).
  // restored however the case ends: a TF32 mode left behind would loosen every later case
  struct Tf32 {
    Tf32() { cuda::set_gemm_precision(GemmPrecision::tf32); }
    ~Tf32() { cuda::set_gemm_precision(GemmPrecision::fp32); }
  } tf32;
  CHECK(cuda::gemm_precision() == GemmPrecision::tf32);
  check_all_layouts(2e-2, 1e-2);
}

TEST_CASE("matmul batched: bf16 GEMMs on CUDA == CPU within bf16's rounding") {
  if (!test::have_gpu()) return;
  // bf16 keeps 8 significant bits: each input is off by at most 2^-9 relative, a product of
  // two by ~2^-8, and the fp32 sum of K such products (random signs, |a|, |b| <= 1, E|ab| =
  // 1/4) has an error of about √K·2^-8·0.25/√3 ≈ 4.4e-3 for the largest K here (60: the
  // backward's sums over T·... rows); 3e-2 is ~7 of those, and 1e-1 would hide a wrong
  // operand no better than 2e-2 (a wrong layout is off by O(1)).
  cuda::set_gemm_precision(GemmPrecision::bf16);
  check_all_layouts(3e-2, 2e-2);
  auto lin = [](const Tensors& in) { return linear(in[0], in[1], in[2]); };  // a plain gemm
  test::check_cpu_cuda(lin, {param({B, T, C}, 9), param({16, C}, 10), param({16}, 11)}, 5e-2, 2e-2);
  cuda::set_gemm_precision(GemmPrecision::fp32);
}

}  // namespace test_matmul_batched
