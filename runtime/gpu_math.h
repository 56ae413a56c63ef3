// runtime/gpu_math.h — the GPU's arithmetic settings, set once for the process by the tools
// (mase-train --precision / --deterministic, mase-bench --precision) through these functions.
//
// GEMM precision (cuBLAS math mode; runtime/kernels/matmul.h):
//   fp32  IEEE fp32 products (the default; PyTorch's default for matmuls)
//   tf32  tensor cores: inputs rounded to TF32 (fp32's range, 10 mantissa bits), products
//         accumulated in fp32 — about 8x the fp32 rate of an H100
//   bf16  GEMM inputs rounded to bf16 (8 significant bits), bf16 tensor cores (2x tf32),
//         fp32 accumulation; all tensors stay fp32 (cuda/matmul_bf16.cu)
// Attention's tile products follow (runtime/kernels/sdpa.h, SdpaMath): fp32 runs them on the
// CUDA cores; tf32 and bf16 on the TF32 tensor cores (11 significant bits: bf16's arithmetic or
// better, and the one tensor-core attention mase-cpp has). MASE_SDPA_MATH=fp32|tf32x3|tf32
// overrides the choice (to time one against another: bench/bench_gpu_step.cpp's variants).
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

// Sets the GEMMs' precision and the attention's arithmetic for CUDA tensors. ConfigError on a
// name other than fp32 / tf32 / bf16 (or a bad MASE_SDPA_MATH). Sets nothing in a build without
// CUDA or on a machine without a GPU (nothing runs there to be affected).
void set_gpu_precision(const std::string& precision);

// The attention's arithmetic on CUDA tensors in words, for a run's header: "fp32 (CUDA cores)",
// "on TF32 tensor cores" or "on tensor cores, tf32x3".
const char* gpu_attention_math();

void set_deterministic(bool on);
bool deterministic();

}  // namespace mase
