// runtime/cpu/dropout.cpp — apply a Philox dropout mask (see dropout.h). Parallel over Philox
// blocks: block b gives the 4 words of elements 4b..4b+3, whichever thread computes it.
#include "runtime/cpu/dropout.h"

#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale) {
  const int64_t blocks = (n + 3) / 4;
  parallel_for(0, blocks, kGrainElems / 4, [&](int64_t lo, int64_t hi) {
    for (int64_t b = lo; b < hi; ++b) {
      const std::array<uint32_t, 4> w = philox4x32(offset + static_cast<uint64_t>(b), seed);
      for (int64_t i = b * 4, lane = 0; lane < 4 && i < n; ++i, ++lane)
        out[i] = dropout_keep(w[lane], threshold) ? inp[i] * scale : T(0);  // select, not ×mask:
    }                                                                       // p = 1 has scale 0
  });
}

template void dropout_forward<float>(float*, const float*, int64_t, uint64_t, uint64_t, uint32_t,
                                     float);
template void dropout_forward<double>(double*, const double*, int64_t, uint64_t, uint64_t, uint32_t,
                                      double);

}  // namespace mase::cpu
