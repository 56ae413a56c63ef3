// runtime/kernels/copy.h — strided copies, dtype conversion, fills.
//
// The contract of the copy kernels: both backends' signatures side by side, implemented by
// runtime/cpu/copy.cpp (mase::cpu) and cuda/copy.cu (mase::cuda), for every dtype: raw bytes
// of `itemsize`, or a DType argument (a build without CUDA gets stubs that throw, backend.h).
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/dtype.h"
#include "runtime/kernels/backend.h"
#include "runtime/shape.h"

namespace mase::cpu {

// dst[i...] = src[i...] over `shape`, each side with its own strides (elements); both of
// the same dtype, `itemsize` bytes per element. Parallel over rows.
void copy_strided(void* dst, const Strides& dst_strides, const void* src,
                  const Strides& src_strides, const Shape& shape, size_t itemsize);

// dst[i] = (To)src[i] for n contiguous elements, e.g. f32 -> f64 for gradient checks.
void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n);

// dst[i] = value for n contiguous elements of `dtype`.
void fill(void* dst, DType dtype, double value, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/copy.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, copy_strided, (void* dst, const Strides& dst_strides, const void* src,
                                  const Strides& src_strides, const Shape& shape,
                                  size_t itemsize, int device))
MASE_CUDA_FN(void, fill, (void* dst, DType dtype, double value, int64_t n, int device))
// The twin of cpu::convert, on the device: no round trip through the host (a host sync).
MASE_CUDA_FN(void, convert, (void* dst, DType dst_dtype, const void* src, DType src_dtype,
                             int64_t n, int device))
// dst[i] = i for n contiguous elements of `dtype` (arange_like on the GPU; the CPU's is a
// plain std::iota in the op).
MASE_CUDA_FN(void, iota, (void* dst, DType dtype, int64_t n, int device))

}  // namespace mase::cuda
