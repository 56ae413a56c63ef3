// cuda/copy.cu — strided copy, fill, dtype conversion and iota on the GPU (twin of
// runtime/cpu/copy.cpp).
// One thread per element; the N-d index is unravelled from the flat index, as in
// runtime/cpu/strided.h but without dimension merging (copies are rare on the GPU path).
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/copy.h"

namespace mase::cuda {
namespace {

constexpr int kMaxDims = 8;
struct Geometry {
  int ndim;
  int64_t shape[kMaxDims], dst_strides[kMaxDims], src_strides[kMaxDims];
};

template <class T>
__global__ void copy_strided_kernel(T* dst, const T* src, Geometry g, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t od = 0, os = 0, rest = i;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t k = rest % g.shape[d];
    rest /= g.shape[d];
    od += k * g.dst_strides[d];
    os += k * g.src_strides[d];
  }
  dst[od] = src[os];
}

template <class T>
__global__ void fill_kernel(T* dst, T value, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = value;
}

int blocks_for(int64_t n, int threads) { return static_cast<int>((n + threads - 1) / threads); }

// Calls f(T{}) with T the C++ type of `dtype`.
template <class F>
void with_type(DType dtype, F&& f) {
  switch (dtype) {
    case DType::f32: f(float{}); break;
    case DType::f64: f(double{}); break;
    case DType::i32: f(int32_t{}); break;
    case DType::i8: f(int8_t{}); break;
    case DType::u8: f(uint8_t{}); break;
  }
}

}  // namespace

void copy_strided(void* dst, const Strides& dst_strides, const void* src,
                  const Strides& src_strides, const Shape& shape, size_t itemsize, int device) {
  MASE_CHECK(shape.size() <= kMaxDims, ShapeError, "[copy] at most 8 dims, got ", shape.size());
  use_device(device);
  Geometry g{static_cast<int>(shape.size()), {}, {}, {}};
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[d] = shape[d];
    g.dst_strides[d] = dst_strides[d];
    g.src_strides[d] = src_strides[d];
    n *= shape[d];
  }
  if (n == 0) return;
  const int threads = 256;
  switch (itemsize) {
    case 1: copy_strided_kernel<<<blocks_for(n, threads), threads, 0, stream()>>>(
                static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), g, n); break;
    case 4: copy_strided_kernel<<<blocks_for(n, threads), threads, 0, stream()>>>(
                static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), g, n); break;
    case 8: copy_strided_kernel<<<blocks_for(n, threads), threads, 0, stream()>>>(
                static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), g, n); break;
    default: throw Error(cat("[copy] unsupported item size ", itemsize));
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

void fill(void* dst, DType dtype, double value, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  const int threads = 256, blocks = blocks_for(n, threads);
  with_type(dtype, [&](auto t) {
    using T = decltype(t);
    // the value converted on the host by the CPU's rule (copy.h): the same bits on both
    fill_kernel<<<blocks, threads, 0, stream()>>>(static_cast<T*>(dst), convert_value<T>(value), n);
  });
  MASE_CUDA_CHECK(cudaGetLastError());
}

namespace {

template <class To, class From>
__global__ void convert_kernel(To* dst, const From* src, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = convert_value<To>(src[i]);  // the CPU's rule (copy.h)
}

template <class T>
__global__ void iota_kernel(T* dst, int64_t n) {
  const int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) dst[i] = static_cast<T>(i);
}

}  // namespace

void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  const int threads = 256, blocks = blocks_for(n, threads);
  with_type(dst_dtype, [&](auto to) {
    with_type(src_dtype, [&](auto from) {
      using To = decltype(to);
      using From = decltype(from);
      convert_kernel<<<blocks, threads, 0, stream()>>>(static_cast<To*>(dst),
                                                       static_cast<const From*>(src), n);
    });
  });
  MASE_CUDA_CHECK(cudaGetLastError());
}

void iota(void* dst, DType dtype, int64_t n, int device) {
  if (n == 0) return;
  use_device(device);
  const int threads = 256, blocks = blocks_for(n, threads);
  with_type(dtype, [&](auto t) {
    using T = decltype(t);
    iota_kernel<<<blocks, threads, 0, stream()>>>(static_cast<T*>(dst), n);
  });
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
