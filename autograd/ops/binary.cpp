// autograd/ops/binary.cpp — add, sub, mul, div (tensor ⊙ tensor with broadcasting, and with
// a scalar), plus the raw helpers accumulate_, mul_ and sum_to.
//
//   forward                 backward (then each gradient is summed down to its input's shape)
//   y = a + b               da = dy            db = dy
//   y = a - b               da = dy            db = -dy
//   y = a * b               da = dy * b        db = dy * a
//   y = a / b               da = dy / b        db = -dy * a / b²  (= -dy * y / b)
//
// Broadcasting (NumPy rules): a (32, 128, 768) + bias (768) reads bias with stride 0 on the
// first two dims. In backward the gradient of bias is dy summed over those dims: sum_to.
// Kernels: runtime/cpu/binary.cpp, cuda/binary.cu.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/binary.h"

namespace mase {
namespace {

const char* name_of(BinaryOp op) {
  switch (op) {
    case BinaryOp::add: return "add";
    case BinaryOp::sub: return "sub";
    case BinaryOp::mul: return "mul";
    default: return "div";
  }
}

// out = a op b, packed, of the broadcast shape (no autograd).
Tensor binary_raw(BinaryOp op, const Tensor& a, const Tensor& b, Tensor out = Tensor()) {
  const char* name = name_of(op);
  ops::check_same(name, a, b);
  ops::check_float(name, a);
  ops::check_cuda_f32(name, a);
  Shape shape = broadcast_shapes(a.shape(), b.shape(), name);
  if (!out.defined()) out = Tensor::empty(shape, a.dtype(), a.device());
  Strides as = broadcast_strides(a.shape(), a.strides(), shape);
  Strides bs = broadcast_strides(b.shape(), b.strides(), shape);
  if (a.is_cuda()) {
    cuda::binary_forward(op, out.data<float>(), a.data<float>(), as, b.data<float>(), bs, shape);
  } else {
    dispatch_float(a.dtype(), name, [&]<class T>() {
      cpu::binary_forward<T>(op, out.data<T>(), a.data<T>(), as, b.data<T>(), bs, shape);
    });
  }
  return out;
}

// out = a op s (or s op a), packed (no autograd); into `out` when given (elementwise, so out may
// be a itself).
Tensor scalar_raw(BinaryOp op, const Tensor& a, double s, bool scalar_first,
                  Tensor out = Tensor()) {
  const char* name = name_of(op);
  ops::check_float(name, a);
  ops::check_cuda_f32(name, a);
  Tensor ac = ops::packed(a);
  if (!out.defined()) out = Tensor::empty(a.shape(), a.dtype(), a.device());
  if (a.is_cuda()) {
    cuda::binary_scalar_forward(op, out.data<float>(), ac.data<float>(), static_cast<float>(s),
                                scalar_first, a.numel());
  } else {
    dispatch_float(a.dtype(), name, [&]<class T>() {
      cpu::binary_scalar_forward<T>(op, out.data<T>(), ac.data<T>(), static_cast<T>(s),
                                    scalar_first, a.numel());
    });
  }
  return out;
}

}  // namespace

Tensor sum_to(const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  // `shape` must broadcast to t's shape: no more dims, each equal to t's or 1 (else the sum
  // below would be a reshape of the wrong values, e.g. (2, 3) -> (3, 2))
  bool ok = shape.size() <= t.shape().size();
  for (size_t i = 0; ok && i < shape.size(); ++i) {
    const int64_t want = shape[shape.size() - 1 - i], have = t.shape()[t.shape().size() - 1 - i];
    ok = want == have || want == 1;
  }
  MASE_CHECK(ok, ShapeError, "[sum_to] expected a shape that broadcasts to ", t.shape(), ", got ",
             shape);
  // dims that t has in front of `shape`, and dims where shape has 1 but t does not
  const size_t lead = t.shape().size() - shape.size();
  std::vector<int64_t> dims;
  for (size_t i = 0; i < t.shape().size(); ++i)
    if (i < lead || (shape[i - lead] == 1 && t.shape()[i] != 1)) dims.push_back(static_cast<int64_t>(i));
  NoGradGuard no_grad;
  return reshape(sum(t, dims, /*keepdim=*/false), shape);
}

void accumulate_(const Tensor& dst, const Tensor& src) {
  MASE_CHECK(dst.shape() == src.shape(), ShapeError, "[accumulate_] expected a gradient of shape ",
             dst.shape(), ", got ", src.shape());
  MASE_CHECK(dst.is_contiguous(), Error, "[accumulate_] destination must be contiguous");
  binary_raw(BinaryOp::add, dst, src, dst);  // elementwise, so writing into dst is safe
}

void mul_(const Tensor& t, double s) {
  MASE_CHECK(t.is_contiguous(), Error, "[mul_] expected a packed tensor, got shape ", t.shape(),
             " with other strides (scale contiguous(t) and copy_ it back)");
  scalar_raw(BinaryOp::mul, t, s, /*scalar_first=*/false, t);
}

Tensor add(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw(BinaryOp::add, a, b);
  return record("add", {a, b}, y, [sa = a.shape(), sb = b.shape()](const Tensor& dy) -> Tensors {
    return {sum_to(dy, sa), sum_to(dy, sb)};  // da = dy, db = dy
  });
}

Tensor sub(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw(BinaryOp::sub, a, b);
  return record("sub", {a, b}, y, [sa = a.shape(), sb = b.shape()](const Tensor& dy) -> Tensors {
    return {sum_to(dy, sa), sum_to(neg(dy), sb)};  // da = dy, db = -dy
  });
}

Tensor mul(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw(BinaryOp::mul, a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  return record("mul", {a, b}, y, [a, b, ga, gb](const Tensor& dy) -> Tensors {
    return {ga ? sum_to(dy * b, a.shape()) : Tensor(),   // da = dy * b
            gb ? sum_to(dy * a, b.shape()) : Tensor()};  // db = dy * a
  });
}

Tensor div(const Tensor& a, const Tensor& b) {
  Tensor y = binary_raw(BinaryOp::div, a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  return record("div", {a, b}, y, [a, b, ga, gb](const Tensor& dy) -> Tensors {
    return {ga ? sum_to(dy / b, a.shape()) : Tensor(),               // da = dy / b
            gb ? sum_to(neg(dy * a / (b * b)), b.shape()) : Tensor()};  // db = -dy·a/b²
  });
}

Tensor add(const Tensor& a, double s) {
  Tensor y = scalar_raw(BinaryOp::add, a, s, false);
  return record("add_scalar", {a}, y, [](const Tensor& dy) -> Tensors { return {dy}; },
                {{"scalar", s}});
}

Tensor sub(const Tensor& a, double s) {
  Tensor y = scalar_raw(BinaryOp::sub, a, s, false);
  return record("sub_scalar", {a}, y, [](const Tensor& dy) -> Tensors { return {dy}; },
                {{"scalar", s}});
}

Tensor rsub(double s, const Tensor& a) {
  Tensor y = scalar_raw(BinaryOp::sub, a, s, true);
  return record("rsub_scalar", {a}, y, [](const Tensor& dy) -> Tensors { return {neg(dy)}; },
                {{"scalar", s}});
}

Tensor mul(const Tensor& a, double s) {
  Tensor y = scalar_raw(BinaryOp::mul, a, s, false);
  return record("mul_scalar", {a}, y, [s](const Tensor& dy) -> Tensors { return {dy * s}; },
                {{"scalar", s}});
}

Tensor div(const Tensor& a, double s) {
  Tensor y = scalar_raw(BinaryOp::div, a, s, false);
  return record("div_scalar", {a}, y, [s](const Tensor& dy) -> Tensors { return {dy / s}; },
                {{"scalar", s}});
}

}  // namespace mase
