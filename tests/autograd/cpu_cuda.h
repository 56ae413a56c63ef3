// tests/autograd/cpu_cuda.h — the CPU == CUDA check shared by the op tests (skips without GPU).
#pragma once
#include <functional>

#include "autograd/ops.h"
#include "helpers.h"

namespace mase::test {

// f on `inputs` (CPU tensors, floats f32) and f on GPU copies of them must agree: the outputs,
// and after a backward from the same random seed gradient, every gradient of an input that
// requires grad. Call it after `if (!have_gpu()) return;`.
inline void check_cpu_cuda(const std::function<Tensor(const Tensors&)>& f, const Tensors& inputs,
                           double atol = 1e-5, double rtol = 1e-5) {
  Tensors gpu;
  for (const Tensor& x : inputs) {
    x.set_grad(Tensor());
    Tensor g = x.detach().to(Device::cuda());
    g.set_requires_grad(x.requires_grad());
    gpu.push_back(g);
  }
  Tensor y = f(inputs), yg = f(gpu);
  check_close(yg.detach().to(Device::cpu()), y, atol, rtol);
  if (!y.requires_grad()) return;
  Tensor seed = random_tensor(y.shape(), 99, -1, 1, y.dtype());
  backward(y, seed);
  backward(yg, seed.detach().to(Device::cuda()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i].requires_grad()) continue;
    INFO("gradient of input " << i);
    check_close(gpu[i].grad().detach().to(Device::cpu()), inputs[i].grad(), atol, rtol);
  }
}

}  // namespace mase::test
