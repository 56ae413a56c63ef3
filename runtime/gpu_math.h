// runtime/gpu_math.h — the GPU's arithmetic settings, set once for the process by the tools
// (mase-train --precision / --deterministic, mase-bench --precision) through these functions.
//
// GEMM precision (cuBLAS math mode; runtime/kernels/matmul.h):
//   fp32  IEEE fp32 products (the default; PyTorch's default for matmuls)
//   tf32  tensor cores: inputs rounded to TF32 (fp32's range, 10 mantissa bits), products
//         accumulated in fp32 — about 8x the fp32 rate of an H100
// Determinism: every CUDA kernel of mase-cpp is deterministic by construction — no atomics in
// reductions (fixed trees, fixed partial orders), the embedding gradient summed row by row
// (cuda/embedding.cu), one stream and a fixed cuBLAS workspace — so the same run gives the
// same losses bit for bit. deterministic() is the switch for a kernel that would trade that
// for speed (an atomic-add backward, a split-K GEMM): such a kernel must take its
// deterministic path when it is on. mase-train --deterministic sets it (tests: two runs on the
// GPU compare their losses bit for bit, tests/train/test_gpu_step.cpp).
#pragma once
#include <string>

namespace mase {

// ConfigError on a name other than fp32 / tf32. Does nothing in a build without CUDA or on a
// machine without a GPU (nothing runs there to be affected).
void set_gpu_gemm_precision(const std::string& precision);

void set_deterministic(bool on);
bool deterministic();

}  // namespace mase
