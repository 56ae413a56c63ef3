// tests/autograd/test_layer_norm.cpp — layer_norm: hand-checked values, PyTorch values,
// gradcheck, the reference composition, CPU == CUDA, errors.
#include <cmath>
#include <tuple>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

TEST_CASE("layer_norm: hand-checked values and gradients") {
  // row 0 = [1, 2, 3, 4]: mean 2.5, var = (2.25 + 0.25 + 0.25 + 2.25)/4 = 1.25,
  //   rstd = 1/√1.25 = 0.894427191 (rstd² = 0.8), x̂ = [-1.5, -0.5, 0.5, 1.5]·rstd
  // row 1 = [5, 5, 5, 5]: x − mean = 0, so x̂ = 0 and y = bias (eps keeps rstd finite)
  // y = x̂·w + b with w = [1, 2, 1, 2], b = [0, 0, 1, 1]
  Tensor x = Tensor::from({1, 2, 3, 4, 5, 5, 5, 5}, {2, 4}).set_requires_grad(true);
  Tensor w = Tensor::from({1, 2, 1, 2}, {4}).set_requires_grad(true);
  Tensor b = Tensor::from({0, 0, 1, 1}, {4}).set_requires_grad(true);
  Tensor y = layer_norm(x, w, b);
  check_close(y, {-1.341640786, -0.894427191, 1.4472135955, 3.683281573, 0, 0, 1, 1});

  // dy = [1, 0, 0, 0] on row 0, 0 on row 1. g = dy·w = [1, 0, 0, 0], mean(g) = 0.25,
  // mean(g·x̂) = -1.5·rstd/4, so x̂_i·mean(g·x̂) = -(1.5·k_i)·0.8/4 with x̂_i = k_i·rstd:
  //   dx_i = rstd·(g_i − 0.25 + 0.3·k_i) = rstd·[0.3, -0.4, -0.1, 0.2]   (sums to 0)
  // dw = Σ_rows dy·x̂ = [-1.5·rstd, 0, 0, 0], db = Σ_rows dy = [1, 0, 0, 0]
  backward(y, Tensor::from({1, 0, 0, 0, 0, 0, 0, 0}, {2, 4}));
  const double rstd = 0.894427191;
  check_close(x.grad(), {0.3 * rstd, -0.4 * rstd, -0.1 * rstd, 0.2 * rstd, 0, 0, 0, 0});
  check_close(w.grad(), {-1.5 * rstd, 0, 0, 0});
  check_close(b.grad(), {1, 0, 0, 0});

  // a 1-column input: x − mean = 0, so y = bias whatever x, and dx = 0
  Tensor x1 = Tensor::from({3, -8}, {2, 1});
  check_close(layer_norm(x1, Tensor::from({2}, {1}), Tensor::from({0.5}, {1})), {0.5, 0.5});
}

TEST_CASE("layer_norm: matches PyTorch on a random case") {
  // Produced once with PyTorch 2 (values printed with %.10g):
  // python3 -c "import torch; torch.manual_seed(0); r=lambda *s: torch.randn(*s,dtype=torch.float64).round(decimals=3); x=(r(3,4)*2+1).requires_grad_(); w=r(4).requires_grad_(); b=r(4).requires_grad_(); dy=r(3,4); y=torch.nn.functional.layer_norm(x,(4,),w,b,eps=1e-5); y.backward(dy); print(x, w, b, dy, y, x.grad, w.grad, b.grad)"
  const std::vector<double> xv = {4.082, 0.414, -3.358, 2.136, -1.17, -1.798,
                                  1.806, 2.676, -0.438, 0.194, -0.194, 1.364};
  const std::vector<double> wv = {-0.857, 1.101, -1.071, 0.123};
  const std::vector<double> bv = {-0.566, 0.373, -0.892, -1.509};
  const std::vector<double> dyv = {0.37, 1.457, 0.94, 0.775, 0.192, 1.264,
                                   -1.29, -0.791, -0.021, -0.718, 0.519, -1.313};
  const std::vector<double> y_ref = {-1.587372385, 0.2103606921, 0.7415093672, -1.449819939,
                                     0.1321817037, -0.8877309731, -1.696344358, -1.360325302,
                                     0.2636058247, 0.3133021107, -0.233084954, -1.307588756};
  const std::vector<double> dx_ref = {-0.2552568343, 0.5645615445, -0.267365502, -0.04193920822,
                                      -0.4746986616, 0.3205925754, 0.4498406476, -0.2957345614,
                                      0.6006048666, -0.6024444448, -0.2422542502, 0.2440938284};
  const std::vector<double> dw_ref = {0.3048758666, -1.623675147, -2.721830005, -2.733252859};
  const std::vector<double> db_ref = {0.541, 2.003, 0.169, -1.329};
  for (DType dt : {DType::f64, DType::f32}) {
    INFO("dtype " << dt);
    const double tol = dt == DType::f64 ? 1e-9 : 2e-6;  // literals have 10 significant digits
    Tensor x = Tensor::from(xv, {3, 4}).to(dt).set_requires_grad(true);
    Tensor w = Tensor::from(wv, {4}).to(dt).set_requires_grad(true);
    Tensor b = Tensor::from(bv, {4}).to(dt).set_requires_grad(true);
    Tensor y = layer_norm(x, w, b, 1e-5);
    check_close(y, y_ref, tol, tol);
    backward(y, Tensor::from(dyv, {3, 4}).to(dt));
    check_close(x.grad(), dx_ref, tol, tol);
    check_close(w.grad(), dw_ref, tol, tol);
    check_close(b.grad(), db_ref, tol, tol);
  }
}

TEST_CASE("layer_norm: gradcheck in f64") {
  auto ln = [](const Tensors& in) { return layer_norm(in[0], in[1], in[2], 1e-5); };
  for (const Shape& s : {Shape{3, 4}, Shape{5, 1}, Shape{2, 3, 7}, Shape{1, 9}}) {
    INFO("shape " << s);
    const int64_t C = s.back();
    Tensor x = random_tensor(s, 1, -3, 3).set_requires_grad(true);
    Tensor w = random_tensor({C}, 2, 0.5, 1.5).set_requires_grad(true);
    Tensor b = random_tensor({C}, 3).set_requires_grad(true);
    CHECK(gradcheck(ln, {x, w, b}));
  }
  // a non-contiguous input: the transposed view of a (5, 3) tensor is (3, 5)
  Tensor x = random_tensor({5, 3}, 4, -3, 3).set_requires_grad(true);
  Tensor w = random_tensor({5}, 5).set_requires_grad(true), b = random_tensor({5}, 6);
  CHECK(gradcheck([](const Tensors& in) {
    return layer_norm(transpose(in[0], 0, 1), in[1], in[2], 1e-5);
  }, {x, w, b}));
}

TEST_CASE("layer_norm: fused kernels equal the reference composition") {
  // (300, 200) spans several row chunks of the backward's dweight/dbias sums; f64 so that the
  // comparison is tight. (6, 33) in f32 is a small odd case.
  for (auto [shape, dt, tol] : {std::tuple{Shape{300, 200}, DType::f64, 1e-10},
                                std::tuple{Shape{6, 33}, DType::f32, 2e-5}}) {
    INFO("shape " << shape << " " << dt);
    const int64_t C = shape.back();
    Tensor x = random_tensor(shape, 1, -2, 3, dt).set_requires_grad(true);
    Tensor w = random_tensor({C}, 2, 0.5, 1.5, dt).set_requires_grad(true);
    Tensor b = random_tensor({C}, 3, -1, 1, dt).set_requires_grad(true);
    Tensor xr = x.detach().clone().set_requires_grad(true);
    Tensor wr = w.detach().clone().set_requires_grad(true);
    Tensor br = b.detach().clone().set_requires_grad(true);
    Tensor dy = random_tensor(shape, 4, -1, 1, dt);
    Tensor y = layer_norm(x, w, b, 1e-5), yr = layer_norm_reference(xr, wr, br, 1e-5);
    check_close(y, yr, tol, tol);
    backward(y, dy);
    backward(yr, dy);
    check_close(x.grad(), xr.grad(), tol, tol);
    check_close(w.grad(), wr.grad(), tol, tol);
    check_close(b.grad(), br.grad(), tol, tol);
  }
}

TEST_CASE("layer_norm: CPU == CUDA") {
  if (!test::have_gpu()) return;
  // 8197 rows: dweight and dbias summed in 65 chunks of rows (cuda/column_sums.cuh)
  for (const Shape& s : {Shape{64, 768}, Shape{5, 1}, Shape{3, 2, 33}, Shape{8197, 130}}) {
    const int64_t C = s.back();
    Tensor x = random_tensor(s, 1, -2, 3, DType::f32).set_requires_grad(true);
    Tensor w = random_tensor({C}, 2, 0.5, 1.5, DType::f32).set_requires_grad(true);
    Tensor b = random_tensor({C}, 3, -1, 1, DType::f32).set_requires_grad(true);
    test::check_cpu_cuda([](const Tensors& in) { return layer_norm(in[0], in[1], in[2]); },
                         {x, w, b}, 1e-4, 1e-4);
  }
}

TEST_CASE("layer_norm: errors") {
  Tensor x = Tensor::zeros({2, 4});
  CHECK(test::error_message([&] { layer_norm(x, Tensor::ones({3}), Tensor::zeros({4})); }) ==
        "[layer_norm] expected weight and bias of shape (4), got (3) and (4) (they must match "
        "the last dim of x (2, 4))");
  CHECK_THROWS_AS(layer_norm(x, Tensor::ones({4}), Tensor::zeros({2, 4})), ShapeError);
  CHECK_THROWS_AS(layer_norm(x, Tensor::ones({4}, DType::f64), Tensor::zeros({4})), DTypeError);
  CHECK_THROWS_AS(layer_norm(Tensor::zeros({2, 4}, DType::i32), Tensor::ones({4}, DType::i32),
                             Tensor::zeros({4}, DType::i32)), DTypeError);
  CHECK_THROWS_AS(layer_norm(Tensor::scalar(1.0), Tensor::ones({1}), Tensor::zeros({1})),
                  ShapeError);
  CHECK_THROWS_AS(layer_norm(x, Tensor(), Tensor::zeros({4})), Error);
  CHECK_THROWS_AS(layer_norm(x, Tensor::ones({4}), Tensor::zeros({4}), -1.0), ConfigError);
}
