// runtime/kernels/where.h — elementwise select with broadcasting. The op
// and its math are in autograd/ops/where.cpp.
//
// The contract of the where kernels: both backends' signatures side by side, implemented by
// runtime/cpu/where.cpp (mase::cpu, templates over float and double) and cuda/where.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/shape.h"

namespace mase::cpu {

// out[i] = cond[i] != 0 ? a[i] : b[i] over `shape`; out is packed, cond / a / b are read
// through their strides (0 on broadcast dims).
template <class T>
void where_forward(T* out, const uint8_t* cond, const Strides& cond_strides, const T* a,
                   const Strides& a_strides, const T* b, const Strides& b_strides,
                   const Shape& shape);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/where.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, where_forward, (float* out, const uint8_t* cond, const Strides& cond_strides,
                                   const float* a, const Strides& a_strides, const float* b,
                                   const Strides& b_strides, const Shape& shape))

}  // namespace mase::cuda
