// cuda/copy.h — twin of runtime/cpu/copy.h: strided copy and fill on the GPU.
#pragma once
#include <cstddef>
#include <cstdint>

#include "cuda/cuda.h"
#include "runtime/dtype.h"
#include "runtime/shape.h"

namespace mase::cuda {

MASE_CUDA_FN(void, copy_strided, (void* dst, const Strides& dst_strides, const void* src,
                                  const Strides& src_strides, const Shape& shape,
                                  size_t itemsize, int device))
MASE_CUDA_FN(void, fill, (void* dst, DType dtype, double value, int64_t n, int device))

}  // namespace mase::cuda
