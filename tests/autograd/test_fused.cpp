// tests/autograd/test_fused.cpp — the fused epilogue ops of BERT against their references:
// bias_gelu (autograd/ops/gelu.cpp) and dropout_add_layer_norm (autograd/ops/layer_norm.cpp).
// Hand-checked values, fused == the composition of ops (values and every gradient; odd sizes,
// dropout on, rows whose Philox blocks straddle two rows), gradcheck in f64, CPU == CUDA,
// errors.
#include <cmath>
#include <cstring>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"
#include "runtime/allocator.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

namespace {

// f and g on copies of the same inputs: equal outputs, and equal gradients after a backward
// from the same random seed gradient.
void check_same_as(const std::function<Tensor(const Tensors&)>& f,
                   const std::function<Tensor(const Tensors&)>& g, const Tensors& inputs,
                   double atol, double rtol) {
  Tensors a, b;
  for (const Tensor& x : inputs) {
    a.push_back(x.clone().set_requires_grad(true));
    b.push_back(x.clone().set_requires_grad(true));
  }
  Tensor ya = f(a), yb = g(b);
  check_close(ya, yb, atol, rtol);
  Tensor seed = random_tensor(ya.shape(), 99, -1, 1, ya.dtype());
  backward(ya, seed);
  backward(yb, seed);
  for (size_t i = 0; i < inputs.size(); ++i) {
    INFO("gradient of input " << i);
    REQUIRE(a[i].grad().defined());
    check_close(a[i].grad(), b[i].grad(), atol, rtol);
  }
}

}  // namespace

// ---- bias_gelu ------------------------------------------------------------------------------

TEST_CASE("bias_gelu: hand-checked values and gradients") {
  // x + b per row: row 0 = (1, 0), row 1 = (−1, 2). Φ(1) = 0.8413447461, φ(1) = 0.2419707245,
  // Φ(2) = 0.9772498681, φ(2) = 0.0539909665 (normal tables):
  //   gelu(1) = 0.8413447461, gelu(0) = 0, gelu(−1) = −Φ(−1) = −0.1586552539, gelu(2) = 1.9544997361
  //   gelu'(1) = 1.0833154706, gelu'(0) = 0.5, gelu'(−1) = −0.0833154706, gelu'(2) = 1.0852318011
  // With dy = 1: dx = gelu'(x + b), db = column sums (1.0833154706 − 0.0833154706, 0.5 + 1.0852...)
  Tensor x = Tensor::from({0.5, 0.5, -1.5, 2.5}, {2, 2}).set_requires_grad(true);
  Tensor b = Tensor::from({0.5, -0.5}, {2}).set_requires_grad(true);
  Tensor y = bias_gelu(x, b);
  check_close(y, {0.8413447461, 0, -0.1586552539, 1.9544997361});
  backward(y, Tensor::ones({2, 2}));
  check_close(x.grad(), {1.0833154706, 0.5, -0.0833154706, 1.0852318011});
  check_close(b.grad(), {1.0, 1.5852318011});
}

TEST_CASE("bias_gelu: equals gelu(x + bias) in values and gradients") {
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Shape& s : {Shape{37, 13}, Shape{3, 5, 7}, Shape{1, 1}, Shape{64, 2048}}) {
      INFO("dtype " << dt << ", shape " << s);
      Tensor x = random_tensor(s, 1, -6, 6, dt);
      Tensor b = random_tensor({s.back()}, 2, -1, 1, dt);
      const double tol = dt == DType::f32 ? 2e-6 : 1e-12;
      check_same_as([](const Tensors& in) { return bias_gelu(in[0], in[1]); },
                    [](const Tensors& in) { return bias_gelu_reference(in[0], in[1]); }, {x, b},
                    tol, tol);
    }
  }
}

TEST_CASE("bias_gelu: the f32 kernel keeps the far negative tail") {
  // x + b = −10, with Φ(−10) = 7.6198530242e-24 and φ(−10) = 7.6945986267e-23:
  //   gelu = −10·Φ(−10) = −7.619853024e-23      (½(1 + erf(−10/√2)) would round to 0)
  //   gelu' = Φ(−10) − 10·φ(−10) = −7.6184000965e-22
  Tensor x = Tensor::from({-9.5f}, {1, 1}).set_requires_grad(true);
  Tensor b = Tensor::from({-0.5f}, {1});
  Tensor y = bias_gelu(x, b);
  check_close(y, {-7.619853024e-23}, 0, 2e-6);
  backward(y, Tensor::ones({1, 1}));
  check_close(x.grad(), {7.6198530242e-24 - 10 * 7.6945986267e-23}, 0, 2e-6);
}

TEST_CASE("bias_gelu: gradcheck in f64") {
  for (const Shape& s : {Shape{4, 3}, Shape{2, 3, 5}, Shape{1, 7}}) {
    INFO("shape " << s);
    Tensor x = random_tensor(s, 3, -4, 4).set_requires_grad(true);
    Tensor b = random_tensor({s.back()}, 4).set_requires_grad(true);
    CHECK(gradcheck([](const Tensors& in) { return bias_gelu(in[0], in[1]); }, {x, b}));
  }
}

TEST_CASE("bias_gelu: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = random_tensor({300, 37}, 5, -8, 8, DType::f32).set_requires_grad(true);
  Tensor b = random_tensor({37}, 6, -1, 1, DType::f32).set_requires_grad(true);
  test::check_cpu_cuda([](const Tensors& in) { return bias_gelu(in[0], in[1]); }, {x, b});
}

// bias_gelu_backward_: the node's backward in the caller's dy buffer (graph/passes/recompute_gelu)
namespace {
bool bitwise_equal(const Tensor& a, const Tensor& b) {  // same shape, dtype and bytes
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  const Tensor ca = a.detach().contiguous(), cb = b.detach().contiguous();
  return std::memcmp(ca.raw_data(), cb.raw_data(), ca.nbytes()) == 0;
}

Tensors bias_gelu_grads_in_place(const Tensor& x, const Tensor& b, const Tensor& dz) {
  Tensor dy = dz.clone();  // ours alone: overwritten
  const Tensor db = bias_gelu_backward_(dy, x, b);
  return {dy, db};
}
}  // namespace

TEST_CASE("bias_gelu_backward_: the node's gradients in dy's own buffer, bit for bit") {
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({3, 5, 33}, 7, -6, 6, dt).set_requires_grad(true);
    Tensor b = random_tensor({33}, 8, -1, 1, dt).set_requires_grad(true);
    const Tensor dz = random_tensor({3, 5, 33}, 9, -1, 1, dt);
    backward(bias_gelu(x, b), dz);
    Tensor dy = dz.clone();
    const void* buffer = dy.raw_data();
    reset_peak_stats();
    const size_t before = allocator_stats().in_use_bytes;
    const Tensor db = bias_gelu_backward_(dy, x.detach(), b.detach());
    // dh landed where dy was; nothing of dy's size was allocated (the (33) db and the kernel's
    // per-chunk partial sums only)
    CHECK(dy.raw_data() == buffer);
    CHECK(allocator_stats().peak_in_use_bytes - before < dy.nbytes());
    CHECK(bitwise_equal(dy, x.grad()));
    CHECK(bitwise_equal(db, b.grad()));
  }
  Tensor x = Tensor::zeros({4, 3}), b = Tensor::zeros({3});
  CHECK(test::error_message([&] { bias_gelu_backward_(Tensor::zeros({3, 4}), x, b); }) ==
        "[bias_gelu_backward_] expected dy packed, of x's shape (4, 3), dtype and device, got (3, 4) "
        "(it is overwritten: pass a gradient you own)");
  CHECK_THROWS_AS(bias_gelu_backward_(transpose(Tensor::zeros({3, 4}), 0, 1), x, b), ShapeError);
  // the kernel reads C values of bias: a bias of another size, dtype or kind is refused before
  // it is read past its end
  Tensor dy = Tensor::zeros({4, 3});
  CHECK(test::error_message([&] { bias_gelu_backward_(dy, x, Tensor::zeros({2})); }) ==
        "[bias_gelu_backward_] expected bias (C) for x (..., C), got x (4, 3) and bias (2)");
  CHECK_THROWS_AS(bias_gelu_backward_(dy, x, Tensor::zeros({1, 3})), ShapeError);
  CHECK_THROWS_AS(bias_gelu_backward_(dy, x, Tensor::zeros({3}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(bias_gelu_backward_(dy, x, Tensor()), Error);
}

TEST_CASE("bias_gelu_backward_: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = random_tensor({300, 37}, 5, -8, 8, DType::f32);
  Tensor b = random_tensor({37}, 6, -1, 1, DType::f32);
  Tensor dz = random_tensor({300, 37}, 7, -1, 1, DType::f32);
  const Tensors cpu = bias_gelu_grads_in_place(x, b, dz);
  const Tensors gpu = bias_gelu_grads_in_place(x.to(Device::cuda()), b.to(Device::cuda()),
                                               dz.to(Device::cuda()));
  for (size_t i = 0; i < cpu.size(); ++i) CHECK(bitwise_equal(cpu[i], gpu[i].to(Device::cpu())));
}

TEST_CASE("bias_gelu: errors") {
  Tensor x = Tensor::zeros({4, 3});
  CHECK(test::error_message([&] { bias_gelu(x, Tensor::zeros({4})); }) ==
        "[bias_gelu] expected bias (C) for x (..., C), got x (4, 3) and bias (4)");
  CHECK_THROWS_AS(bias_gelu(x, Tensor::zeros({3}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(bias_gelu(Tensor::zeros({4, 3}, DType::i32), Tensor::zeros({3})), DTypeError);
  CHECK_THROWS_AS(bias_gelu(x, Tensor()), Error);
  CHECK_THROWS_AS(bias_gelu(x, test::fake_cuda({3})), DeviceError);
}

// ---- dropout_add_layer_norm -------------------------------------------------------------------

TEST_CASE("dropout_add_layer_norm: hand-checked values") {
  // no dropout. Row 0: x + x_bias + residual = (1, 3) + (0, 0) + (0, 0): mean 2, var 1, so
  // x̂ = (−1, 1) and y = x̂·w + b = (−1·2 + 0.5, 1·3 − 0.5) = (−1.5, 2.5).
  // Row 1: (2, −2) + (0, 0) + (−1, 5) = (1, 3) again: the same output.
  Tensor x = Tensor::from({1, 3, 2, -2}, {2, 2});
  Tensor res = Tensor::from({0, 0, -1, 5}, {2, 2});
  Tensor w = Tensor::from({2, 3}, {2}), b = Tensor::from({0.5, -0.5}, {2});
  Tensor y = dropout_add_layer_norm(x, Tensor(), res, w, b, 0.5, /*training=*/false, 0.0);
  check_close(y, {-1.5, 2.5, -1.5, 2.5});
  // x_bias (1, −1) turns row 0 into (2, 2): variance 0, x̂ = 0, y = b
  Tensor xb = Tensor::from({1, -1}, {2});
  Tensor y2 = dropout_add_layer_norm(x, xb, res, w, b, 0.0, true, 1e-5);
  check_close(select(y2, 0, 0), {0.5, -0.5});
}

TEST_CASE("dropout_add_layer_norm: p = 1 drops every element of x") {
  // y = layer_norm(0 + residual): the same as layer_norm(residual)
  Tensor x = random_tensor({5, 6}, 1, -1, 1, DType::f32);
  Tensor res = random_tensor({5, 6}, 2, -1, 1, DType::f32);
  Tensor w = random_tensor({6}, 3, 0.5, 1.5, DType::f32), b = random_tensor({6}, 4, -1, 1, DType::f32);
  check_close(dropout_add_layer_norm(x, b, res, w, b, 1.0, true), layer_norm(res, w, b), 1e-6, 1e-5);
}

TEST_CASE("dropout_add_layer_norm: equals the composition of ops in values and gradients") {
  // C = 37: rows do not start on a Philox block (4 elements), so masks straddle rows
  struct Case {
    Shape shape;
    bool with_bias;
    double p;
    bool training;
  };
  const Case cases[] = {{{7, 3, 37}, true, 0.3, true},  {{21, 37}, false, 0.3, true},
                        {{5, 64}, true, 0.1, false},     {{5, 64}, true, 0.0, true},
                        {{64, 512}, true, 0.1, true},    {{2, 1}, true, 0.5, true}};
  for (DType dt : {DType::f32, DType::f64}) {
    for (const Case& c : cases) {
      INFO("dtype " << dt << ", shape " << c.shape << ", bias " << c.with_bias << ", p " << c.p
                    << ", training " << c.training);
      const int64_t C = c.shape.back();
      Tensor x = random_tensor(c.shape, 1, -2, 2, dt), res = random_tensor(c.shape, 2, -2, 2, dt);
      Tensor xb = random_tensor({C}, 3, -1, 1, dt), w = random_tensor({C}, 4, 0.5, 1.5, dt);
      Tensor b = random_tensor({C}, 5, -1, 1, dt);
      Tensors in{x, res, w, b};
      if (c.with_bias) in.push_back(xb);
      auto call = [&](bool fused) {
        return [&c, fused](const Tensors& t) {
          Generator gen(42);  // the same mask on both sides
          Tensor bias = t.size() > 4 ? t[4] : Tensor();
          return fused ? dropout_add_layer_norm(t[0], bias, t[1], t[2], t[3], c.p, c.training,
                                                1e-5, gen)
                       : dropout_add_layer_norm_reference(t[0], bias, t[1], t[2], t[3], c.p,
                                                          c.training, 1e-5, gen);
        };
      };
      const double tol = dt == DType::f32 ? 2e-5 : 1e-11;
      check_same_as(call(true), call(false), in, tol, tol);
    }
  }
}

TEST_CASE("dropout_add_layer_norm: under inference (nothing saved) the same bits as recorded") {
  // With no backward to come the CPU kernel keeps each row's sum in a scratch row instead of a
  // saved (rows, C) tensor; the output must not change, nor may the recorded path's gradients
  for (DType dt : {DType::f32, DType::f64}) {
    Tensor x = random_tensor({3, 5, 37}, 1, -2, 2, dt);
    Tensor res = random_tensor({3, 5, 37}, 2, -2, 2, dt);
    Tensor xb = random_tensor({37}, 3, -1, 1, dt), w = random_tensor({37}, 4, 0.5, 1.5, dt);
    Tensor b = random_tensor({37}, 5, -1, 1, dt);
    Tensor xg = x.clone().set_requires_grad(true);
    Tensor recorded = dropout_add_layer_norm(xg, xb, res, w, b, 0.1, /*training=*/false);
    Tensor inferred;
    {
      NoGradGuard no_grad;
      inferred = dropout_add_layer_norm(xg, xb, res, w, b, 0.1, false);
    }
    // no input needs a gradient: nothing is saved either
    const Tensor plain = dropout_add_layer_norm(x, xb, res, w, b, 0.1, false);
    REQUIRE(recorded.grad_fn());
    CHECK_FALSE(inferred.grad_fn());
    CHECK(std::memcmp(recorded.raw_data(), inferred.raw_data(), recorded.nbytes()) == 0);
    CHECK(std::memcmp(recorded.raw_data(), plain.raw_data(), recorded.nbytes()) == 0);
    backward(recorded, random_tensor(recorded.shape(), 6, -1, 1, dt));
    REQUIRE(xg.grad().defined());
    Tensor ref_x = x.clone().set_requires_grad(true);
    backward(dropout_add_layer_norm_reference(ref_x, xb, res, w, b, 0.1, false),
             random_tensor(recorded.shape(), 6, -1, 1, dt));
    const double tol = dt == DType::f32 ? 2e-5 : 1e-11;
    check_close(xg.grad(), ref_x.grad(), tol, tol);
  }
}

TEST_CASE("dropout_add_layer_norm: draws its mask from the generator like dropout") {
  // two calls advance the generator: different masks, and the same counters as two dropouts
  Tensor x = Tensor::ones({8, 16}), zero = Tensor::zeros({8, 16});
  Tensor w = Tensor::ones({16}), b = Tensor::zeros({16});
  Generator g1(7), g2(7);
  dropout_add_layer_norm(x, Tensor(), zero, w, b, 0.5, true, 1e-5, g1);
  dropout(x, 0.5, true, g2);
  CHECK(g1.offset == g2.offset);
  CHECK(g1.offset == 8 * 16 / 4);
}

TEST_CASE("dropout_add_layer_norm: gradcheck in f64 with dropout on") {
  for (const Shape& s : {Shape{3, 5}, Shape{2, 2, 7}}) {
    INFO("shape " << s);
    const int64_t C = s.back();
    Tensors in{random_tensor(s, 1).set_requires_grad(true), random_tensor({C}, 2).set_requires_grad(true),
               random_tensor(s, 3).set_requires_grad(true),
               random_tensor({C}, 4, 0.5, 1.5).set_requires_grad(true),
               random_tensor({C}, 5).set_requires_grad(true)};
    CHECK(gradcheck([](const Tensors& t) {
      Generator gen(3);  // every evaluation draws the same mask
      return dropout_add_layer_norm(t[0], t[1], t[2], t[3], t[4], 0.4, true, 1e-5, gen);
    }, in));
  }
}

TEST_CASE("dropout_add_layer_norm: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensors in{random_tensor({50, 37}, 1, -2, 2, DType::f32).set_requires_grad(true),
             random_tensor({37}, 2, -1, 1, DType::f32).set_requires_grad(true),
             random_tensor({50, 37}, 3, -2, 2, DType::f32).set_requires_grad(true),
             random_tensor({37}, 4, 0.5, 1.5, DType::f32).set_requires_grad(true),
             random_tensor({37}, 5, -1, 1, DType::f32).set_requires_grad(true)};
  test::check_cpu_cuda([](const Tensors& t) {
    Generator gen(9);
    return dropout_add_layer_norm(t[0], t[1], t[2], t[3], t[4], 0.2, true, 1e-5, gen);
  }, in);
}

TEST_CASE("dropout_add_layer_norm: errors") {
  Tensor x = Tensor::zeros({4, 3}), w = Tensor::ones({3}), b = Tensor::zeros({3});
  CHECK(test::error_message([&] {
    dropout_add_layer_norm(x, Tensor(), Tensor::zeros({4, 2}), w, b, 0.1, true);
  }) == "[dropout_add_layer_norm] expected residual of shape (4, 3) (like x), got (4, 2)");
  CHECK_THROWS_AS(dropout_add_layer_norm(x, Tensor::zeros({4}), x, w, b, 0.1, true), ShapeError);
  CHECK_THROWS_AS(dropout_add_layer_norm(x, Tensor(), x, Tensor::ones({4}), b, 0.1, true),
                  ShapeError);
  CHECK_THROWS_AS(dropout_add_layer_norm(x, Tensor(), x, w, b, 1.5, true), ConfigError);
  CHECK_THROWS_AS(dropout_add_layer_norm(x, Tensor(), Tensor(), w, b, 0.1, true), Error);
  CHECK_THROWS_AS(dropout_add_layer_norm(x, Tensor(), x.to(DType::f64), w, b, 0.1, true),
                  DTypeError);
}
