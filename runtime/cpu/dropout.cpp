// runtime/cpu/dropout.cpp — apply a Philox dropout mask (see dropout.h). Parallel over groups
// of kPhiloxBatch Philox blocks (block b gives the 4 words of elements 4b..4b+3, whichever
// thread computes it), each group's words drawn together by philox4x32_batch.
#include "runtime/cpu/dropout.h"

#include <algorithm>

#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void dropout_forward(T* out, const T* inp, int64_t n, uint64_t seed, uint64_t offset,
                     uint32_t threshold, T scale) {
  constexpr int64_t kGroup = 4 * kPhiloxBatch;  // elements per batch of blocks
  const int64_t groups = (n + kGroup - 1) / kGroup;
  parallel_for(0, groups, kGrainElems / kGroup, [&](int64_t lo, int64_t hi) {
    uint32_t words[kGroup];
    for (int64_t g = lo; g < hi; ++g) {
      philox4x32_batch(words, offset + static_cast<uint64_t>(g * kPhiloxBatch), seed);
      const int64_t i0 = g * kGroup, m = std::min(kGroup, n - i0);
      for (int64_t k = 0; k < m; ++k)  // a select, not ×mask: p = 1 has scale 0
        out[i0 + k] = dropout_keep(words[k], threshold) ? inp[i0 + k] * scale : T(0);
    }
  });
}

template void dropout_forward<float>(float*, const float*, int64_t, uint64_t, uint64_t, uint32_t,
                                     float);
template void dropout_forward<double>(double*, const double*, int64_t, uint64_t, uint64_t, uint32_t,
                                      double);

}  // namespace mase::cpu
