// autograd/ops/unary.cpp — neg, exp, log, sqrt, tanh, relu.
//
//   y = -x        dx = -dy
//   y = eˣ        dx = dy · y
//   y = ln x      dx = dy / x
//   y = √x        dx = dy / (2y)
//   y = tanh x    dx = dy · (1 - y²)
//   y = max(x,0)  dx = dy · [x > 0]
//
// Kernels: runtime/cpu/unary.cpp, cuda/unary.cu.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/unary.h"

namespace mase {
namespace {

Tensor unary(UnaryOp op, const char* name, const Tensor& x) {
  ops::check_float(name, x);
  ops::check_cuda_f32(name, x);
  Tensor xc = ops::packed(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) cuda::unary_forward(op, y.data<float>(), xc.data<float>(), x.numel());
  else dispatch_float(x.dtype(), name, [&]<class T>() { cpu::unary_forward<T>(op, y.data<T>(), xc.data<T>(), x.numel()); });

  // save only what the derivative reads: x for log and relu, y for exp, sqrt and tanh
  bool keep_x = op == UnaryOp::log || op == UnaryOp::relu;
  bool keep_y = op == UnaryOp::exp || op == UnaryOp::sqrt || op == UnaryOp::tanh;
  Tensor sx = keep_x ? xc : Tensor(), sy = keep_y ? y.detach() : Tensor();
  return record(name, {x}, y, [op, name, sx, sy](const Tensor& dy) -> Tensors {
    Tensor dyc = ops::packed(dy);
    Tensor dx = Tensor::empty(dy.shape(), dy.dtype(), dy.device());
    auto ptr = []<class T>(const Tensor& t) -> const T* { return t.defined() ? t.data<T>() : nullptr; };
    if (dx.is_cuda())
      cuda::unary_backward(op, dx.data<float>(), dyc.data<float>(), ptr.operator()<float>(sx),
                           ptr.operator()<float>(sy), dx.numel());
    else
      dispatch_float(dx.dtype(), name, [&]<class T>() {
        cpu::unary_backward<T>(op, dx.data<T>(), dyc.data<T>(), ptr.template operator()<T>(sx),
                               ptr.template operator()<T>(sy), dx.numel());
      });
    return {dx};
  });
}

}  // namespace

Tensor neg(const Tensor& x) { return unary(UnaryOp::neg, "neg", x); }
Tensor exp(const Tensor& x) { return unary(UnaryOp::exp, "exp", x); }
Tensor log(const Tensor& x) { return unary(UnaryOp::log, "log", x); }
Tensor sqrt(const Tensor& x) { return unary(UnaryOp::sqrt, "sqrt", x); }
Tensor tanh(const Tensor& x) { return unary(UnaryOp::tanh, "tanh", x); }
Tensor relu(const Tensor& x) { return unary(UnaryOp::relu, "relu", x); }

}  // namespace mase
