// autograd/ops/softmax.cpp — softmax and log_softmax over the last dim.
//
//   softmax:      y_i = exp(x_i − m) / Σ_j exp(x_j − m),       m = max_j x_j
//                 dx  = y ⊙ (dy − Σ_j dy_j·y_j)     (Jacobian diag(y) − y·yᵀ, applied to dy)
//   log_softmax:  y_i = (x_i − m) − log Σ_j exp(x_j − m)
//                 dx  = dy − exp(y)·Σ_j dy_j        (Jacobian I − 1·softmax(x)ᵀ)
//
// Subtracting the row max changes nothing mathematically (numerator and denominator both
// gain a factor exp(−m)) but keeps every exp in (0, 1], so exp(1000) never overflows.
//
// Fully masked rows (every entry −inf, e.g. a padding query whose keys are all masked):
// PyTorch returns NaN, which then poisons the whole batch through the next matmul and the
// loss. mase returns softmax = 0 (the row attends to nothing) and log_softmax = −inf
// (= log 0). The backward formulas then give dx = 0 for softmax (y = 0) and dx = dy for
// log_softmax (exp(y) = 0): the derivative of the convention, with no special case.
//
// Reference: Goodfellow et al., Deep Learning §6.2.2.3 / §4.1 (softmax, numerical stability).
// Kernels: runtime/cpu/softmax.cpp, cuda/softmax.cu. Tests: tests/autograd/test_softmax.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/softmax.h"

namespace mase {
namespace {

// softmax (log = false) or log_softmax (log = true) of x over its last dim; x is viewed as
// (rows, cols) with cols = the last dim.
Tensor softmax_over_rows(const char* name, const Tensor& x, bool log) {
  ops::check_float(name, x);
  ops::check_cuda_f32(name, x);
  MASE_CHECK(x.ndim() >= 1, ShapeError, "[", name, "] expected a tensor with at least 1 dim, got ",
             "shape ", x.shape(), " (reshape a scalar to (1))");
  const int64_t cols = x.size(-1), rows = cols == 0 ? 0 : x.numel() / cols;
  Tensor xc = ops::packed(x);
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    auto kernel = log ? cuda::log_softmax_forward : cuda::softmax_forward;
    kernel(y.data<float>(), xc.data<float>(), rows, cols);
  } else {
    dispatch_float(x.dtype(), name, [&]<class T>() {
      auto kernel = log ? cpu::log_softmax_forward<T> : cpu::softmax_forward<T>;
      kernel(y.data<T>(), xc.data<T>(), rows, cols);
    });
  }

  return record(name, {x}, y,
                [name, log, rows, cols, y = y.detach()](const Tensor& dout) -> Tensors {
    // softmax: dx = y * (dy - sum(dy * y, -1));  log_softmax: dx = dy - exp(y) * sum(dy, -1)
    Tensor dy = ops::packed(dout);
    Tensor dx = Tensor::empty(y.shape(), y.dtype(), y.device());
    if (dx.is_cuda()) {
      auto kernel = log ? cuda::log_softmax_backward : cuda::softmax_backward;
      kernel(dx.data<float>(), dy.data<float>(), y.data<float>(), rows, cols);
    } else {
      dispatch_float(dx.dtype(), name, [&]<class T>() {
        auto kernel = log ? cpu::log_softmax_backward<T> : cpu::softmax_backward<T>;
        kernel(dx.data<T>(), dy.data<T>(), y.data<T>(), rows, cols);
      });
    }
    return {dx};
  });
}

}  // namespace

Tensor softmax(const Tensor& x) { return softmax_over_rows("softmax", x, false); }
Tensor log_softmax(const Tensor& x) { return softmax_over_rows("log_softmax", x, true); }

// The same maths from primitive ops, one pass over memory each (Lab 4's naive softmax). The
// max is a constant shift — softmax(x − c) = softmax(x) for any c — so it is detached: no
// gradient flows through amax (it would be zero anyway, as Σ_j ∂y_i/∂x_j = 0).
Tensor softmax_reference(const Tensor& x) {
  Tensor e = exp(x - amax(x.detach(), -1, /*keepdim=*/true));
  return e / sum(e, {-1}, /*keepdim=*/true);
}
Tensor log_softmax_reference(const Tensor& x) {
  Tensor shifted = x - amax(x.detach(), -1, /*keepdim=*/true);
  return shifted - log(sum(exp(shifted), {-1}, /*keepdim=*/true));
}

}  // namespace mase
