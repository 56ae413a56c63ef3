// tests/autograd/test_factory.cpp — ones_like, zeros_like, arange_like (hand values, no
// gradient to x, observers see them), record_composite (one op for observers), to_dtype of
// integer masks.
#include "autograd/ops.h"
#include "cpu_cuda.h"
#include "helpers.h"
#include "op_names.h"

using namespace mase;

using test::OpNames;

TEST_CASE("factory: hand values, dtypes and shapes") {
  Tensor ids = Tensor::from(std::vector<int32_t>{5, 6, 7, 8, 9, 10}, {2, 3});
  Tensor o = ones_like(ids, DType::i32), z = zeros_like(ids, DType::f32);
  CHECK(o.shape() == Shape{2, 3});
  CHECK(o.dtype() == DType::i32);
  CHECK(o.to_vector<int32_t>() == std::vector<int32_t>(6, 1));
  CHECK(z.dtype() == DType::f32);
  CHECK(z.to_vector<float>() == std::vector<float>(6, 0.f));
  Tensor a = arange_like(ids, 1, DType::i32), a0 = arange_like(ids, -2, DType::f32);
  CHECK(a.shape() == Shape{3});
  CHECK(a.to_vector<int32_t>() == std::vector<int32_t>{0, 1, 2});  // ids' values are not read
  CHECK(a0.to_vector<float>() == std::vector<float>{0, 1});
  CHECK_THROWS_AS(arange_like(ids, 2, DType::i32), ShapeError);
  CHECK_THROWS_AS(ones_like(Tensor(), DType::f32), Error);
}

TEST_CASE("factory: x gets no gradient through them") {
  Tensor x = Tensor::from({1.0f, 2.0f, 3.0f}, {3}).set_requires_grad(true);
  // y = Σ x·ones + zeros: dy/dx = 1 from the product only
  backward(sum(x * ones_like(x, DType::f32) + zeros_like(x, DType::f32)));
  test::check_close(x.grad(), {1, 1, 1});
}

TEST_CASE("factory: observers see them and to_dtype converts masks") {
  OpNames names;
  Tensor ids = Tensor::from(std::vector<int32_t>{1, 0, 1}, {3});
  Tensor m = to_dtype(ones_like(ids, DType::i32), DType::f32);
  arange_like(ids, 0, DType::i32);
  zeros_like(ids, DType::u8);
  CHECK(names.ops ==
        std::vector<std::string>{"ones_like", "to_dtype", "arange_like", "zeros_like"});
  CHECK(m.to_vector<float>() == std::vector<float>{1, 1, 1});
  CHECK(to_dtype(ids, DType::f32).to_vector<float>() == std::vector<float>{1, 0, 1});
}

TEST_CASE("factory: record_composite shows one op and restores the observer") {
  Tensor q = test::random_tensor({1, 1, 2, 3}, 1, -1, 1, DType::f32);
  {
    OpNames names;
    Tensor out = sdpa(q, q, q, Tensor(), 0.0, false);
    CHECK(names.ops == std::vector<std::string>{"sdpa"});  // not matmul, softmax, …
    // (the CPU path is the fused kernel: the reference's numbers up to float rounding)
    const auto ref = sdpa_reference(q, q, q, Tensor(), 0.0, false).to_vector<float>();
    test::check_close(out, std::vector<double>(ref.begin(), ref.end()), 1e-6, 1e-6);
    // a body that throws: the observer is back afterwards
    CHECK_THROWS_AS(record_composite("boom", {q}, []() -> Tensor { throw ShapeError("x"); }),
                    ShapeError);
    neg(q);
    CHECK(names.ops.back() == "neg");
  }
  // no observer: just the body
  CHECK(record_composite("plain", {q}, [&] { return neg(q); }).to_vector<float>() ==
        neg(q).to_vector<float>());
}

TEST_CASE("factory: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor ids = Tensor::from(std::vector<int32_t>{3, 4, 5, 6}, {2, 2});
  Tensor g = ids.detach().to(Device::cuda());
  CHECK(ones_like(g, DType::f32).device() == g.device());
  CHECK(ones_like(g, DType::f32).to_vector<float>() == std::vector<float>(4, 1.f));
  CHECK(zeros_like(g, DType::i32).to_vector<int32_t>() == std::vector<int32_t>(4, 0));
  CHECK(arange_like(g, 1, DType::i32).to_vector<int32_t>() == std::vector<int32_t>{0, 1});
  CHECK(to_dtype(g, DType::f32).device() == g.device());
  CHECK(to_dtype(g, DType::f32).to_vector<float>() == std::vector<float>{3, 4, 5, 6});
}
