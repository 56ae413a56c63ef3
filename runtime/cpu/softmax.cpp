// runtime/cpu/softmax.cpp — row-wise softmax / log_softmax kernels (see softmax.h).
//
// Forward: one pass over the row with an online max and sum, then one pass that writes.
//
//   pass 1, chunk by chunk (kChunk elements):   m_c = max(m, max(chunk))
//           s ← s·exp(m − m_c) + Σ_chunk exp(x − m_c)      (the online update: Milakov &
//           e_chunk = exp(x − m_c) kept, and m_c noted       Gimelshein 2018, per chunk)
//   pass 2, softmax:      y_chunk = e_chunk · exp(m_c − m) / s       (m, s: the row's final)
//           log_softmax:  y = x − m − log s
//
// Memory traffic (Lab 4). The naive composition max, x − m, exp, Σ, ÷ (softmax_reference)
// reads the (M, N) input ~5 times and writes ~3 (M·N floats each), and each write to memory
// also costs a read (the cache line is fetched before it is overwritten). Here x is read from
// memory once and y written once: pass 1 reads x and keeps the exps in a per-thread row buffer
// (L1/L2: a BERT row is 1 KB, a 4096-wide row 16 KB), pass 2 writes y — for big outputs with
// non-temporal stores, which skip the fetch of y's old lines. To DRAM the kernel looks like a
// copy: M·N read, M·N written.
// The online update is what lets pass 1 produce the exps before the row max is known: each
// chunk uses the max so far, and pass 2 rescales it by one multiply (no second exp). Updating
// per chunk rather than per element costs one scalar exp when the max rises, instead of two
// exps per element (s·exp(m − m') + exp(x − m') element by element).
//
// exp is exp_f32_flush (fast_math.h: results below ~1.6e-38 become 0), 8 lanes per AVX2
// instruction. Even so a core takes about as long for the exps as a memcpy of the same bytes,
// so the kernel stays compute-bound, at ~0.6 of memcpy (docs/performance.md, "Kernels: fused
// against the composition they replace"). Rows are spread over threads, one row never split,
// and each row is summed in a fixed order, so results do not depend on the thread count.
// Chunk sums are in T (≤ kChunk terms, each ≤ 1), the row sum in double.
// Backward reads y and dy from memory once each (its second sweep finds the row in cache) and
// writes dx once, the sums in double (rowwise.h).
#include "runtime/kernels/softmax.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <vector>

#ifdef __AVX__
#include <immintrin.h>
#endif

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Elements per online-update step: long enough that the per-chunk work (a max, one scalar
// exp when the max rises, a note of the shift) is amortised, short enough that the chunk is
// still in L1 when its exps are taken right after its max.
constexpr int64_t kChunk = 256;

// Outputs at least this big are written with non-temporal stores (scale_store): 4× the L2
// of this machine's 2 cores, so the output could not be read back from L2 anyway, and its
// writes no longer evict the input that pass 1 is about to read. Smaller outputs (one
// attention head, a classifier's logits) stay in cache for the op that reads them next.
constexpr int64_t kStreamBytes = int64_t{16} << 20;

// y[i] = a[i]·f for i < n; stream: with non-temporal stores (f32 and AVX only), which write
// whole cache lines straight to memory — no read-for-ownership of y's old contents, and no
// caches filled with lines that will be evicted before anyone reads them.
template <class T>
void scale_store(T* y, const T* a, T f, int64_t n, bool stream) {
  int64_t i = 0;
#ifdef __AVX__
  if constexpr (std::is_same_v<T, float>) {
    if (stream) {
      for (; i < n && (reinterpret_cast<uintptr_t>(y + i) & 31) != 0; ++i) y[i] = a[i] * f;
      const __m256 vf = _mm256_set1_ps(f);
      for (; i + 8 <= n; i += 8) _mm256_stream_ps(y + i, _mm256_mul_ps(_mm256_loadu_ps(a + i), vf));
    }
  }
#endif
  for (; i < n; ++i) y[i] = a[i] * f;
}

// Asks for the lines kAhead floats past p (one chunk's worth, a line at a time), unless past
// end. Reading a row, the hardware prefetcher stops at every 4 KB page and starts again only
// after a few misses on the next; asked explicitly, the next lines arrive while this chunk's
// exps are computed (kAhead: 4 chunks = 4 KB ahead, enough to cover a DRAM round trip).
template <class T>
inline void prefetch_ahead(const T* p, const T* end) {
  constexpr int64_t kAhead = 4 * kChunk, kLine = 64 / sizeof(T);
  for (int64_t i = 0; i < kChunk && p + kAhead + i < end; i += kLine)
    __builtin_prefetch(p + kAhead + i);
}

// softmax (Log = false) or log_softmax (Log = true) of every row.
template <bool Log, class T>
void forward_rows(T* out, const T* inp, int64_t rows, int64_t cols) {
  const int64_t chunks = (cols + kChunk - 1) / kChunk;
  const bool stream = rows * cols * int64_t(sizeof(T)) >= kStreamBytes;
  parallel_for(0, rows, rows_grain(cols, kGrainElems), [&](int64_t r_lo, int64_t r_hi) {
    thread_local std::vector<T> shift, exps;  // per chunk: the max its exps were taken against
    shift.resize(static_cast<size_t>(chunks));
    exps.resize(static_cast<size_t>(cols));
    T* e = exps.data();
    for (int64_t r = r_lo; r < r_hi; ++r) {
      const T* x = inp + r * cols;
      T* y = out + r * cols;
      T m = kNegInf<T>;
      double s = 0;
      for (int64_t c = 0; c < chunks; ++c) {  // pass 1: online max and sum, exps kept
        const int64_t lo = c * kChunk, n = std::min(kChunk, cols - lo);
        prefetch_ahead(x + lo, inp + rows * cols);
        const T mc = std::max(m, row_max(x + lo, n));
        if (mc > m) {  // the max rose: rescale the sum so far to the new max
          s *= std::exp(double(m) - double(mc));  // m = −inf the first time: s = 0 anyway
          m = mc;
        }
        shift[c] = m == kNegInf<T> ? T(0) : m;  // an all −inf prefix: exp(−inf − 0) = 0
        s += double(exp_shift_sum(e + lo, x + lo, shift[c], n));
      }
      if (m == kNegInf<T>) {  // fully masked row: softmax 0s, log_softmax log 0 = −inf; not NaN
        std::fill(y, y + cols, Log ? kNegInf<T> : T(0));
        continue;
      }
      if constexpr (Log) {  // y = (x − m) − log s; (x − m) first: exact when x is close to m
        const T log_s = static_cast<T>(std::log(s));
        for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) - log_s;
      } else {  // y = exp(x − shift_c) · exp(shift_c − m) / s
        for (int64_t c = 0; c < chunks; ++c) {
          const int64_t lo = c * kChunk, n = std::min(kChunk, cols - lo);
          scale_store(y + lo, e + lo, static_cast<T>(std::exp(double(shift[c]) - double(m)) / s),
                      n, stream);
        }
      }
    }
#ifdef __AVX__
    if (stream) _mm_sfence();  // the streamed lines are visible before the task completes
#endif
  });
}

}  // namespace

template <class T>
void softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  forward_rows<false>(out, inp, rows, cols);
}

template <class T>
void log_softmax_forward(T* out, const T* inp, int64_t rows, int64_t cols) {
  forward_rows<true>(out, inp, rows, cols);
}

template <class T>
void softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T *dy = dout + r * cols, *y = out + r * cols;
    T* dx = dinp + r * cols;
    // dx = y · (dy − Σ dy·y)
    const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]) * y[c]; }));
    for (int64_t c = 0; c < cols; ++c) dx[c] = y[c] * (dy[c] - s);
  });
}

template <class T>
void log_softmax_backward(T* dinp, const T* dout, const T* out, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T *dy = dout + r * cols, *y = out + r * cols;
    T* dx = dinp + r * cols;
    // dx = dy − exp(y) · Σ dy
    const T s = static_cast<T>(row_sum(cols, [&](int64_t c) { return double(dy[c]); }));
    for (int64_t c = 0; c < cols; ++c) dx[c] = dy[c] - exp_of(y[c]) * s;
  });
}

template void softmax_forward<float>(float*, const float*, int64_t, int64_t);
template void softmax_forward<double>(double*, const double*, int64_t, int64_t);
template void softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t);
template void log_softmax_forward<float>(float*, const float*, int64_t, int64_t);
template void log_softmax_forward<double>(double*, const double*, int64_t, int64_t);
template void log_softmax_backward<float>(float*, const float*, const float*, int64_t, int64_t);
template void log_softmax_backward<double>(double*, const double*, const double*, int64_t, int64_t);

}  // namespace mase::cpu
