// tests/autograd/test_cross_entropy.cpp — cross_entropy: hand-checked values, ignore_index,
// PyTorch values, gradcheck, the reference composition, CPU == CUDA, errors.
#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

namespace {
Tensor ids(const std::vector<int32_t>& v) { return Tensor::from(v, {int64_t(v.size())}); }
}  // namespace

TEST_CASE("cross_entropy: hand-checked values and gradients") {
  // softmax([0, ln 3]) = [0.25, 0.75]: target 1 costs −ln 0.75 = 0.2876820725, target 0 costs
  // −ln 0.25 = 1.3862943611; row 2 is ignored (-100): not in the mean, no gradient.
  // loss = (0.2876820725 + 1.3862943611) / 2 = 0.8369882168
  const float ln3 = std::log(3.0f);
  Tensor x = Tensor::from({0, ln3, 0, ln3, 5, -5}, {3, 2}).set_requires_grad(true);
  Tensor loss = cross_entropy(x, ids({1, 0, -100}));
  CHECK(loss.shape() == Shape{});
  check_close(loss, {0.8369882168});
  // dlogits = (softmax − onehot)·dloss/2 with dloss = 3:
  //   row 0: [0.25, 0.75 − 1]·1.5, row 1: [0.25 − 1, 0.75]·1.5, row 2: 0
  backward(loss, Tensor::scalar(3.0));
  check_close(x.grad(), {0.375, -0.375, -1.125, 1.125, 0, 0});

  // 4 equal logits: every class has p = 1/4, loss = ln 4 = 1.3862943611
  check_close(cross_entropy(Tensor::zeros({1, 4}), ids({2})), {1.3862943611});
  // large logits do not overflow: [1000, 1001], target 0 -> ln(1 + e) = 1.3132616875
  check_close(cross_entropy(Tensor::from({1000, 1001}, {1, 2}), ids({0})), {1.3132616875});
  // one class: softmax = [1], the loss is 0 whatever the logit
  CHECK(cross_entropy(Tensor::from({-4, 9}, {2, 1}), ids({0, 0})).item() == 0);
  // another ignore_index: with ignore_index = 0 the rows with target 0 are skipped
  check_close(cross_entropy(Tensor::from({0, ln3, 0, ln3}, {2, 2}), ids({1, 0}), 0),
              {0.2876820725});
}

TEST_CASE("cross_entropy: every row ignored gives loss 0 and zero gradient") {
  // PyTorch gives 0/0 = NaN here; mase documents 0 (see autograd/ops/cross_entropy.cpp)
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).set_requires_grad(true);
  Tensor loss = cross_entropy(x, ids({-100, -100}));
  CHECK(loss.item() == 0);
  backward(loss);
  check_close(x.grad(), std::vector<double>(6, 0.0));
  CHECK(cross_entropy(Tensor::zeros({0, 3}), Tensor::zeros({0}, DType::i32)).item() == 0);
}

TEST_CASE("cross_entropy: matches PyTorch on a random case") {
  // Produced once with PyTorch 2 (values printed with %.10g):
  // python3 -c "import torch; torch.manual_seed(0); x=(torch.randn(5,4,dtype=torch.float64)*2).round(decimals=3).requires_grad_(); t=torch.tensor([2,0,-100,3,1]); l=torch.nn.functional.cross_entropy(x,t); l.backward(); print(x, l, x.grad)"
  const std::vector<double> xv = {-4.621, -0.747, -2.122, 1.999, -0.04, 0.421, 0.354,
                                  -1.661, 0.477, 1.467, -2.644, 2.63, -1.374, 2.976,
                                  -0.897, -1.782, 1.35, 2.094, 0.309, -1.5};
  const std::vector<double> dx_ref = {
      0.0003081664272, 0.01483344912, -0.2462495167, 0.2311079012, -0.1914006689,
      0.0929185481, 0.0868969803, 0.01158514046, 0, 0, 0, 0,
      0.003095795992, 0.239857515, 0.004988050039, -0.2479413611, 0.07111805433,
      -0.1003437147, 0.02511188483, 0.004113775555};
  for (DType dt : {DType::f64, DType::f32}) {
    INFO("dtype " << dt);
    const double tol = dt == DType::f64 ? 1e-9 : 2e-6;  // literals have 10 significant digits
    Tensor x = Tensor::from(xv, {5, 4}).to(dt).set_requires_grad(true);
    Tensor loss = cross_entropy(x, ids({2, 0, -100, 3, 1}));
    check_close(loss, {2.740712347}, tol, tol);
    backward(loss);
    check_close(x.grad(), dx_ref, tol, tol);
  }
}

TEST_CASE("cross_entropy: gradcheck in f64") {
  struct Case {
    Shape shape;
    std::vector<int32_t> targets;
  };
  for (const Case& c : {Case{{3, 4}, {0, 3, 1}}, Case{{5, 1}, {0, 0, -100, 0, 0}},
                        Case{{7, 5}, {4, -100, 0, 2, -100, 1, 3}}, Case{{1, 9}, {8}}}) {
    INFO("shape " << c.shape);
    Tensor x = random_tensor(c.shape, 1, -3, 3).set_requires_grad(true);
    Tensor t = ids(c.targets);
    CHECK(gradcheck([](const Tensors& in) { return cross_entropy(in[0], in[1]); }, {x, t}));
  }
  // a non-contiguous input: the transposed view of a (4, 3) tensor is (3, 4)
  Tensor x = random_tensor({4, 3}, 2, -3, 3).set_requires_grad(true);
  CHECK(gradcheck([](const Tensors& in) { return cross_entropy(transpose(in[0], 0, 1), in[1]); },
                  {x, ids({3, -100, 0})}));
}

TEST_CASE("cross_entropy: fused kernels equal the reference composition") {
  Tensor x = random_tensor({6, 33}, 3, -4, 4, DType::f32).set_requires_grad(true);
  Tensor xr = x.detach().clone().set_requires_grad(true);
  Tensor t = ids({32, -100, 0, 17, 5, -100});
  Tensor loss = cross_entropy(x, t), loss_r = cross_entropy_reference(xr, t);
  check_close(loss, loss_r, 1e-6, 1e-5);
  backward(loss);
  backward(loss_r);
  check_close(x.grad(), xr.grad(), 1e-6, 1e-5);
}

TEST_CASE("cross_entropy: CPU == CUDA") {
  if (!test::have_gpu()) return;
  auto ce = [](const Tensors& in) { return cross_entropy(in[0], in[1]); };
  Tensor x = random_tensor({64, 1000}, 5, -5, 5, DType::f32).set_requires_grad(true);
  std::vector<int32_t> tv(64);
  for (int i = 0; i < 64; ++i) tv[i] = i % 5 == 0 ? -100 : (i * 37) % 1000;
  test::check_cpu_cuda(ce, {x, ids(tv)});
  Tensor small = random_tensor({3, 1}, 6, -1, 1, DType::f32).set_requires_grad(true);
  test::check_cpu_cuda(ce, {small, ids({0, -100, 0})});
  test::check_cpu_cuda(ce, {small, ids({-100, -100, -100})});  // all ignored: 0 on both
  // on the GPU the targets are checked on the device (no host sync): a bad one makes the loss
  // NaN and the gradient 0, never an out-of-bounds read
  std::vector<int32_t> bv(64, 1);
  bv[17] = 1000;
  Tensor xg = x.detach().to(Device::cuda()).set_requires_grad(true);
  Tensor bad_loss = cross_entropy(xg, ids(bv).detach().to(Device::cuda()));
  CHECK(std::isnan(bad_loss.item()));
  backward(bad_loss);
  for (float g : xg.grad().to_vector<float>()) CHECK(g == 0.f);
  bv[17] = -3;  // negative and not ignore_index
  CHECK(std::isnan(cross_entropy(x.detach().to(Device::cuda()), ids(bv).detach().to(Device::cuda())).item()));
}

TEST_CASE("cross_entropy: errors") {
  Tensor x = Tensor::zeros({3, 4});
  CHECK(test::error_message([&] { cross_entropy(x, ids({0, 1, 7})); }) ==
        "[cross_entropy] expected targets in [0, 4) or ignore_index (-100), got 7 at row 2");
  CHECK_THROWS_AS(cross_entropy(x, ids({0, -1, 2})), ShapeError);      // negative, not ignored
  CHECK_THROWS_AS(cross_entropy(x, ids({0, 1})), ShapeError);          // N differs
  CHECK_THROWS_AS(cross_entropy(x, Tensor::zeros({3, 1}, DType::i32)), ShapeError);
  CHECK_THROWS_AS(cross_entropy(Tensor::zeros({2, 3, 4}), ids({0, 1})), ShapeError);
  CHECK_THROWS_AS(cross_entropy(x, Tensor::zeros({3})), DTypeError);  // f32 targets
  CHECK_THROWS_AS(cross_entropy(Tensor::zeros({3, 4}, DType::i32), ids({0, 1, 2})), DTypeError);
}
