// models/init.h — parameter initialisers (in place, no autograd), drawing from the process
// generator so a seeded run is reproducible.
#pragma once
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace mase::nn {

// fan_in = size(1) · (receptive field) for a weight of shape (out, in, ...).
int64_t fan_in(const Tensor& weight);
// U(−b, b) with b = gain·√(3/fan_in), gain = √(2/(1+a²)): PyTorch's kaiming_uniform_.
// With a = √5 (nn.Linear's default) this is U(±1/√fan_in).
void kaiming_uniform_(const Tensor& weight, double a = 0.0, Generator& gen = default_generator());

}  // namespace mase::nn
