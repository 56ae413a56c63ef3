// autograd/ops/common.h — the argument checks every op starts with (internal to ops/).
// Each throws the typed error with the op's name, e.g.
//   [add] expected tensors on the same device, got cpu and cuda:0
#pragma once
#include <string_view>

#include "runtime/tensor.h"

namespace mase::ops {

// The values of x packed row-major, for a kernel: x itself when already packed, else a copy.
// Never any history (the op records its own), so it is safe on inputs that require grad.
inline Tensor packed(const Tensor& x) { return x.detach().contiguous(); }

inline void check_defined(std::string_view op, const Tensor& t, std::string_view what = "input") {
  MASE_CHECK(t.defined(), Error, "[", op, "] ", what, " is an undefined tensor");
}

inline void check_float(std::string_view op, const Tensor& t, std::string_view what = "input") {
  check_defined(op, t, what);
  MASE_CHECK(is_floating(t.dtype()), DTypeError, "[", op, "] expected ", what,
             " to be f32 or f64, got ", t.dtype());
}

inline void check_dtype(std::string_view op, const Tensor& t, DType want,
                        std::string_view what = "input") {
  check_defined(op, t, what);
  MASE_CHECK(t.dtype() == want, DTypeError, "[", op, "] expected ", what, " to be ", want,
             ", got ", t.dtype());
}

// Same device only: for operands of different dtypes (ids and weight, a mask and values).
inline void check_same_device(std::string_view op, const Tensor& a, const Tensor& b) {
  check_defined(op, a);
  check_defined(op, b);
  MASE_CHECK(a.device() == b.device(), DeviceError, "[", op,
             "] expected tensors on the same device, got ", a.device(), " and ", b.device(),
             " (move one with .to())");
}

inline void check_same(std::string_view op, const Tensor& a, const Tensor& b) {
  check_same_device(op, a, b);
  MASE_CHECK(a.dtype() == b.dtype(), DTypeError, "[", op, "] expected tensors of the same dtype, got ",
             a.dtype(), " and ", b.dtype());
}

// CUDA kernels are written for f32 only; f64 exists for gradient checks on the CPU.
inline void check_cuda_f32(std::string_view op, const Tensor& t) {
  MASE_CHECK(!t.is_cuda() || t.dtype() == DType::f32, DTypeError, "[", op,
             "] CUDA kernels take f32, got ", t.dtype());
}

}  // namespace mase::ops
