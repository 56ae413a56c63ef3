// autograd/ops/gelu.cpp — GELU, the exact (erf) form that BERT uses.
//
//   y  = x·Φ(x) = ½·x·(1 + erf(x/√2))            Φ = standard normal CDF
//   dx = dy·(Φ(x) + x·φ(x))                        φ(x) = exp(−x²/2)/√(2π), since Φ' = φ
//
// (Not the tanh approximation of GPT-2; HF's "gelu" for BERT is this exact one.)
// Reference: Hendrycks & Gimpel, "Gaussian Error Linear Units (GELUs)", arXiv:1606.08415.
// Kernels: runtime/cpu/gelu.cpp, cuda/gelu.cu. Tests: tests/autograd/test_gelu.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "cuda/gelu.h"
#include "runtime/cpu/gelu.h"

namespace mase {

Tensor gelu(const Tensor& x) {
  ops::check_float("gelu", x);
  ops::check_cuda_f32("gelu", x);
  Tensor xc = x.contiguous();
  Tensor y = Tensor::empty(x.shape(), x.dtype(), x.device());
  if (x.is_cuda()) {
    cuda::gelu_forward(y.data<float>(), xc.data<float>(), x.numel());
  } else {
    dispatch_float(x.dtype(), "gelu", [&]<class T>() {
      cpu::gelu_forward<T>(y.data<T>(), xc.data<T>(), x.numel());
    });
  }

  return record("gelu", {x}, y, [xc](const Tensor& dout) -> Tensors {
    // dx = dy * (Phi(x) + x * phi(x))
    Tensor dy = dout.contiguous();
    Tensor dx = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
    if (dx.is_cuda()) {
      cuda::gelu_backward(dx.data<float>(), dy.data<float>(), xc.data<float>(), dx.numel());
    } else {
      dispatch_float(dx.dtype(), "gelu", [&]<class T>() {
        cpu::gelu_backward<T>(dx.data<T>(), dy.data<T>(), xc.data<T>(), dx.numel());
      });
    }
    return {dx};
  });
}

}  // namespace mase
