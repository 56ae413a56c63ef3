// runtime/cpu/embedding.cpp — row gather / scatter-add (see embedding.h).
//
// Forward is parallel over rows: each output row is written by one task. Backward cannot be
// parallel over rows — two rows with the same id would race on one dweight row — so it is
// parallel over blocks of columns instead: a task owns columns [c0, c1) of every dweight row
// and walks all N ids in order. No atomics, and the sums come out bit-identical on 1 or 64
// threads (a sort-by-id would also work; this is simpler and reads dout row-contiguously).
#include "runtime/kernels/embedding.h"

#include <algorithm>
#include <cstring>

#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void embedding_forward(T* out, const int32_t* ids, const T* weight, int64_t N, int64_t C) {
  parallel_for(0, N, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(1, C)),
               [&](int64_t lo, int64_t hi) {
                 for (int64_t n = lo; n < hi; ++n)
                   std::memcpy(out + n * C, weight + int64_t{ids[n]} * C, C * sizeof(T));
               });
}

template <class T>
void embedding_backward(T* dweight, const T* dout, const int32_t* ids, int64_t N, int64_t C) {
  // a task's work is N·(c1 - c0) adds: size column blocks to ~kGrainElems of it, at least
  // 16 columns (one 64-byte cache line of floats) so tasks do not share lines of dweight
  const int64_t grain = std::max<int64_t>(16, kGrainElems / std::max<int64_t>(1, N));
  parallel_for(0, C, grain, [&](int64_t c0, int64_t c1) {
    for (int64_t n = 0; n < N; ++n) {
      T* __restrict dst = dweight + int64_t{ids[n]} * C;
      const T* src = dout + n * C;
      for (int64_t c = c0; c < c1; ++c) dst[c] += src[c];
    }
  });
}

template void embedding_forward<float>(float*, const int32_t*, const float*, int64_t, int64_t);
template void embedding_forward<double>(double*, const int32_t*, const double*, int64_t, int64_t);
template void embedding_backward<float>(float*, const float*, const int32_t*, int64_t, int64_t);
template void embedding_backward<double>(double*, const double*, const int32_t*, int64_t, int64_t);

}  // namespace mase::cpu
