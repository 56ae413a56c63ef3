// runtime/cpu/copy.cpp — strided copy, dtype conversion, fill (see copy.h).
#include "runtime/cpu/copy.h"

#include <cstring>

#include "runtime/cpu/strided.h"
#include "runtime/parallel.h"

namespace mase::cpu {

namespace {
template <class T>
void copy_rows(T* dst, const T* src, const StridedLoop<2>& loop) {
  const int64_t n = loop.inner(), sd = loop.inner_stride(0), ss = loop.inner_stride(1);
  int64_t grain = std::max<int64_t>(1, kGrainElems / n);
  parallel_for(0, loop.rows(), grain, [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      auto [od, os] = loop.row_offsets(r);
      T* d = dst + od;
      const T* s = src + os;
      if (sd == 1 && ss == 1) {
        std::memcpy(d, s, n * sizeof(T));
      } else {
        for (int64_t i = 0; i < n; ++i) d[i * sd] = s[i * ss];
      }
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
        for (int64_t i = lo; i < hi; ++i) d[i] = static_cast<To>(s[i]);
      });
    });
  });
}

void fill(void* dst, DType dtype, double value, int64_t n) {
  visit_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    auto* d = static_cast<T*>(dst);
    const T v = static_cast<T>(value);
    parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
      for (int64_t i = lo; i < hi; ++i) d[i] = v;
    });
  });
}

}  // namespace mase::cpu
