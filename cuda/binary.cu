// cuda/binary.cu — broadcasting elementwise ops on the GPU (twin of runtime/cpu/binary.cpp).
// One thread per output element; operands are read through (possibly zero) strides.
#include "runtime/kernels/binary.h"
#include "cuda/check.h"
#include "cuda/stream.h"

namespace mase::cuda {
namespace {

constexpr int kMaxDims = 8;
struct Geometry {
  int ndim;
  int64_t shape[kMaxDims], a_strides[kMaxDims], b_strides[kMaxDims];
};

__device__ float apply(BinaryOp op, float x, float y) {
  switch (op) {
    case BinaryOp::add: return x + y;
    case BinaryOp::sub: return x - y;
    case BinaryOp::mul: return x * y;
    default: return x / y;
  }
}

__global__ void binary_kernel(BinaryOp op, float* out, const float* a, const float* b, Geometry g,
                              int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t oa = 0, ob = 0, rest = i;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t k = rest % g.shape[d];
    rest /= g.shape[d];
    oa += k * g.a_strides[d];
    ob += k * g.b_strides[d];
  }
  out[i] = apply(op, a[oa], b[ob]);
}

__global__ void binary_scalar_kernel(BinaryOp op, float* out, const float* a, float s,
                                     bool scalar_first, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = scalar_first ? apply(op, s, a[i]) : apply(op, a[i], s);
}

}  // namespace

void binary_forward(BinaryOp op, float* out, const float* a, const Strides& as, const float* b,
                    const Strides& bs, const Shape& shape) {
  MASE_CHECK(shape.size() <= kMaxDims, ShapeError, "[binary] at most 8 dims, got ", shape.size());
  Geometry g{static_cast<int>(shape.size()), {}, {}, {}};
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[d] = shape[d];
    g.a_strides[d] = as[d];
    g.b_strides[d] = bs[d];
    n *= shape[d];
  }
  if (n == 0) return;
  binary_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(op, out, a, b, g, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

void binary_scalar_forward(BinaryOp op, float* out, const float* a, float s, bool scalar_first,
                           int64_t n) {
  if (n == 0) return;
  binary_scalar_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(op, out, a, s, scalar_first, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
