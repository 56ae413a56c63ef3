// autograd/gradcheck.cpp — central-difference gradient check (see gradcheck.h).
#include "autograd/gradcheck.h"

#include <cmath>

#include "autograd/ops.h"

namespace mase {

GradcheckResult gradcheck(const std::function<Tensor(const Tensors&)>& f, const Tensors& inputs,
                          double eps, double atol, double rtol) {
  GradcheckResult res;
  // L(x) = Σ f(x)·R with a fixed R
  Tensor out0;
  {
    NoGradGuard ng;
    out0 = f(inputs);
  }
  Generator gen(1234);
  Tensor R = Tensor::empty(out0.shape(), out0.dtype());
  uniform_(R, -1.0, 1.0, gen);
  auto loss = [&](const Tensors& xs) { return sum(mul(f(xs), R)); };

  // analytic gradients
  for (const Tensor& x : inputs) if (x.requires_grad()) x.set_grad(Tensor());
  backward(loss(inputs));

  NoGradGuard ng;
  for (size_t k = 0; k < inputs.size(); ++k) {
    const Tensor& x = inputs[k];
    if (!x.requires_grad()) continue;
    MASE_CHECK(x.is_contiguous() && x.is_cpu(), Error, "[gradcheck] inputs must be contiguous CPU tensors");
    std::vector<double> analytic = x.grad().defined() ? x.grad().to_vector<double>()
                                                      : std::vector<double>(x.numel(), 0.0);
    for (int64_t j = 0; j < x.numel(); ++j) {
      auto nudge = [&](double delta) {  // x_j += delta, in place, in x's own dtype
        if (x.dtype() == DType::f64) x.data<double>()[j] += delta;
        else x.data<float>()[j] += static_cast<float>(delta);
      };
      auto read = [&]() {
        return x.dtype() == DType::f64 ? x.data<double>()[j] : static_cast<double>(x.data<float>()[j]);
      };
      double orig = read();
      nudge(eps);
      double lp = loss(inputs).item();
      if (x.dtype() == DType::f64) x.data<double>()[j] = orig; else x.data<float>()[j] = static_cast<float>(orig);
      nudge(-eps);
      double lm = loss(inputs).item();
      if (x.dtype() == DType::f64) x.data<double>()[j] = orig; else x.data<float>()[j] = static_cast<float>(orig);
      double numeric = (lp - lm) / (2 * eps);
      double err = std::abs(numeric - analytic[j]);
      res.max_abs_err = std::max(res.max_abs_err, err);
      if (res.ok && !(err <= atol + rtol * std::abs(numeric))) {  // !(<=) also catches NaN
        res.ok = false;
        res.message = cat("[gradcheck] input ", k, " ", x.shape(), " element ", j, ": analytic ",
                          analytic[j], ", numeric ", numeric, " (abs err ", err, ")");
      }
    }
  }
  return res;
}

}  // namespace mase
