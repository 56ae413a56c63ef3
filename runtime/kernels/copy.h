// runtime/kernels/copy.h — strided copies, dtype conversion, fills.
//
// The contract of the copy kernels: both backends' signatures side by side, implemented by
// runtime/cpu/copy.cpp (mase::cpu) and cuda/copy.cu (mase::cuda), for every dtype: raw bytes
// of `itemsize`, or a DType argument (a build without CUDA gets stubs that throw, backend.h).
//
// The value of a dtype conversion (convert, and fill's double into the tensor's dtype), the same
// on both backends — convert_value below, which both call:
//   * floating -> integer: truncate toward zero, then SATURATE to the dtype's range; NaN -> 0.
//     300.0 -> i8 is 127, -1e20 -> i32 is -2147483648, +inf -> u8 is 255, -0.5 -> u8 is 0,
//     127.9 -> i8 is 127. (A plain C++ cast of a value outside the range is undefined
//     behaviour; x86 gives 44 for 300 -> i8 and INT_MIN for NaN -> i32. NumPy and PyTorch
//     leave these cases undefined; saturation is what PTX's cvt to an integer and Rust's `as`
//     do.)
//   * integer -> integer: modulo 2^bits (i32 300 -> i8 is 44, u8 200 -> i8 is -56: the same
//     bits), as NumPy and PyTorch do and as C++20 defines it.
//   * -> floating: the nearest value (f64 beyond f32's range -> ±inf; NaN stays NaN).
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <type_traits>

#include "runtime/dtype.h"
#include "runtime/kernels/backend.h"
#include "runtime/philox.h"  // MASE_HOST_DEVICE
#include "runtime/shape.h"

namespace mase {

// (To)x by the rule above; no undefined behaviour for any x.
template <class To, class From>
MASE_HOST_DEVICE constexpr To convert_value(From x) {
  if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>) {
    // The range's ends as From, both exact: min is 0 or -2^k, max + 1 is 2^k. Strictly
    // between them truncation gives min..max; x <= lo saturates to min (which truncation
    // also gives on (lo - 1, lo]), x >= hi to max.
    static_assert(sizeof(To) < 8, "max + 1 must fit in uint64_t");
    constexpr From lo = static_cast<From>(std::numeric_limits<To>::min());
    constexpr From hi = static_cast<From>(uint64_t(std::numeric_limits<To>::max()) + 1);
    if (x != x) return To(0);  // NaN
    if (x <= lo) return std::numeric_limits<To>::min();
    if (x >= hi) return std::numeric_limits<To>::max();
    return static_cast<To>(x);
  } else {
    return static_cast<To>(x);
  }
}

}  // namespace mase

namespace mase::cpu {

// dst[i...] = src[i...] over `shape`, each side with its own strides (elements); both of
// the same dtype, `itemsize` bytes per element. Parallel over rows.
void copy_strided(void* dst, const Strides& dst_strides, const void* src,
                  const Strides& src_strides, const Shape& shape, size_t itemsize);

// dst[i] = convert_value<To>(src[i]) for n contiguous elements, e.g. f32 -> f64 for gradient
// checks (the rule at the top of this file).
void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n);

// dst[i] = value for n contiguous elements of `dtype`, converted by the rule at the top of this
// file (fill(i8, 300.0) stores 127, fill(i32, NaN) stores 0).
void fill(void* dst, DType dtype, double value, int64_t n);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/copy.cu ----
namespace mase::cuda {

MASE_CUDA_FN(void, copy_strided, (void* dst, const Strides& dst_strides, const void* src,
                                  const Strides& src_strides, const Shape& shape,
                                  size_t itemsize, int device))
// The twins of cpu::fill and cpu::convert: the same values (convert_value), bit for bit.
MASE_CUDA_FN(void, fill, (void* dst, DType dtype, double value, int64_t n, int device))
// The twin of cpu::convert, on the device: no round trip through the host (a host sync).
MASE_CUDA_FN(void, convert, (void* dst, DType dst_dtype, const void* src, DType src_dtype,
                             int64_t n, int device))
// dst[i] = i for n contiguous elements of `dtype` (arange_like on the GPU; the CPU's is a
// plain std::iota in the op).
MASE_CUDA_FN(void, iota, (void* dst, DType dtype, int64_t n, int device))

}  // namespace mase::cuda
