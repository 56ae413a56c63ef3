// runtime/cpu/copy.cpp — strided copy, dtype conversion, fill (see copy.h).
#include "runtime/kernels/copy.h"

#include <algorithm>
#include <cstring>

#include "runtime/cpu/strided.h"
#include "runtime/parallel.h"

namespace mase::cpu {

namespace {

// A transposing copy: the source is contiguous along the destination's second-to-last dim
// (y = x.transpose(-2, -1).contiguous(), K -> Kᵀ per head, ...). Copying row by row would read
// the source with a stride of a whole row, one float per cache line fetched: 5% of memcpy.
// Instead copy square tiles: a 32×32 tile reads 32 source lines and writes 32 destination
// lines, all of them staying in L1 while the tile is done, so every line fetched is used whole.
template <class T>
bool copy_tiled(T* dst, const T* src, const StridedLoop<2>& loop) {
  const int nd = loop.ndim;
  if (nd < 2) return false;
  const int64_t I = loop.shape[nd - 2], J = loop.shape[nd - 1];
  const int64_t dI = loop.strides[0][nd - 2], dJ = loop.strides[0][nd - 1];
  const int64_t sI = loop.strides[1][nd - 2], sJ = loop.strides[1][nd - 1];
  if (dJ != 1 || sI != 1 || sJ == 1) return false;
  constexpr int64_t kTile = 32;
  const int64_t planes = loop.rows() / I, tiles_i = (I + kTile - 1) / kTile;
  // one task = one strip of kTile rows of one plane, across all of J
  const int64_t grain = std::max<int64_t>(1, kGrainElems / (kTile * J));
  parallel_for(0, planes * tiles_i, grain, [&](int64_t lo, int64_t hi) {
    for (int64_t t = lo; t < hi; ++t) {
      const int64_t plane = t / tiles_i, i0 = (t % tiles_i) * kTile, i1 = std::min(I, i0 + kTile);
      auto [od, os] = loop.row_offsets(plane * I);  // the plane's (i, j) = (0, 0)
      for (int64_t j0 = 0; j0 < J; j0 += kTile) {
        const int64_t j1 = std::min(J, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          T* d = dst + od + i * dI;
          const T* s = src + os + i;
          for (int64_t j = j0; j < j1; ++j) d[j] = s[j * sJ];
        }
      }
    }
  });
  return true;
}

template <class T>
void copy_rows(T* dst, const T* src, const StridedLoop<2>& loop) {
  if (copy_tiled(dst, src, loop)) return;
  const int64_t sd = loop.inner_stride(0), ss = loop.inner_stride(1);
  loop.parallel_pieces(kGrainElems, [&](const std::array<int64_t, 2>& off, int64_t n) {
    T* d = dst + off[0];
    const T* s = src + off[1];
    if (sd == 1 && ss == 1) {
      std::memcpy(d, s, n * sizeof(T));
    } else {
      for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
    }
  });
}

template <class F>
void visit_dtype(DType t, F&& f) {
  switch (t) {
    case DType::f32: f(float{}); break;
    case DType::f64: f(double{}); break;
    case DType::i32: f(int32_t{}); break;
    case DType::i8: f(int8_t{}); break;
    case DType::u8: f(uint8_t{}); break;
  }
}
}  // namespace

void copy_strided(void* dst, const Strides& dst_strides, const void* src,
                  const Strides& src_strides, const Shape& shape, size_t itemsize) {
  StridedLoop<2> loop(shape, {&dst_strides, &src_strides});
  // only the element size matters for a copy, not its type
  switch (itemsize) {
    case 1: copy_rows(static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), loop); break;
    case 4: copy_rows(static_cast<uint32_t*>(dst), static_cast<const uint32_t*>(src), loop); break;
    case 8: copy_rows(static_cast<uint64_t*>(dst), static_cast<const uint64_t*>(src), loop); break;
    default: throw Error(cat("[copy] unsupported item size ", itemsize));
  }
}

void convert(void* dst, DType dst_dtype, const void* src, DType src_dtype, int64_t n) {
  visit_dtype(dst_dtype, [&](auto to) {
    visit_dtype(src_dtype, [&](auto from) {
      using To = decltype(to);
      using From = decltype(from);
      auto* d = static_cast<To*>(dst);
      auto* s = static_cast<const From*>(src);
      parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
        for (int64_t i = lo; i < hi; ++i) d[i] = convert_value<To>(s[i]);
      });
    });
  });
}

void fill(void* dst, DType dtype, double value, int64_t n) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* d = static_cast<T*>(dst);
    const T v = convert_value<T>(value);
    parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] = v;
    });
  });
}

}  // namespace mase::cpu
