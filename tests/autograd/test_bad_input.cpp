// tests/autograd/test_bad_input.cpp — bad input to the engine and the ops never crashes: an
// out-of-range dim is a ShapeError naming the op, tensors on two devices a DeviceError, a
// mismatched backward seed a typed error. Devices are mixed with test::fake_cuda, so these
// run without a GPU (the device check must fire before any kernel).
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;

namespace {
// The message of what `f` throws, which must be a ShapeError.
template <class F>
std::string shape_error(F&& f) {
  try {
    f();
  } catch (const ShapeError& e) {
    return e.what();
  } catch (const std::exception& e) {
    return std::string("wrong type: ") + e.what();
  }
  return "(no exception)";
}
}  // namespace

TEST_CASE("an out-of-range dim in each dim-taking op is a ShapeError naming the op") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK(shape_error([&] { transpose(x, 0, 2); }) ==
        "[transpose] dim 2 out of range for a 2-d tensor (expected -2..1)");
  CHECK(shape_error([&] { transpose(x, -3, 0); }) ==
        "[transpose] dim -3 out of range for a 2-d tensor (expected -2..1)");
  const std::vector<std::pair<std::string, std::function<void()>>> cases{
      {"permute", [&] { permute(x, {0, 2}); }},
      {"slice", [&] { slice(x, 2, 0, 1); }},
      {"select", [&] { select(x, -3, 0); }},
      {"squeeze", [&] { squeeze(x, 5); }},
      {"unsqueeze", [&] { unsqueeze(x, 3); }},  // 0..2 are valid: a 3-d result
      {"concat", [&] { concat({x, x}, 2); }},
      {"sum", [&] { sum(x, {0, 2}); }},
      {"mean", [&] { mean(x, {-3}, true); }},
      {"size", [&] { x.size(2); }},
  };
  for (const auto& [op, f] : cases) {
    INFO(op);
    std::string msg = shape_error(f);
    CHECK(msg.starts_with("[" + op + "] dim "));
    CHECK(msg.find("out of range") != std::string::npos);
  }
  CHECK(unsqueeze(x, -1).shape() == Shape{2, 3, 1});  // the valid ends still work
  CHECK(unsqueeze(x, 2).shape() == Shape{2, 3, 1});
}

TEST_CASE("tensors on two devices are a DeviceError naming the op and both devices") {
  Tensor a = Tensor::zeros({2, 3}), g = test::fake_cuda({2, 3});
  CHECK(test::error_message([&] { add(a, g); }) ==
        "[add] expected tensors on the same device, got cpu and cuda:0 (move one with .to())");
  CHECK(test::error_message([&] { mul(g, a); }) ==
        "[mul] expected tensors on the same device, got cuda:0 and cpu (move one with .to())");
  Tensor ids = Tensor::from(std::vector<int32_t>{0, 1}, {2});
  Tensor mask = Tensor::from(std::vector<uint8_t>{1, 0, 1}, {3});
  const std::vector<std::pair<std::string, std::function<void()>>> cases{
      {"sub", [&] { sub(a, g); }},
      {"div", [&] { div(a, g); }},
      {"matmul", [&] { matmul(a, test::fake_cuda({3, 2})); }},
      {"linear", [&] { linear(a, test::fake_cuda({4, 3})); }},
      {"linear", [&] { linear(a, Tensor::zeros({4, 3}), test::fake_cuda({4})); }},
      {"embedding", [&] { embedding(ids, g); }},
      {"where", [&] { where(test::fake_cuda({3}, DType::u8), a, a); }},
      {"where", [&] { where(mask, a, g); }},
      {"masked_fill", [&] { masked_fill(a, test::fake_cuda({3}, DType::u8), 0.0); }},
      {"concat", [&] { concat({a, g}, 0); }},
  };
  for (const auto& [op, f] : cases) {
    INFO(op);
    std::string msg;
    try {
      f();
    } catch (const DeviceError& e) {
      msg = e.what();
    }
    CHECK(msg.starts_with("[" + op + "] expected tensors on the same device"));
  }
}

TEST_CASE("a tensor on a GPU that does not exist is a DeviceError") {
  // cuda:7 exists on no machine this project runs on; without a CUDA build the message says so
  std::string msg;
  try {
    Tensor::zeros({2}).to(Device::cuda(7));
  } catch (const DeviceError& e) {
    msg = e.what();
  }
  if (cuda_built())
    CHECK(msg == "[empty] expected a GPU index < " + std::to_string(cuda_device_count()) +
                     ", got cuda:7 (no such GPU)");
  else
    CHECK(msg == "[to] built without CUDA; reconfigure with -DMASE_CUDA=ON");
}

TEST_CASE("backward rejects a seed of another device or dtype") {
  Tensor x = Tensor::from({1, 2}, {2}).set_requires_grad(true);
  Tensor y = x * 2.0;
  CHECK(test::error_message([&] { backward(y, test::fake_cuda({2})); }) ==
        "[backward] expected a seed on cpu, got one on cuda:0");
  CHECK(test::error_message([&] { backward(y, Tensor::ones({2}, DType::f64)); }) ==
        "[backward] expected a seed of dtype f32, got f64");
  backward(y, Tensor::ones({2}));  // the graph is intact after the refusals
  test::check_close(x.grad(), {2, 2});
}
