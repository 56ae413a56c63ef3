// runtime/gemm_precision.h — the arithmetic of fp32 GEMMs, one enum for both devices.
//   fp32  IEEE fp32 products and sums (the default; PyTorch's default for matmuls)
//   tf32  GPU tensor cores: inputs rounded to TF32 (fp32's range, 10 mantissa bits), fp32
//         accumulation (no CPU has TF32 units: a GPU-only mode)
//   bf16  both operands rounded to bfloat16 (8 significant bits, round to nearest even), products
//         and sums in fp32: the arithmetic of bf16 matrix units (AVX512-BF16, AMX, tensor cores)
// Each device has its own process-wide setting: the CPU's in runtime/parallel.h
// (set_cpu_gemm_precision), the GPU's in runtime/kernels/matmul.h (cuda::set_gemm_precision,
// set by name through runtime/gpu_math.h). mase-train --precision sets the one of its device.
#pragma once
#include <cstdint>

namespace mase {

enum class GemmPrecision : uint8_t { fp32, tf32, bf16 };

}  // namespace mase
