// cuda/where.cu — broadcasting select on the GPU (twin of runtime/cpu/where.cpp). One thread
// per output element; the N-d index is unravelled and each operand read through its strides,
// as in cuda/binary.cu.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/where.h"

namespace mase::cuda {
namespace {

constexpr int kMaxDims = 8;
struct Geometry {
  int ndim;
  int64_t shape[kMaxDims], c_strides[kMaxDims], a_strides[kMaxDims], b_strides[kMaxDims];
};

__global__ void where_kernel(float* out, const uint8_t* cond, const float* a, const float* b,
                             Geometry g, int64_t n) {
  int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (i >= n) return;
  int64_t oc = 0, oa = 0, ob = 0, rest = i;
  for (int d = g.ndim - 1; d >= 0; --d) {
    int64_t k = rest % g.shape[d];
    rest /= g.shape[d];
    oc += k * g.c_strides[d];
    oa += k * g.a_strides[d];
    ob += k * g.b_strides[d];
  }
  out[i] = cond[oc] ? a[oa] : b[ob];
}

}  // namespace

void where_forward(float* out, const uint8_t* cond, const Strides& cs, const float* a,
                   const Strides& as, const float* b, const Strides& bs, const Shape& shape) {
  MASE_CHECK(shape.size() <= kMaxDims, ShapeError, "[where] at most 8 dims, got ", shape.size());
  Geometry g{static_cast<int>(shape.size()), {}, {}, {}, {}};
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    g.shape[d] = shape[d];
    g.c_strides[d] = cs[d];
    g.a_strides[d] = as[d];
    g.b_strides[d] = bs[d];
    n *= shape[d];
  }
  if (n == 0) return;
  where_kernel<<<(n + 255) / 256, 256, 0, stream()>>>(out, cond, a, b, g, n);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
