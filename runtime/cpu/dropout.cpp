// runtime/cpu/dropout.cpp — apply a Philox dropout mask (see dropout.h). Parallel over groups
// of 32 Philox blocks: block b gives the 4 words of elements 4b..4b+3, whichever thread
// computes it, drawn 32 blocks at a time (philox4x32_x32).
#include "runtime/cpu/philox_x32.h"

#include <algorithm>

#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale) {
  const int64_t groups = (n + 127) / 128;  // 32 Philox blocks = 128 elements at a time
  parallel_for(0, groups, kGrainElems / 128, [&](int64_t lo, int64_t hi) {
    uint32_t w[128];
    for (int64_t g = lo; g < hi; ++g) {
      philox4x32_x32(w, offset + static_cast<uint64_t>(g) * 32, seed);  // 128 words from 128g
      const int64_t i0 = g * 128, len = std::min<int64_t>(128, n - i0);
      for (int64_t k = 0; k < len; ++k)  // a select, not ×mask: p = 1 has scale 0
        out[i0 + k] = dropout_keep(w[k], threshold) ? inp[i0 + k] * scale : T(0);
    }
  });
}

template void dropout_forward<float>(float*, const float*, int64_t, uint64_t, uint64_t, uint32_t,
                                     float);
template void dropout_forward<double>(double*, const double*, int64_t, uint64_t, uint64_t, uint32_t,
                                      double);

}  // namespace mase::cpu
