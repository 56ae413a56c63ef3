// runtime/cpu/softmax.cpp — row-wise softmax / log_softmax kernels (see softmax.h).
//
// Forward: one pass over the row with an online max and sum, then one pass that writes.
//
//   pass 1, chunk by chunk (kChunk elements):   m_c = max(m, max(chunk))
//           s ← s·exp(m − m_c) + Σ_chunk exp(x − m_c)      (the online update: Milakov &
//           y_chunk = exp(x − m_c), and m_c is noted         Gimelshein 2018, per chunk)
//   pass 2, softmax:      y_chunk ← y_chunk · exp(m_c − m) / s       (m, s: the row's final)
//           log_softmax:  y ← x − m − log s
//
// Memory traffic (Lab 4). The naive composition max, x − m, exp, Σ, ÷ reads the (M, N) input
// ~5 times and writes ~3 (M·N each); mase's softmax_reference (exp, Σ, ÷) reads 3 and writes
// 2. Here the input is read from memory once and the output written once: pass 1 reads x and
// writes y, pass 2 re-reads and rewrites y while it is still in L1/L2 (a BERT row is 1 KB, a
// 4096-wide row 16 KB), so to DRAM the kernel looks like a copy — reads M·N, writes M·N.
// The online update is what lets pass 1 produce the exps before the row max is known: each
// chunk uses the max so far, and pass 2 rescales it by one multiply (no second exp). Updating
// per chunk rather than per element costs one scalar exp when the max rises, instead of two
// exps per element (s·exp(m − m') + exp(x − m') element by element).
//
// exp is exp_f32 (fast_math.h), 8 lanes per AVX2 instruction; without it (scalar libm) the
// kernel was compute-bound at ~0.2 of memcpy. Rows are spread over threads by for_each_row,
// one row never split, and each row is summed in a fixed order, so results do not depend on
// the thread count. Chunk sums are in T (≤ kChunk terms, each ≤ 1), the row sum in double.
// Backward reads y and dy once each and writes dx once, the sums in double (rowwise.h).
#include "runtime/cpu/softmax.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

template <class T>
constexpr T kNegInf = -std::numeric_limits<T>::infinity();

// Elements per online-update step: long enough that the per-chunk work (a max, one scalar
// exp when the max rises, a note of the shift) is amortised, short enough that the chunk is
// still in L1 when its exps are taken right after its max.
constexpr int64_t kChunk = 256;

// softmax (Log = false) or log_softmax (Log = true) of every row.
template <bool Log, class T>
void forward_rows(T* out, const T* inp, int64_t rows, int64_t cols) {
  const int64_t chunks = (cols + kChunk - 1) / kChunk;
  for_each_row(rows, cols, [&](int64_t r) {
    const T* x = inp + r * cols;
    T* y = out + r * cols;
    thread_local std::vector<T> shift;  // the max each chunk's exps were taken against
    shift.resize(static_cast<size_t>(chunks));
    T m = kNegInf<T>;
    double s = 0;
    for (int64_t c = 0; c < chunks; ++c) {  // pass 1: online max and sum, y = exps
      const int64_t lo = c * kChunk, n = std::min(kChunk, cols - lo);
      const T mc = std::max(m, row_max(x + lo, n));
      if (mc > m) {  // the max rose: rescale the sum so far to the new max
        s *= std::exp(double(m) - double(mc));  // m = −inf the first time: s = 0 anyway
        m = mc;
      }
      shift[c] = m == kNegInf<T> ? T(0) : m;  // an all −inf prefix: exp(−inf − 0) = 0
      s += double(exp_shift_sum(y + lo, x + lo, shift[c], n));
    }
    if (m == kNegInf<T>) {  // fully masked row: softmax 0s, log_softmax log 0 = −inf; not NaN
      std::fill(y, y + cols, Log ? kNegInf<T> : T(0));
      return;
    }
    if constexpr (Log) {  // y = (x − m) − log s; (x − m) first: exact when x is close to m
      const T log_s = static_cast<T>(std::log(s));
      for (int64_t c = 0; c < cols; ++c) y[c] = (x[c] - m) - log_s;
    } else {  // y = exp(x − shift_c) · exp(shift_c − m) / s
      for (int64_t c = 0; c < chunks; ++c) {
        const int64_t lo = c * kChunk, hi = std::min(cols, lo + kChunk);
        const T f = static_cast<T>(std::exp(double(shift[c]) - double(m)) / s);
        for (int64_t i = lo; i < hi; ++i) y[i] *= f;
      }
    }
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
