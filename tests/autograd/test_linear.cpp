// tests/autograd/test_linear.cpp — linear: y = x·Wᵀ + b with and without bias, 3-d inputs,
// a frozen weight, transposed views; hand values, gradcheck, errors.
#include "autograd/frozen.h"
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sgemm_packed.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_f64;

TEST_CASE("linear: hand-checked values and gradients") {
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor w = Tensor::from({1, 0, -1, 2, 1, 0}, {2, 3}).set_requires_grad(true);  // (out 2, in 3)
  Tensor b = Tensor::from({10, 20}, {2}).set_requires_grad(true);
  // row [1 2 3]: w0·x = 1 - 3 = -2, w1·x = 2 + 2 = 4; row [4 5 6]: 4 - 6 = -2, 8 + 5 = 13
  check_close(linear(x, w), {-2, 4, -2, 13});
  Tensor y = linear(x, w, b);
  check_close(y, {8, 24, 8, 33});
  backward(sum(y));
  check_close(x.grad(), {3, 1, -1, 3, 1, -1});  // dx = 1·W: each row = w0 + w1 = [3 1 -1]
  check_close(w.grad(), {5, 7, 9, 5, 7, 9});    // dW = 1ᵀ·x: each row = Σ_rows x = [5 7 9]
  check_close(b.grad(), {2, 2});                // db = Σ_rows 1
  // 3-d input (2, 1, 3): the same rows, output (2, 1, 2)
  Tensor y3 = linear(reshape(x.detach(), {2, 1, 3}), w.detach(), b.detach());
  CHECK(y3.shape() == Shape{2, 1, 2});
  check_close(y3, {8, 24, 8, 33});
}

TEST_CASE("linear: gradcheck in f64") {
  CHECK(gradcheck([](const Tensors& t) { return linear(t[0], t[1], t[2]); },
                  {random_f64({4, 3}, 1), random_f64({5, 3}, 2), random_f64({5}, 3)}));
  CHECK(gradcheck([](const Tensors& t) { return linear(t[0], t[1]); },
                  {random_f64({4, 3}, 4), random_f64({2, 3}, 5)}));
  CHECK(gradcheck([](const Tensors& t) { return linear(t[0], t[1], t[2]); },
                  {random_f64({2, 3, 4}, 6), random_f64({5, 4}, 7), random_f64({5}, 8)}));
  // a weight stored transposed (in, out) and used as a view; a transposed 3-d input
  CHECK(gradcheck(
      [](const Tensors& t) { return linear(transpose(t[0], 0, 1), transpose(t[1], 0, 1), t[2]); },
      {random_f64({3, 2, 4}, 9), random_f64({4, 5}, 10), random_f64({5}, 11)}));
}

TEST_CASE("linear: a frozen weight gets no gradient") {
  Tensor x = random_f64({3, 4}, 12), b = random_f64({2}, 13);
  Tensor w = random_f64({2, 4}, 14).set_requires_grad(false);
  CHECK(gradcheck([w](const Tensors& t) { return linear(t[0], w, t[1]); }, {x, b}));
  CHECK(!w.grad().defined());
}

TEST_CASE("linear: zero input features give the bias") {
  // in = 0: y = Σ over no features + b = b in every row. The output was left uninitialised
  // and the backward threw on reshape(-1, 0): fixed.
  Tensor x = Tensor::zeros({2, 0}).set_requires_grad(true),
         w = Tensor::zeros({3, 0}).set_requires_grad(true);
  Tensor b = Tensor::from({1, 2, 3}, {3}).set_requires_grad(true);
  Tensor y = linear(x, w, b);
  check_close(y, {1, 2, 3, 1, 2, 3});
  check_close(linear(x.detach(), w.detach()), {0, 0, 0, 0, 0, 0});
  backward(sum(y));
  check_close(b.grad(), {2, 2, 2});  // db = Σ over the 2 rows of 1
  CHECK(w.grad().shape() == Shape{3, 0});
}

TEST_CASE("linear: inference on narrow shapes takes the packed GEMM, same values within fp32") {
  // bert-tiny's FFN output at 200 rows: (200, 512)·(128, 512)ᵀ + b under no-grad runs
  // runtime/kernels/sgemm_packed.h; with it switched off, OpenBLAS. Both against the grad-mode
  // result (OpenBLAS) within reassociation. Each output of the packed GEMM is one fma chain
  // over k (sgemm_packed.h); OpenBLAS adds partial sums of its K blocks, so at K = 512 the two
  // differ in the last bits — which shows the switch really changes the kernel.
  // (oneDNN, where built in, would take this size in both modes: this case compares ours with
  // OpenBLAS)
  const bool onednn = cpu::onednn_enabled();
  cpu::set_onednn_enabled(false);
  Tensor x = test::random_tensor({2, 100, 512}, 1, -1, 1, DType::f32);
  Tensor w = test::random_tensor({128, 512}, 2, -1, 1, DType::f32);
  Tensor b = test::random_tensor({128}, 3, -1, 1, DType::f32);
  const Tensor graded = linear(x, w, b);
  NoGradGuard no_grad;
  const Tensor packed = linear(x, w, b);
  cpu::set_sgemm_packed_enabled(false);
  const Tensor blas = linear(x, w, b);
  cpu::set_sgemm_packed_enabled(true);
  cpu::set_onednn_enabled(onednn);
  CHECK(blas.to_vector<float>() == graded.to_vector<float>());
  CHECK(packed.shape() == Shape{2, 100, 128});
  check_close(packed, graded, 1e-4, 1e-5);
  CHECK(packed.to_vector<float>() != graded.to_vector<float>());
}

TEST_CASE("linear: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({2, 3, 8}).set_requires_grad(true), w = rand({5, 8}).set_requires_grad(true);
  Tensor b = rand({5}).set_requires_grad(true);
  auto cu = [](const Tensor& t) { return t.detach().to(Device::cuda()).set_requires_grad(true); };
  Tensor xg = cu(x), wg = cu(w), bg = cu(b);
  Tensor y = linear(x, w, b), yg = linear(xg, wg, bg);
  check_close(yg.detach().to(Device::cpu()), y, 1e-5);
  backward(sum(y));
  backward(sum(yg));
  check_close(xg.grad().detach().to(Device::cpu()), x.grad(), 1e-5);
  check_close(wg.grad().detach().to(Device::cpu()), w.grad(), 1e-5);
  check_close(bg.grad().detach().to(Device::cpu()), b.grad(), 1e-5);
}

TEST_CASE("linear: errors") {
  Tensor x = Tensor::zeros({2, 3});
  CHECK(test::error_message([&] { linear(x, Tensor::zeros({2, 4})); }) ==
        "[linear] inner dims differ: x is (2, 3), weight is (2, 4) (expected x (..., 4))");
  CHECK(test::error_message([&] { linear(x, Tensor::zeros({2, 3}), Tensor::zeros({3})); }) ==
        "[linear] expected bias (2), got (3)");
  CHECK_THROWS_AS(linear(x, Tensor::zeros({3})), ShapeError);
  CHECK_THROWS_AS(linear(x, Tensor::zeros({2, 3}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(linear(x, test::fake_cuda({2, 3})), DeviceError);
  CHECK_THROWS_AS(linear(x, Tensor::zeros({2, 3}), test::fake_cuda({2})), DeviceError);
}

// FrozenWeights (autograd/frozen.h) is keyed by a weight's address: a second view of memory
// already in the table is another matrix, which find() does not match, so add() must not say
// it was packed (graph/passes/freeze_weights counted such a weight as packed).
TEST_CASE("linear: FrozenWeights::add refuses another view of a packed weight's memory") {
  if (cpu::onednn_version().empty() || !cpu::onednn_enabled()) {
    test::skip("this build has no oneDNN (libdnnl-dev), or it is turned off: nothing to pack");
    return;
  }
  const Tensor w = test::random_tensor({48, 64}, 2, -1, 1, DType::f32);
  FrozenWeights table;
  REQUIRE(table.add(w));
  CHECK(table.add(w));  // the same matrix again: packed
  const Tensor other = view(w, {24, 128});
  CHECK(table.find(other) == nullptr);
  CHECK_FALSE(table.add(other));
  CHECK(table.size() == 1);
}
