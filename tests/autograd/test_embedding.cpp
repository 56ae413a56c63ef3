// tests/autograd/test_embedding.cpp — embedding: gathered rows, scatter-added gradients
// (repeated ids), determinism across thread counts, gradcheck, errors.
#include <cmath>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/parallel.h"

using namespace mase;
using mase::test::check_close;

namespace {
Tensor ids_of(const std::vector<int32_t>& v, const Shape& s) { return Tensor::from(v, s); }
}  // namespace

TEST_CASE("embedding: hand-checked rows and scatter-added gradient") {
  // weight row v = [10v, 10v + 1, 10v + 2]
  Tensor w =
      Tensor::from({0, 1, 2, 10, 11, 12, 20, 21, 22, 30, 31, 32}, {4, 3}).set_requires_grad(true);
  Tensor ids = ids_of({3, 0, 1, 3}, {2, 2});
  Tensor y = embedding(ids, w);
  CHECK(y.shape() == Shape{2, 2, 3});
  check_close(y, {30, 31, 32, 0, 1, 2, 10, 11, 12, 30, 31, 32});
  // dout rows [1 2 3] [4 5 6] [7 8 9] [10 11 12] go to rows 3, 0, 1, 3 of dweight:
  // row 0 = [4 5 6], row 1 = [7 8 9], row 2 = 0, row 3 = [1+10, 2+11, 3+12] = [11 13 15]
  backward(y, Tensor::from({1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12}, {2, 2, 3}));
  check_close(w.grad(), {4, 5, 6, 7, 8, 9, 0, 0, 0, 11, 13, 15});
  // a 0-d id gives one row of shape (C)
  Tensor one = embedding(ids_of({2}, {}), w);
  CHECK(one.shape() == Shape{3});
  check_close(one, {20, 21, 22});
}

TEST_CASE("embedding: backward equals a serial scatter-add and is the same on 1 and 2 threads") {
  // N = 6000 ids over V = 7 rows (each row used ~850 times), C = 40 columns: the column blocks
  // of the backward run in parallel. Oracle: a plain serial loop accumulating in double.
  const int64_t N = 6000, V = 7, C = 40;
  std::vector<int32_t> idv(N);
  for (int64_t n = 0; n < N; ++n) idv[n] = static_cast<int32_t>((n * n + 3 * n) % V);
  Tensor ids = ids_of(idv, {N});
  Generator g(5);
  Tensor dout = rand({N, C}, g);
  auto grad_with_threads = [&](int threads) {
    int prev = num_threads();
    set_num_threads(threads);
    Tensor w = Tensor::zeros({V, C}).set_requires_grad(true);
    backward(embedding(ids, w), dout);
    set_num_threads(prev);
    return w.grad().to_vector<float>();
  };
  std::vector<float> g1 = grad_with_threads(1), g2 = grad_with_threads(2);
  CHECK(g1 == g2);  // bit-identical: each element is summed in the same order
  std::vector<double> expected(V * C, 0.0);
  auto dv = dout.to_vector<float>();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c) expected[idv[n] * C + c] += dv[n * C + c];
  check_close(Tensor::from(g2, {V, C}), expected, 1e-3, 1e-5);
}

TEST_CASE("embedding: gradcheck in f64") {
  Generator g(11);
  Tensor w = Tensor::empty({5, 3}, DType::f64);
  uniform_(w, -1, 1, g);
  w.set_requires_grad(true);
  Tensor ids = ids_of({4, 1, 1, 0, 4, 4}, {2, 3});  // repeats, and row 2 and 3 unused
  CHECK(gradcheck([ids](const Tensors& x) { return embedding(ids, x[0]); }, {w}));
  // a transposed (non-contiguous) weight is packed first; the gradient flows back through it
  Tensor wt = Tensor::empty({3, 5}, DType::f64);
  uniform_(wt, -1, 1, g);
  wt.set_requires_grad(true);
  CHECK(gradcheck([ids](const Tensors& x) { return embedding(ids, transpose(x[0], 0, 1)); }, {wt}));
}

TEST_CASE("embedding: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor w = rand({50, 16}).set_requires_grad(true);
  Tensor ids = ids_of({3, 49, 0, 3, 3, 17, 49, 8}, {2, 4});
  Tensor wg = w.detach().to(Device::cuda()).set_requires_grad(true);
  Tensor dout = rand({2, 4, 16});
  Tensor y = embedding(ids, w), yg = embedding(ids.detach().to(Device::cuda()), wg);
  check_close(yg.detach().to(Device::cpu()), y, 0, 0);  // a gather is exact
  backward(y, dout);
  backward(yg, dout.detach().to(Device::cuda()));
  check_close(wg.grad().detach().to(Device::cpu()), w.grad(), 0, 0);  // the CPU's order of adds, exactly
  // a large batch over a small table: every range of the vocabulary has many rows to add
  std::vector<int32_t> many(8192);
  for (size_t i = 0; i < many.size(); ++i) many[i] = static_cast<int32_t>((i * 7919) % 50);
  Tensor big = ids_of(many, {32, 256});
  Tensor dbig = rand({32, 256, 16});
  w.set_grad(Tensor());
  wg.set_grad(Tensor());
  backward(embedding(big, w), dbig);
  backward(embedding(big.detach().to(Device::cuda()), wg), dbig.detach().to(Device::cuda()));
  check_close(wg.grad().detach().to(Device::cpu()), w.grad(), 0, 0);
  // token types: one id for every row (a single thread's run of 8,192 adds, in order), and
  // runs of repeated ids that cross the groups and tiles of the kernel
  for (int pattern = 0; pattern < 2; ++pattern) {
    for (size_t i = 0; i < many.size(); ++i)
      many[i] = pattern == 0 ? 1 : static_cast<int32_t>((i / 37) % 3);
    Tensor same = ids_of(many, {32, 256});
    w.set_grad(Tensor());
    wg.set_grad(Tensor());
    backward(embedding(same, w), dbig);
    backward(embedding(same.detach().to(Device::cuda()), wg), dbig.detach().to(Device::cuda()));
    check_close(wg.grad().detach().to(Device::cpu()), w.grad(), 0, 0);
  }
  // CUDA ids are checked on the device: a bad one gives a NaN row, never a read outside
  Tensor bad = embedding(ids_of({1, 50, -2}, {3}).detach().to(Device::cuda()), wg.detach());
  std::vector<float> v = bad.to_vector<float>();
  CHECK(v[0] == w.detach().to_vector<float>()[16]);
  CHECK(std::isnan(v[16]));
  CHECK(std::isnan(v[32]));
}

TEST_CASE("embedding: errors name the bad id and the vocabulary size") {
  Tensor w = Tensor::zeros({4, 3});
  CHECK(test::error_message([&] { embedding(ids_of({0, 2, 4}, {3}), w); }) ==
        "[embedding] expected ids in [0, 4), got id 4 at flat index 2 (weight is (4, 3): does the "
        "tokenizer's vocabulary match it?)");
  CHECK_THROWS_AS(embedding(ids_of({-1}, {1}), w), ShapeError);
  CHECK(test::error_message([&] { embedding(Tensor::zeros({2}), w); }) ==
        "[embedding] expected ids to be i32, got f32");
  CHECK_THROWS_AS(embedding(ids_of({0}, {1}), Tensor::zeros({4})), ShapeError);
  CHECK_THROWS_AS(embedding(ids_of({0}, {1}), Tensor::zeros({4, 3}, DType::i32)), DTypeError);
  CHECK_THROWS_AS(embedding(ids_of({0}, {1}), test::fake_cuda({4, 3})), DeviceError);
}
