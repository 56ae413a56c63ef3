// autograd/ops/where.cpp — where(cond, a, b) and masked_fill, with broadcasting of all operands.
//
//   forward    y = cond ? a : b                 cond u8 (nonzero = true), a and b float
//   backward   da = dy · cond     db = dy · (1 - cond)     (each summed down to its shape: sum_to)
//   masked_fill(x, mask, value) = where(mask, value, x)    e.g. attention scores where padded
//
// As torch.where / Tensor.masked_fill. The backward is where itself with a zero scalar for the
// other branch: dy where cond (else 0) for a, 0 where cond (else dy) for b. cond gets no
// gradient. Kernels: runtime/cpu/where.cpp, cuda/where.cu.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/where.h"

namespace mase {
namespace {

// cond ? a : b, packed, of the shape the three broadcast to (no autograd, no checks).
Tensor where_raw(const Tensor& cond, const Tensor& a, const Tensor& b) {
  Shape shape =
      broadcast_shapes(broadcast_shapes(cond.shape(), a.shape(), "where"), b.shape(), "where");
  Tensor out = Tensor::empty(shape, a.dtype(), a.device());
  Strides cs = broadcast_strides(cond.shape(), cond.strides(), shape);
  Strides as = broadcast_strides(a.shape(), a.strides(), shape);
  Strides bs = broadcast_strides(b.shape(), b.strides(), shape);
  if (a.is_cuda())
    cuda::where_forward(out.data<float>(), cond.data<uint8_t>(), cs, a.data<float>(), as,
                        b.data<float>(), bs, shape);
  else
    dispatch_float(a.dtype(), "where", [&]<class T>() {
      cpu::where_forward<T>(out.data<T>(), cond.data<uint8_t>(), cs, a.data<T>(), as, b.data<T>(),
                            bs, shape);
    });
  return out;
}

}  // namespace

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  ops::check_dtype("where", cond, DType::u8, "cond");
  ops::check_same("where", a, b);
  ops::check_same_device("where", cond, a);
  ops::check_float("where", a);
  ops::check_cuda_f32("where", a);
  Tensor y = where_raw(cond, a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  auto where_backward = [cond, ga, gb, sa = a.shape(),
                         sb = b.shape()](const Tensor& dy) -> Tensors {
    Tensor zero = Tensor::zeros({}, dy.dtype(), dy.device());
    return {Tensor(),
            ga ? sum_to(where_raw(cond, dy, zero), sa) : Tensor(),   // da = dy · cond
            gb ? sum_to(where_raw(cond, zero, dy), sb) : Tensor()};  // db = dy · (1 - cond)
  };
  return record("where", {cond, a, b}, y, std::move(where_backward));
}

Tensor masked_fill(const Tensor& x, const Tensor& mask, double value) {
  ops::check_float("masked_fill", x);
  ops::check_dtype("masked_fill", mask, DType::u8, "mask");
  ops::check_same_device("masked_fill", x, mask);
  // unlike where, the result keeps x's shape: the mask may broadcast up to x, not beyond it
  MASE_CHECK(broadcast_shapes(mask.shape(), x.shape(), "masked_fill") == x.shape(), ShapeError,
             "[masked_fill] expected a mask that broadcasts to x ", x.shape(), ", got ",
             mask.shape());
  return where(mask, Tensor::scalar(value, x.dtype(), x.device()), x);
}

}  // namespace mase
