// runtime/cpu/strided.h — walking N tensors of one shape with different strides.
//
// Copies, broadcasting binary ops and the like all loop over a shape while each operand
// advances by its own strides (0 on a broadcast dim). StridedLoop first merges dims that are
// contiguous in every operand — a (32, 128, 768) contiguous add becomes one dim of 3.1M —
// so the inner loop is as long as possible, then splits the work into "rows": all dims but
// the last. Kernels parallelise over rows and run a tight inner loop over the last dim.
#pragma once
#include <array>
#include <cstdint>

#include "runtime/error.h"
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
};

}  // namespace mase::cpu
