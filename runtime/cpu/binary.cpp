// runtime/cpu/binary.cpp — broadcasting elementwise add/sub/mul/div.
//
// The loop is StridedLoop's: merged dims, pieces of rows in parallel, a tight inner loop.
// The inner loop is instantiated per (op, stride pattern) so that the common cases — both
// operands packed (1, 1), a row vector broadcast down a matrix (1, 0), a scalar (0, 1) —
// compile to straight AVX2 code with constant strides.
#include "runtime/kernels/binary.h"

#include "runtime/cpu/strided.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {

struct Add { template <class T> static T f(T x, T y) { return x + y; } };
struct Sub { template <class T> static T f(T x, T y) { return x - y; } };
struct Mul { template <class T> static T f(T x, T y) { return x * y; } };
struct Div { template <class T> static T f(T x, T y) { return x / y; } };

template <class Op, class T>
void inner(T* __restrict o, const T* a, int64_t sa, const T* b, int64_t sb, int64_t n) {
  if (sa == 1 && sb == 1) {
    for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i], b[i]);
  } else if (sa == 1 && sb == 0) {
    const T y = b[0];
    for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i], y);
  } else if (sa == 0 && sb == 1) {
    const T x = a[0];
    for (int64_t i = 0; i < n; ++i) o[i] = Op::f(x, b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) o[i] = Op::f(a[i * sa], b[i * sb]);
  }
}

template <class Op, class T>
void run(T* out, const T* a, const Strides& as, const T* b, const Strides& bs, const Shape& shape) {
  Strides os = contiguous_strides(shape);
  StridedLoop<3> loop(shape, {&os, &as, &bs});
  const int64_t sa = loop.inner_stride(1), sb = loop.inner_stride(2);
  loop.parallel_pieces(kGrainElems, [&](const std::array<int64_t, 3>& off, int64_t n) {
    inner<Op>(out + off[0], a + off[1], sa, b + off[2], sb, n);
  });
}

template <class Op, class T>
void run_scalar(T* out, const T* a, T s, bool scalar_first, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    if (scalar_first) for (int64_t i = lo; i < hi; ++i) out[i] = Op::f(s, a[i]);
    else for (int64_t i = lo; i < hi; ++i) out[i] = Op::f(a[i], s);
  });
}

}  // namespace

template <class T>
void binary_forward(BinaryOp op, T* out, const T* a, const Strides& as, const T* b,
                    const Strides& bs, const Shape& shape) {
  switch (op) {
    case BinaryOp::add: run<Add>(out, a, as, b, bs, shape); break;
    case BinaryOp::sub: run<Sub>(out, a, as, b, bs, shape); break;
    case BinaryOp::mul: run<Mul>(out, a, as, b, bs, shape); break;
    case BinaryOp::div: run<Div>(out, a, as, b, bs, shape); break;
  }
}

template <class T>
void binary_scalar_forward(BinaryOp op, T* out, const T* a, T s, bool scalar_first, int64_t n) {
  switch (op) {
    case BinaryOp::add: run_scalar<Add>(out, a, s, scalar_first, n); break;
    case BinaryOp::sub: run_scalar<Sub>(out, a, s, scalar_first, n); break;
    case BinaryOp::mul: run_scalar<Mul>(out, a, s, scalar_first, n); break;
    case BinaryOp::div: run_scalar<Div>(out, a, s, scalar_first, n); break;
  }
}

template void binary_forward<float>(BinaryOp, float*, const float*, const Strides&, const float*,
                                    const Strides&, const Shape&);
template void binary_forward<double>(BinaryOp, double*, const double*, const Strides&,
                                     const double*, const Strides&, const Shape&);
template void binary_scalar_forward<float>(BinaryOp, float*, const float*, float, bool, int64_t);
template void binary_scalar_forward<double>(BinaryOp, double*, const double*, double, bool, int64_t);

}  // namespace mase::cpu
