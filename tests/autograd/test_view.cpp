// tests/autograd/test_view.cpp — shape ops: reshape (-1, the copying case), view, transpose,
// permute, slice (step, negative and clamped indices), select, squeeze, unsqueeze, expand,
// contiguous, concat, to_dtype. Values, shared storage where a view is promised, gradcheck,
// errors.
#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"

using namespace mase;
using mase::test::arange;
using mase::test::check_close;
using mase::test::random_f64;

TEST_CASE("reshape and view: -1 and shared storage and the copying case") {
  Tensor x = arange({2, 3});
  Tensor r = reshape(x, {3, -1});
  CHECK(r.shape() == Shape{3, 2});
  CHECK(r.storage() == x.storage());  // contiguous: a view
  check_close(r, {0, 1, 2, 3, 4, 5});
  CHECK(view(x, {6}).storage() == x.storage());
  // xᵀ = [[0 3] [1 4] [2 5]] is not contiguous: reshape copies, in xᵀ's logical order
  Tensor rt = reshape(transpose(x, 0, 1), {6});
  CHECK(rt.storage() != x.storage());
  check_close(rt, {0, 3, 1, 4, 2, 5});
  // a slice at an offset keeps it: rows 1.. of a (3, 2)
  check_close(reshape(slice(arange({3, 2}), 0, 1, 3), {-1}), {2, 3, 4, 5});
  CHECK_THROWS_AS(reshape(x, Shape{}), ShapeError);    // 6 elements cannot be 0-d
  CHECK(reshape(arange({1, 1}), Shape{}).item() == 0.0);  // 1 element can
}

TEST_CASE("transpose and permute: values and strides") {
  Tensor x = arange({2, 3, 4});  // x[i, j, k] = 12i + 4j + k
  Tensor t = transpose(x, 0, -1);    // (4, 3, 2): t[k, j, i] = x[i, j, k]
  CHECK(t.shape() == Shape{4, 3, 2});
  CHECK(t.storage() == x.storage());
  auto tv = t.to_vector<float>();
  CHECK(tv[(3 * 3 + 1) * 2 + 1] == 12 + 4 + 3);  // t[3, 1, 1] = x[1, 1, 3]
  Tensor p = permute(x, {2, 0, 1});  // (4, 2, 3): p[k, i, j] = x[i, j, k]
  CHECK(p.shape() == Shape{4, 2, 3});
  CHECK(p.strides() == Strides{1, 12, 4});
  auto pv = p.to_vector<float>();
  CHECK(pv[(2 * 2 + 1) * 3 + 2] == 12 + 8 + 2);  // p[2, 1, 2] = x[1, 2, 2]
  check_close(permute(permute(x, {2, 0, 1}), {1, 2, 0}), x.to_vector<double>());  // inverse
}

TEST_CASE("slice and select: steps and negative and clamped indices") {
  Tensor x = arange({10});
  check_close(slice(x, 0, 2, 9, 3), {2, 5, 8});
  check_close(slice(x, 0, -8, -1, 3), {2, 5, 8});  // -8 -> 2, -1 -> 9
  check_close(slice(x, 0, -100, 100, 4), {0, 4, 8});  // clamped to [0, 10)
  CHECK(slice(x, 0, 7, 3).numel() == 0);           // start after end: empty
  Tensor m = arange({3, 4});
  check_close(slice(m, -1, 1, 4, 2), {1, 3, 5, 7, 9, 11});  // columns 1 and 3
  CHECK(slice(m, 1, 1, 4, 2).storage() == m.storage());
  check_close(select(m, 1, -1), {3, 7, 11});  // the last column
  check_close(select(m, 0, 1), {4, 5, 6, 7});
  CHECK(select(m, 0, 1).shape() == Shape{4});
  check_close(select(select(m, 0, 2), 0, 1), {9});  // 0-d
}

TEST_CASE("squeeze unsqueeze expand contiguous: values and shapes") {
  Tensor x = arange({3, 1});
  CHECK(squeeze(x, 1).shape() == Shape{3});
  CHECK(squeeze(x, -1).shape() == Shape{3});
  CHECK(unsqueeze(arange({3}), 0).shape() == Shape{1, 3});
  CHECK(unsqueeze(arange({3}), -1).shape() == Shape{3, 1});  // -1 = the new last dim
  CHECK(unsqueeze(arange({2, 3}), 1).shape() == Shape{2, 1, 3});
  // expand (3, 1) to (2, 3, 4): stride 0 on the new and the broadcast dims
  Tensor e = expand(x, {2, -1, 4});
  CHECK(e.shape() == Shape{2, 3, 4});
  CHECK(e.strides() == Strides{0, 1, 0});
  check_close(e, {0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2});
  // contiguous: a packed copy of a view, a new handle (same storage) of a packed tensor
  Tensor m = arange({2, 3});
  Tensor c = contiguous(transpose(m, 0, 1));
  CHECK(c.is_contiguous());
  CHECK(c.storage() != m.storage());
  check_close(c, {0, 3, 1, 4, 2, 5});
  Tensor same = contiguous(m);
  CHECK(!same.is_same(m));
  CHECK(same.storage() == m.storage());
}

TEST_CASE("concat and to_dtype: values") {
  Tensor a = arange({2, 2}), b = arange({2, 1}) + 10.0;
  check_close(concat({a, b}, 1), {0, 1, 10, 2, 3, 11});  // [[0 1 10] [2 3 11]]
  check_close(concat({a, a}, 0), {0, 1, 2, 3, 0, 1, 2, 3});
  check_close(concat({a, transpose(a, 0, 1)}, -2), {0, 1, 2, 3, 0, 2, 1, 3});  // views are fine
  Tensor d = to_dtype(Tensor::from({1.5f, -2}, {2}), DType::f64);
  CHECK(d.dtype() == DType::f64);
  CHECK(d.to_vector<double>() == std::vector<double>{1.5, -2});
  // the gradient goes back in the input's dtype: y = 3·to_dtype(x, f64), dx = 3 in f32
  Tensor x = Tensor::from({1, 2}, {2}).set_requires_grad(true);
  backward(sum(to_dtype(x, DType::f64) * 3.0));
  CHECK(x.grad().dtype() == DType::f32);
  check_close(x.grad(), {3, 3});
  Tensor same = to_dtype(x, DType::f32);
  CHECK(!same.is_same(x));
}

TEST_CASE("view ops: hand-checked gradients") {
  Tensor x = arange({10}).set_requires_grad(true);
  backward(sum(slice(x, 0, -8, -1, 3) * 2.0));  // elements 2, 5, 8 get 2
  check_close(x.grad(), {0, 0, 2, 0, 0, 2, 0, 0, 2, 0});
  Tensor y = Tensor::from({1, 2, 3}, {3, 1}).set_requires_grad(true);
  backward(sum(expand(y, {2, 3, 4})));  // each element is used 2·4 = 8 times
  check_close(y.grad(), {8, 8, 8});
  Tensor a = arange({2, 2}).set_requires_grad(true),
         b = arange({2, 1}).set_requires_grad(true);
  backward(concat({a, b}, 1), Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}));
  check_close(a.grad(), {1, 2, 4, 5});
  check_close(b.grad(), {3, 6});
}

TEST_CASE("view ops: gradcheck in f64") {
  Tensor x = random_f64({2, 3, 4}, 1);
  using F = std::function<Tensor(const Tensors&)>;
  std::vector<std::pair<const char*, F>> cases{
      {"reshape", [](const Tensors& t) { return reshape(t[0], {4, -1}); }},
      {"reshape copy", [](const Tensors& t) { return reshape(transpose(t[0], 0, 2), {-1, 6}); }},
      {"view", [](const Tensors& t) { return view(t[0], {6, 4}); }},
      {"transpose", [](const Tensors& t) { return transpose(t[0], 1, -1); }},
      {"permute", [](const Tensors& t) { return permute(t[0], {2, 0, 1}); }},
      {"slice", [](const Tensors& t) { return slice(t[0], -1, -3, 4, 2); }},
      {"select", [](const Tensors& t) { return select(t[0], 1, -2); }},
      {"squeeze", [](const Tensors& t) { return squeeze(unsqueeze(t[0], 1), 1); }},
      {"unsqueeze", [](const Tensors& t) { return unsqueeze(t[0], -1); }},
      {"expand", [](const Tensors& t) { return expand(slice(t[0], 1, 0, 1), {3, 2, 5, 4}); }},
      {"contiguous", [](const Tensors& t) { return contiguous(transpose(t[0], 0, 1)); }},
      {"concat", [](const Tensors& t) { return concat({t[0], t[0] * 2.0}, 1); }},
      {"to_dtype", [](const Tensors& t) { return to_dtype(t[0], DType::f64); }},
  };
  for (const auto& [name, f] : cases) {
    INFO(name);
    CHECK(gradcheck(f, {x}));
  }
  auto concat3 = [](const Tensors& t) { return concat({t[0], t[1], t[0]}, -1); };
  CHECK(gradcheck(concat3, {random_f64({2, 3}, 2), random_f64({2, 1}, 3)}));
}

TEST_CASE("view ops: CPU == CUDA") {
  if (!test::have_gpu()) return;
  Tensor x = rand({2, 3, 4});
  Tensor xg = x.detach().to(Device::cuda());
  check_close(reshape(transpose(xg, 0, 2), {-1}).detach().to(Device::cpu()),
              reshape(transpose(x, 0, 2), {-1}), 0, 0);
  check_close(contiguous(slice(xg, 2, 1, 4, 2)).detach().to(Device::cpu()), contiguous(slice(x, 2, 1, 4, 2)),
              0, 0);
  check_close(concat({xg, xg}, 1).detach().to(Device::cpu()), concat({x, x}, 1), 0, 0);
  Tensor w = rand({3, 1}).set_requires_grad(true);
  Tensor wg = w.detach().to(Device::cuda()).set_requires_grad(true);
  backward(sum(expand(w, {2, 3, 4}) * x));
  backward(sum(expand(wg, {2, 3, 4}) * xg));
  check_close(wg.grad().detach().to(Device::cpu()), w.grad(), 1e-5);
}

TEST_CASE("view ops: errors") {
  Tensor x = arange({2, 3});
  CHECK(test::error_message([&] { view(transpose(x, 0, 1), {6}); }) ==
        "[view] cannot view a non-contiguous tensor (3, 2) as (6) (use reshape, which copies, or "
        "contiguous() first)");
  CHECK(test::error_message([&] { reshape(x, {4, -1}); }) ==
        "[reshape] cannot reshape (2, 3) (6 elements) to (4, -1)");
  CHECK_THROWS_AS(reshape(x, {-1, -1}), ShapeError);
  CHECK_THROWS_AS(reshape(x, {4}), ShapeError);
  CHECK(test::error_message([&] { permute(x, {0, 0}); }) == "[permute] dim 0 appears twice");
  CHECK_THROWS_AS(permute(x, {0}), ShapeError);
  CHECK_THROWS_AS(slice(x, 0, 0, 2, 0), ShapeError);  // step 0
  CHECK(test::error_message([&] { select(x, 1, 3); }) ==
        "[select] index 3 out of range for dim 1 of size 3");
  CHECK_THROWS_AS(select(x, 0, -3), ShapeError);
  CHECK(test::error_message([&] { squeeze(x, 0); }) ==
        "[squeeze] expected dim 0 of size 1, got (2, 3)");
  CHECK(test::error_message([&] { expand(x, {4, 3}); }) ==
        "[expand] cannot expand (2, 3) to (4, 3) (dim 0)");
  CHECK(test::error_message([&] { expand(x, {-1, 2, 3}); }) ==
        "[expand] expected a size >= 0 for new dim 0, got (-1, 2, 3) "
        "(-1 keeps an existing dim only)");
  CHECK_THROWS_AS(expand(arange({1}), {-2}), ShapeError);
  CHECK_THROWS_AS(expand(x, {3}), ShapeError);
  CHECK(test::error_message([&] { concat({x, arange({2, 2})}, 0); }) ==
        "[concat] shapes differ outside dim 0: (2, 3) and (2, 2)");
  CHECK_THROWS_AS(concat({}, 0), ShapeError);
  CHECK_THROWS_AS(concat({x, Tensor::zeros({2, 3}, DType::f64)}, 0), DTypeError);
  CHECK_THROWS_AS(concat({x, test::fake_cuda({2, 3})}, 0), DeviceError);
}
