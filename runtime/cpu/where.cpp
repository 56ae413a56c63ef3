// runtime/cpu/where.cpp — broadcasting select (see where.h): StridedLoop over four operands
// (out, cond, a, b), rows in parallel, a plain inner loop (the compiler turns the ternary into
// a blend when all strides are 1).
#include "runtime/kernels/where.h"

#include <algorithm>

#include "runtime/cpu/strided.h"
#include "runtime/parallel.h"

namespace mase::cpu {

template <class T>
void where_forward(T* out, const uint8_t* cond, const Strides& cs, const T* a, const Strides& as,
                   const T* b, const Strides& bs, const Shape& shape) {
  Strides os = contiguous_strides(shape);
  StridedLoop<4> loop(shape, {&os, &cs, &as, &bs});
  const int64_t n = loop.inner();
  const int64_t sc = loop.inner_stride(1), sa = loop.inner_stride(2), sb = loop.inner_stride(3);
  parallel_for(0, loop.rows(), std::max<int64_t>(1, kGrainElems / n), [&](int64_t lo, int64_t hi) {
    for (int64_t r = lo; r < hi; ++r) {
      auto [oo, oc, oa, ob] = loop.row_offsets(r);
      T* __restrict o = out + oo;
      const uint8_t* c = cond + oc;
      const T *x = a + oa, *y = b + ob;
      for (int64_t i = 0; i < n; ++i) o[i] = c[i * sc] ? x[i * sa] : y[i * sb];
    }
  });
}

template void where_forward<float>(float*, const uint8_t*, const Strides&, const float*,
                                   const Strides&, const float*, const Strides&, const Shape&);
template void where_forward<double>(double*, const uint8_t*, const Strides&, const double*,
                                    const Strides&, const double*, const Strides&, const Shape&);

}  // namespace mase::cpu
