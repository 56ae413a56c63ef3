// models/init.cpp — see init.h.
#include "models/init.h"

#include <cmath>

namespace mase::nn {

int64_t fan_in(const Tensor& w) {
  MASE_CHECK(w.ndim() >= 2, ShapeError, "[fan_in] expected a weight with >= 2 dims, got ", w.shape());
  int64_t f = w.shape()[1];
  for (int64_t d = 2; d < w.ndim(); ++d) f *= w.shape()[d];
  return f;
}

void kaiming_uniform_(const Tensor& w, double a, Generator& gen) {
  double gain = std::sqrt(2.0 / (1.0 + a * a));
  double bound = gain * std::sqrt(3.0 / static_cast<double>(fan_in(w)));
  uniform_(w, -bound, bound, gen);
}

}  // namespace mase::nn
