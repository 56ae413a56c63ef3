// runtime/kernels/dropout.h — the dropout mask drawn from Philox, and the kernel that applies it.
// The op and its math are in autograd/ops/dropout.cpp.
//
// The contract of the dropout kernels: both backends' signatures side by side, implemented by
// runtime/cpu/dropout.cpp (mase::cpu) and cuda/dropout.cu (mase::cuda, float only). The CPU
// backend's vectorised Philox (128 words at a time) is its own business: runtime/cpu/philox_x32.h.
#pragma once
#include <cmath>
#include <cstdint>

#include "runtime/kernels/backend.h"
#include "runtime/philox.h"

namespace mase {

// Element i is kept iff uint_to_unit(word i) >= p. uint_to_unit(w) = (w >> 8) / 2^24 exactly,
// so the test is done on the integers: (w >> 8) >= ceil(p · 2^24). Both devices compare the
// same integers (no float rounding of p can make them disagree); p = 1 gives 2^24: none kept.
inline uint32_t dropout_threshold(double p) {
  return static_cast<uint32_t>(std::ceil(p * 16777216.0));
}
MASE_HOST_DEVICE inline bool dropout_keep(uint32_t word, uint32_t threshold) {
  return (word >> 8) >= threshold;
}

// A dropout mask as the fused kernels take it: element i of a packed tensor is kept iff
// dropout_keep(word i of the Philox stream (seed, offset), threshold), and a kept value is
// multiplied by `scale` = 1/(1 − p) (in double: an f64 kernel rounds it to double, an f32
// one to float, as dropout() does). on = false: no dropout (keep all, scale 1).
struct DropoutMask {
  bool on = false;
  uint64_t seed = 0, offset = 0;
  uint32_t threshold = 0;
  double scale = 1.0;
  // GPU only: a device address whose value is added to `offset` (Generator::
  // device_offset_base, runtime/random.h: a captured step's masks move on with each replay).
  const uint64_t* offset_base = nullptr;
  RowMap rows;  // row r of the kernel draws row rows(r) of the stream (runtime/philox.h)
};

// The Philox offset a kernel uses: offset, plus *offset_base where one is given (on the GPU).
MASE_HOST_DEVICE inline uint64_t dropout_offset(const DropoutMask& m) {
  return m.offset + (m.offset_base ? *m.offset_base : 0);
}

}  // namespace mase

namespace mase::cpu {

// out[i] = keep(i) ? inp[i] · scale : 0 over n packed elements, where keep(i) tests word i of
// the Philox stream (seed, offset) against `threshold`. The backward of dropout is this same
// kernel applied to dout with the same (seed, offset): the mask is regenerated, never stored.
template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale);

}  // namespace mase::cpu

// ---- the CUDA twin: cuda/dropout.cu ----
namespace mase::cuda {

// The CUDA twin takes one more argument: offset_base, added to offset on the device when not
// null (DropoutMask::offset_base above).
MASE_CUDA_FN(void, dropout_forward, (float* out, const float* inp, int64_t n, uint64_t seed,
                                     uint64_t offset, uint32_t threshold, float scale,
                                     const uint64_t* offset_base))

}  // namespace mase::cuda
