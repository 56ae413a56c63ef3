// runtime/cpu/strided.h — walking N tensors of one shape with different strides.
//
// Copies, broadcasting binary ops and the like all loop over a shape while each operand
// advances by its own strides (0 on a broadcast dim). StridedLoop first merges dims that are
// contiguous in every operand — a (32, 128, 768) contiguous add becomes one dim of 3.1M —
// so the inner loop is as long as possible, then splits the work into "rows": all dims but
// the last. Kernels run a tight inner loop over the last dim, in parallel over pieces of rows
// (parallel_pieces).
#pragma once
#include <algorithm>
#include <array>
#include <cstdint>

#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/shape.h"

namespace mase::cpu {

constexpr int kMaxDims = 8;

template <int N>  // N operands (e.g. out, a, b)
struct StridedLoop {
  int ndim = 0;
  std::array<int64_t, kMaxDims> shape{};
  std::array<std::array<int64_t, kMaxDims>, N> strides{};

  StridedLoop(const Shape& s, const std::array<const Strides*, N>& st) {
    MASE_CHECK(s.size() <= kMaxDims, ShapeError, "[strided] at most ", kMaxDims,
               " dims supported, got ", s);
    // drop size-1 dims, then merge dim i into i+1 when every operand is contiguous across them
    for (size_t d = 0; d < s.size(); ++d) {
      if (s[d] == 1) continue;
      bool merge = ndim > 0;
      for (int k = 0; k < N && merge; ++k)
        merge = strides[k][ndim - 1] == (*st[k])[d] * s[d];
      if (merge) {
        shape[ndim - 1] *= s[d];
        for (int k = 0; k < N; ++k) strides[k][ndim - 1] = (*st[k])[d];
      } else {
        shape[ndim] = s[d];
        for (int k = 0; k < N; ++k) strides[k][ndim] = (*st[k])[d];
        ++ndim;
      }
    }
    if (ndim == 0) {  // a scalar: one row of one element
      ndim = 1;
      shape[0] = 1;
      for (int k = 0; k < N; ++k) strides[k][0] = 0;
    }
  }

  int64_t inner() const { return shape[ndim - 1]; }
  int64_t inner_stride(int k) const { return strides[k][ndim - 1]; }
  int64_t rows() const {
    int64_t r = 1;
    for (int d = 0; d < ndim - 1; ++d) r *= shape[d];
    return r;
  }
  // Element offsets of the first element of `row`, for every operand.
  std::array<int64_t, N> row_offsets(int64_t row) const {
    std::array<int64_t, N> off{};
    for (int d = ndim - 2; d >= 0; --d) {
      int64_t i = row % shape[d];
      row /= shape[d];
      for (int k = 0; k < N; ++k) off[k] += i * strides[k][d];
    }
    return off;
  }

  // Runs f(offsets, n) over the whole loop in parallel, in pieces of about `grain` elements:
  // `offsets` are every operand's offset of the piece's first element and n its length
  // along the inner dim (read with inner_stride). Long rows are cut into slices — a packed
  // tensor merges into ONE row, and splitting only rows would leave it to one thread — and
  // short rows are grouped, walked with an odometer instead of row_offsets' divisions
  // (a head-split copy has 98k rows of 64 floats: the divisions would cost more than the copy).
  template <class F>
  void parallel_pieces(int64_t grain, F&& f) const;
};

template <int N>
template <class F>
void StridedLoop<N>::parallel_pieces(int64_t grain, F&& f) const {
  const int64_t n = inner(), nrows = rows();
  if (n >= grain) {
    const int64_t per_row = (n + grain - 1) / grain;
    parallel_for(0, nrows * per_row, 1, [&](int64_t lo, int64_t hi) {
      for (int64_t p = lo; p < hi; ++p) {
        const int64_t begin = (p % per_row) * grain;
        std::array<int64_t, N> off = row_offsets(p / per_row);
        for (int k = 0; k < N; ++k) off[k] += begin * strides[k][ndim - 1];
        f(off, std::min(grain, n - begin));
      }
    });
    return;
  }
  const int64_t rows_per_piece = std::max<int64_t>(1, grain / std::max<int64_t>(1, n));
  parallel_for(0, nrows, rows_per_piece, [&](int64_t lo, int64_t hi) {
    std::array<int64_t, N> off = row_offsets(lo);
    std::array<int64_t, kMaxDims> idx{};  // the row's index in the outer dims
    for (int64_t r = lo, d = ndim - 2; d >= 0; --d) {
      idx[d] = r % shape[d];
      r /= shape[d];
    }
    for (int64_t r = lo; r < hi; ++r) {
      f(off, n);
      // next row: increment the last outer dim, carrying into earlier dims when it wraps
      for (int d = ndim - 2; d >= 0; --d) {
        for (int k = 0; k < N; ++k) off[k] += strides[k][d];
        if (++idx[d] < shape[d]) break;
        for (int k = 0; k < N; ++k) off[k] -= shape[d] * strides[k][d];
        idx[d] = 0;
      }
    }
  });
}

}  // namespace mase::cpu
