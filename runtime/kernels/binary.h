// runtime/kernels/binary.h — elementwise a (op) b with broadcasting.
//
// The contract of the binary kernels: both backends' signatures side by side, implemented by
// runtime/cpu/binary.cpp (mase::cpu, templates over float and double) and cuda/binary.cu
// (mase::cuda, float only; a build without CUDA gets stubs that throw, see backend.h).
#pragma once
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/shape.h"

namespace mase {
enum class BinaryOp : uint8_t { add, sub, mul, div };
}

namespace mase::cpu {

// out[i] = a[i] op b[i] over `shape`; out is packed, a and b are read through their strides
// (0 on broadcast dims). out may alias a or b when their strides equal out's.
template <class T>
void binary_forward(BinaryOp op, T* out, const T* a, const Strides& a_strides, const T* b,
                    const Strides& b_strides, const Shape& shape);

// out[i] = a[i] op s (or s op a[i] when `scalar_first`), n packed elements.
template <class T>
void binary_scalar_forward(BinaryOp op, T* out, const T* a, T s, bool scalar_first, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/binary.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, binary_forward, (BinaryOp op, float* out, const float* a,
                                    const Strides& a_strides, const float* b,
                                    const Strides& b_strides, const Shape& shape))
MASE_CUDA_FN(void, binary_scalar_forward, (BinaryOp op, float* out, const float* a, float s,
                                           bool scalar_first, int64_t n))

}  // namespace mase::cuda
