// tests/train/optim_helpers.h — small builders shared by the optimizer tests.
#pragma once
#include <string>
#include <vector>

#include "runtime/random.h"
#include "runtime/tensor.h"

namespace mase::test {

// A trainable f32 parameter holding `values`.
inline Tensor param(std::vector<float> values, const Shape& shape) {
  Tensor p = Tensor::from(values, shape);
  p.set_requires_grad(true);
  return p;
}
inline Tensor param(std::vector<float> values) {
  const int64_t n = static_cast<int64_t>(values.size());
  return param(std::move(values), {n});
}

// Give `p` the gradient `values` (same shape as p).
inline void set_grad(const Tensor& p, std::vector<float> values) {
  p.set_grad(Tensor::from(values, p.shape()));
}

// A random trainable parameter of `shape` and dtype, values uniform in [-1, 1).
inline Tensor random_param(const Shape& shape, uint64_t seed, DType dtype = DType::f32) {
  Generator g(seed);
  Tensor p = Tensor::empty(shape, dtype);
  uniform_(p, -1.0, 1.0, g);
  p.set_requires_grad(true);
  return p;
}

// A packed copy of p that is a fresh trainable parameter (for running two optimizers on the
// same starting point).
inline Tensor clone_param(const Tensor& p) {
  Tensor c = p.detach().clone();
  c.set_requires_grad(true);
  return c;
}

}  // namespace mase::test
