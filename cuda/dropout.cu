// cuda/dropout.cu — apply a Philox dropout mask on the GPU (twin of runtime/cpu/dropout.cpp).
// One thread per Philox block of 4 elements; philox4x32 and dropout_keep are the very
// functions the CPU runs (runtime/philox.h, runtime/kernels/dropout.h), compiled for the device.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/dropout.h"

namespace mase::cuda {
namespace {

__global__ void dropout_kernel(float* out, const float* inp, int64_t n, uint64_t seed,
                               uint64_t offset, uint32_t threshold, float scale,
                               const uint64_t* offset_base) {
  int64_t b = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  if (b * 4 >= n) return;
  if (offset_base) offset += *offset_base;  // a captured step (runtime/random.h)
  const std::array<uint32_t, 4> w = philox4x32(offset + static_cast<uint64_t>(b), seed);
  for (int64_t i = b * 4, lane = 0; lane < 4 && i < n; ++i, ++lane)
    out[i] = dropout_keep(w[lane], threshold) ? inp[i] * scale : 0.f;
}

}  // namespace

void dropout_forward(float* out, const float* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, float scale, const uint64_t* offset_base) {
  if (n == 0) return;
  const int64_t blocks = (n + 3) / 4;
  dropout_kernel<<<(blocks + 255) / 256, 256, 0, stream()>>>(out, inp, n, seed, offset, threshold, scale,
                                                              offset_base);
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace mase::cuda
