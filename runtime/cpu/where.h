// runtime/cpu/where.h — elementwise select with broadcasting (twin: cuda/where.h). The op
// and its math are in autograd/ops/where.cpp.
#pragma once
#include <cstdint>

#include "runtime/shape.h"

namespace mase::cpu {

// out[i] = cond[i] != 0 ? a[i] : b[i] over `shape`; out is packed, cond / a / b are read
// through their strides (0 on broadcast dims).
template <class T>
void where_forward(T* out, const uint8_t* cond, const Strides& cond_strides, const T* a,
                   const Strides& a_strides, const T* b, const Strides& b_strides,
                   const Shape& shape);

}  // namespace mase::cpu
