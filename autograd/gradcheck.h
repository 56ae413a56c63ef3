// autograd/gradcheck.h — does an op's backward agree with finite differences?
//
// For a function f of some tensors, pick a fixed random weight R of f's output shape and let
// L = Σ f(x)·R (so every output element matters, each differently). Then compare, for every
// element x_j of every input that requires grad,
//   analytic  dL/dx_j  from backward()
//   numeric   (L(x_j + ε) - L(x_j - ε)) / 2ε           (central difference, error O(ε²))
// Inputs should be f64 (error ~1e-10); f32 works with a larger ε and tolerance.
#pragma once
#include <functional>
#include <string>

#include "autograd/engine.h"

namespace mase {

struct GradcheckResult {
  bool ok = true;
  double max_abs_err = 0;  // over all checked elements
  std::string message;     // names the worst input and element when !ok
  explicit operator bool() const { return ok; }
};

GradcheckResult gradcheck(const std::function<Tensor(const Tensors&)>& f, const Tensors& inputs,
                          double eps = 1e-6, double atol = 1e-7, double rtol = 1e-5);

}  // namespace mase
