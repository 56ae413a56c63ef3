// tests/autograd/test_softmax.cpp — softmax and log_softmax: hand-checked values, masked
// rows, PyTorch values, gradcheck, the reference composition, CPU == CUDA, errors.
#include <cmath>
#include <limits>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"

using namespace mase;
using mase::test::check_close;
using mase::test::random_tensor;

namespace test_softmax {

namespace {
constexpr float kInf = std::numeric_limits<float>::infinity();
}  // namespace

TEST_CASE("softmax: hand-checked values and gradients") {
  // softmax([0, ln 3]) = [1, 3] / (1 + 3) = [0.25, 0.75]; log of that = [ln 0.25, ln 0.75]
  Tensor x = Tensor::from({0.0f, std::log(3.0f)}, {1, 2}).set_requires_grad(true);
  Tensor y = softmax(x);
  check_close(y, {0.25, 0.75});
  // dy = [1, 0]: Σ dy·y = 0.25, dx = y·(dy − 0.25) = [0.25·0.75, 0.75·(−0.25)]
  backward(y, Tensor::from({1, 0}, {1, 2}));
  check_close(x.grad(), {0.1875, -0.1875});

  x.set_grad(Tensor());
  Tensor z = log_softmax(x);
  check_close(z, {std::log(0.25), std::log(0.75)});
  // dy = [1, 0]: Σ dy = 1, dx = dy − exp(z)·1 = [1 − 0.25, 0 − 0.75]
  backward(z, Tensor::from({1, 0}, {1, 2}));
  check_close(x.grad(), {0.75, -0.75});

  // the max shift: [5, 1000, 1001] behaves as [-996, 0, 1] -> [e^-996 ≈ 0, 1/(1+e), e/(1+e)]
  // with no overflow to inf; log_softmax = x − 1001 − ln(1 + e^-1) = x − 1001.3132616875.
  // Row 1 has 3 equal values -> 1/3 each.
  Tensor big = Tensor::from({5, 1000, 1001, 5, 5, 5}, {2, 3});
  check_close(softmax(big), {0, 0.2689414214, 0.7310585786, 1.0 / 3, 1.0 / 3, 1.0 / 3}, 1e-6);
  check_close(log_softmax(big), {-996.3132616875, -1.3132616875, -0.3132616875, -std::log(3.0),
                                 -std::log(3.0), -std::log(3.0)}, 1e-6, 1e-6);
  // a 1-column row is always [1] (log: [0]); a 3-d input is read as rows of its last dim
  check_close(softmax(Tensor::from({-7, 3}, {2, 1})), {1, 1});
  check_close(log_softmax(Tensor::from({-7, 3}, {2, 1})), {0, 0});
  check_close(softmax(Tensor::zeros({2, 2, 2})), std::vector<double>(8, 0.5));
}

TEST_CASE("softmax: a fully masked row gives 0s and log_softmax gives -inf") {
  // row 0: every key masked (padding query) -> 0s, not NaN; row 1: one key masked ->
  // softmax([0, ln 3, -inf]) = [0.25, 0.75, 0]
  Tensor x = Tensor::from({-kInf, -kInf, -kInf, 0.0f, std::log(3.0f), -kInf}, {2, 3})
                 .set_requires_grad(true);
  Tensor y = softmax(x);
  check_close(y, {0, 0, 0, 0.25, 0.75, 0});
  // dy = [1, 2, 3] on both rows: row 0 gets y·(…) = 0; row 1: Σ dy·y = 0.25 + 1.5 = 1.75,
  // dx = [0.25·(1 − 1.75), 0.75·(2 − 1.75), 0] = [-0.1875, 0.1875, 0]
  Tensor dy = Tensor::from({1, 2, 3, 1, 2, 3}, {2, 3});
  backward(y, dy);
  check_close(x.grad(), {0, 0, 0, -0.1875, 0.1875, 0});

  x.set_grad(Tensor());
  Tensor z = log_softmax(x);
  std::vector<float> zv = z.to_vector<float>();
  for (int i : {0, 1, 2, 5}) CHECK(zv[i] == -kInf);  // log 0
  CHECK(std::abs(zv[3] - std::log(0.25f)) < 1e-6);
  CHECK(std::abs(zv[4] - std::log(0.75f)) < 1e-6);
  // dx = dy − exp(z)·Σdy, Σdy = 6: row 0 (exp(z) = 0) passes dy through;
  // row 1: [1 − 0.25·6, 2 − 0.75·6, 3 − 0] = [-0.5, -2.5, 3]
  backward(z, dy);
  check_close(x.grad(), {1, 2, 3, -0.5, -2.5, 3});
}

TEST_CASE("softmax: matches PyTorch on a random case") {
  // Produced once with PyTorch 2 (values printed with %.10g):
  // python3 -c "import torch; torch.manual_seed(0); x=(torch.randn(3,5,dtype=torch.float64)*3).round(decimals=3).requires_grad_(); dy=torch.randn(3,5,dtype=torch.float64).round(decimals=3); y=torch.softmax(x,-1); y.backward(dy); print(x, dy, y, x.grad); x.grad=None; z=torch.log_softmax(x,-1); z.backward(dy); print(z, x.grad)"
  const std::vector<double> xv = {4.623, -0.88, -6.536, 1.705, -3.254, -4.196, 1.21, 2.514,
                                  -2.158, -1.21, -1.79, 0.546, -2.57, 3.302, -3.214};
  const std::vector<double> dyv = {0.123, -0.566, 0.373, -0.892, -1.509, 0.37, 1.457, 0.94,
                                   0.775, 0.192, 1.264, -1.29, -0.791, -0.021, -0.718};
  const std::vector<double> y_ref = {
      0.9447243591, 0.003849307267, 1.34590061e-05, 0.05105447508, 0.0003583995697,
      0.0009330176989, 0.2078192874, 0.7656069298, 0.00716113789, 0.01847962718,
      0.005722332411, 0.05916774151, 0.002623151576, 0.9311091282, 0.001377646332};
  const std::vector<double> dx_ref = {
      0.05201086266, -0.002440252913, 4.105723758e-06, -0.04900953871, -0.0005651767648,
      -0.0006175703887, 0.08834264849, -0.07036417875, -0.001839742174, -0.01552115718,
      0.007757827354, -0.07090007079, -0.001834341795, 0.06583939037, -0.0008628051389};
  const std::vector<double> z_ref = {
      -0.05686207755, -5.559862078, -11.21586208, -2.974862078, -7.933862078,
      -6.977086387, -1.571086387, -0.2670863874, -4.939086387, -3.991086387,
      -5.163378792, -2.827378792, -5.943378792, -0.0713787925, -6.587378792};
  const std::vector<double> dz_ref = {
      2.457413891, -0.5564883617, 0.3730332572, -0.7658443921, -1.508114395,
      0.3665161119, 0.6810027808, -1.918776276, 0.7482603111, 0.1229970721,
      1.272903949, -1.197934994, -0.7869183761, 1.427805803, -0.7158563823};
  for (DType dt : {DType::f64, DType::f32}) {
    INFO("dtype " << dt);
    const double tol = dt == DType::f64 ? 1e-9 : 2e-6;  // literals have 10 significant digits
    Tensor x = Tensor::from(xv, {3, 5}).to(dt).set_requires_grad(true);
    Tensor dy = Tensor::from(dyv, {3, 5}).to(dt);
    Tensor y = softmax(x);
    check_close(y, y_ref, tol, tol);
    backward(y, dy);
    check_close(x.grad(), dx_ref, tol, tol);
    x.set_grad(Tensor());
    Tensor z = log_softmax(x);
    check_close(z, z_ref, tol, tol);
    backward(z, dy);
    check_close(x.grad(), dz_ref, tol, tol);
  }
}

TEST_CASE("softmax: gradcheck in f64") {
  for (const Shape& s : {Shape{3, 4}, Shape{5, 1}, Shape{2, 3, 7}, Shape{1, 9}}) {
    INFO("shape " << s);
    Tensor x = random_tensor(s, 1, -3, 3).set_requires_grad(true);
    CHECK(gradcheck([](const Tensors& in) { return softmax(in[0]); }, {x}));
    CHECK(gradcheck([](const Tensors& in) { return log_softmax(in[0]); }, {x}));
  }
  // a non-contiguous input (transposed view) and a partially masked row (the -inf entry is
  // constant under ± eps, so its numeric and analytic gradients are both 0)
  Tensor x = random_tensor({4, 3}, 2, -3, 3).set_requires_grad(true);
  CHECK(gradcheck([](const Tensors& in) { return softmax(transpose(in[0], 0, 1)); }, {x}));
  CHECK(gradcheck([](const Tensors& in) { return log_softmax(transpose(in[0], 0, 1)); }, {x}));
  const double inf = INFINITY;
  Tensor mask = Tensor::from(std::vector<double>{0, -inf, 0, 0, 0, 0, 0, 0, 0, 0, 0, -inf}, {4, 3});
  CHECK(gradcheck([&](const Tensors& in) { return softmax(in[0] + mask); }, {x}));
}

TEST_CASE("softmax: fused kernels equal the reference composition") {
  Tensor x = random_tensor({6, 33}, 3, -4, 4, DType::f32).set_requires_grad(true);
  Tensor xr = x.detach().clone().set_requires_grad(true);
  Tensor dy = random_tensor({6, 33}, 4, -1, 1, DType::f32);
  Tensor y = softmax(x), yr = softmax_reference(xr);
  check_close(y, yr, 1e-6, 1e-5);
  backward(y, dy);
  backward(yr, dy);
  check_close(x.grad(), xr.grad(), 1e-6, 1e-5);

  x.set_grad(Tensor());
  xr.set_grad(Tensor());
  Tensor z = log_softmax(x), zr = log_softmax_reference(xr);
  check_close(z, zr, 1e-5, 1e-5);
  backward(z, dy);
  backward(zr, dy);
  check_close(x.grad(), xr.grad(), 1e-5, 1e-5);
}

TEST_CASE("softmax: the reference subtracts the row max, so large scores do not overflow") {
  // exp(1000) overflows a double; after the shift the row is (0, −1, −2): softmax is
  // e^{−k} / (1 + e^{−1} + e^{−2}) = 0.665241, 0.244728, 0.090031
  Tensor x = Tensor::from({1000, 999, 998, -1000, -1001, -1002}, {2, 3});
  check_close(softmax_reference(x), {0.665241, 0.244728, 0.090031, 0.665241, 0.244728, 0.090031},
              1e-6);
  check_close(log_softmax_reference(x), {-0.407606, -1.407606, -2.407606, -0.407606, -1.407606,
                                         -2.407606}, 1e-6);
  check_close(softmax_reference(x), softmax(x), 1e-12);
}

namespace {
// Row softmax (log = false) or log_softmax in double, the max subtracted first: the oracle.
std::vector<double> softmax_double(const Tensor& x, bool log) {
  const int64_t C = x.size(-1), R = x.numel() / C;
  std::vector<double> v = x.to_vector<double>();
  for (int64_t r = 0; r < R; ++r) {
    double* row = v.data() + r * C;
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, row[c]);
    for (int64_t c = 0; c < C; ++c) s += std::exp(row[c] - m);
    for (int64_t c = 0; c < C; ++c)
      row[c] = m == -INFINITY ? (log ? -INFINITY : 0.0)
                              : (log ? row[c] - m - std::log(s) : std::exp(row[c] - m) / s);
  }
  return v;
}
}  // namespace

TEST_CASE("softmax: long rows across the online chunks") {
  // The kernel walks a row in chunks of 256 with a running max: rows of 1000 (3 full chunks
  // and a ragged one) where the max sits in the first, the last or a middle chunk, where the
  // first chunks are all -inf, and one row fully -inf. Odd widths also misalign the rows.
  const int64_t C = 1000;
  Tensor x = random_tensor({6, C}, 7, -5, 5, DType::f32);
  std::vector<float> v = x.to_vector<float>();
  v[0 * C + 3] = 40;                                 // max in chunk 0
  v[1 * C + 999] = 40;                               // max in the ragged last chunk
  for (int64_t c = 0; c < C; ++c) v[2 * C + c] += 0.03f * c;  // a rising row: every chunk
  for (int64_t c = 0; c < 600; ++c) v[3 * C + c] = -INFINITY;  // −inf prefix
  for (int64_t c = 0; c < C; ++c) v[4 * C + c] = -INFINITY;    // fully masked
  x = Tensor::from(v, {6, C});
  for (bool log : {false, true}) {
    INFO("log_softmax " << log);
    Tensor y = log ? log_softmax(x) : softmax(x);
    std::vector<double> want = softmax_double(x, log), got = y.to_vector<double>();
    for (size_t i = 0; i < got.size(); ++i) {
      INFO("element " << i);
      if (std::isinf(want[i])) REQUIRE(got[i] == want[i]);
      else REQUIRE(std::abs(got[i] - want[i]) <= 1e-6 * std::max(1.0, std::abs(want[i])) + 1e-9);
    }
  }
  // an output of ≥ 16 MB is written with streaming stores: (4099, 1025) floats, odd widths
  // so that rows start at every alignment
  Tensor big = random_tensor({4099, 1025}, 8, -6, 6, DType::f32);
  std::vector<double> want = softmax_double(big, false), got = softmax(big).to_vector<double>();
  double worst = 0;
  for (size_t i = 0; i < got.size(); ++i) worst = std::max(worst, std::abs(got[i] - want[i]));
  CHECK(worst <= 1e-7);  // probabilities of ~1e-3: a few f32 ulps
}

TEST_CASE("softmax: CPU == CUDA") {
  if (!test::have_gpu()) return;
  for (const Shape& s : {Shape{37, 1000}, Shape{5, 1}, Shape{3, 2, 33}}) {
    Tensor x = random_tensor(s, 5, -5, 5, DType::f32).set_requires_grad(true);
    test::check_cpu_cuda([](const Tensors& in) { return softmax(in[0]); }, {x});
    test::check_cpu_cuda([](const Tensors& in) { return log_softmax(in[0]); }, {x});
  }
  // a fully masked row: 0s (softmax) on both devices
  Tensor m = Tensor::from({-kInf, -kInf, -kInf, 0.0f, 1.0f, -kInf}, {2, 3}).set_requires_grad(true);
  test::check_cpu_cuda([](const Tensors& in) { return softmax(in[0]); }, {m});
  CHECK_THROWS_AS(softmax(Tensor::zeros({2, 2}, DType::f64).detach().to(Device::cuda())), DTypeError);
}

TEST_CASE("softmax: errors") {
  CHECK(test::error_message([] { softmax(Tensor::scalar(1.0)); }) ==
        "[softmax] expected a tensor with at least 1 dim, got shape () (reshape a scalar to (1))");
  CHECK_THROWS_AS(log_softmax(Tensor::scalar(1.0)), ShapeError);
  CHECK_THROWS_AS(softmax(Tensor::zeros({2, 3}, DType::i32)), DTypeError);
  CHECK_THROWS_AS(log_softmax(Tensor::zeros({2, 3}, DType::u8)), DTypeError);
  CHECK_THROWS_AS(softmax(Tensor()), Error);
}

}  // namespace test_softmax
