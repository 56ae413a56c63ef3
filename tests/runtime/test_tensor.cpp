// tests/runtime/test_tensor.cpp — Tensor basics: factories, views, copies, errors, printing.
#include "helpers.h"
#include "runtime/allocator.h"
#include "runtime/tensor.h"

using namespace mase;
using mase::test::check_close;

TEST_CASE("shapes print and broadcast like NumPy") {
  CHECK(to_string(Shape{8, 128, 768}) == "(8, 128, 768)");
  CHECK(to_string(Shape{}) == "()");
  CHECK(broadcast_shapes({8, 1, 3}, {4, 3}, "t") == Shape{8, 4, 3});
  CHECK_THROWS_AS(broadcast_shapes({2, 3}, {4}, "add"), ShapeError);
  CHECK(test::error_message([] { broadcast_shapes({2, 3}, {4}, "add"); }) ==
        "[add] shapes (2, 3) and (4) do not broadcast (dim 1: 3 vs 4)");
  CHECK(contiguous_strides({2, 3, 4}) == Strides{12, 4, 1});
  CHECK(normalize_dim(-1, 3, "t") == 2);
  CHECK_THROWS_AS(normalize_dim(3, 3, "t"), ShapeError);
}

TEST_CASE("factories fill values and report metadata") {
  Tensor t = Tensor::full({2, 3}, 2.5);
  CHECK(t.numel() == 6);
  CHECK(t.dtype() == DType::f32);
  CHECK(t.is_contiguous());
  check_close(t, {2.5, 2.5, 2.5, 2.5, 2.5, 2.5});
  Tensor i = Tensor::from(std::vector<int32_t>{1, 2, 3}, {3});
  CHECK(i.dtype() == DType::i32);
  CHECK(i.to_vector<int32_t>() == std::vector<int32_t>{1, 2, 3});
  CHECK_THROWS_AS(Tensor::from({1, 2, 3}, {2, 2}), ShapeError);
  CHECK_THROWS_AS(t.data<double>(), DTypeError);
  CHECK(Tensor::scalar(3).item() == 3.0);
}

TEST_CASE("as_strided views share storage and contiguous() packs a copy") {
  Tensor t = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor tt = t.as_strided({3, 2}, {1, 3}, 0);  // the transpose
  CHECK(!tt.is_contiguous());
  CHECK(tt.storage() == t.storage());
  check_close(tt, {1, 4, 2, 5, 3, 6});
  Tensor c = tt.contiguous();
  CHECK(c.is_contiguous());
  CHECK(c.storage() != t.storage());
  check_close(c, {1, 4, 2, 5, 3, 6});
  CHECK(t.contiguous().is_same(t));  // already packed: no copy
  // a view that would read past the end of the storage is refused
  CHECK_THROWS_AS(t.as_strided({3, 3}, {3, 1}, 0), ShapeError);
}

TEST_CASE("copy_ converts dtypes and writes through strides") {
  Tensor src = Tensor::from({1.5f, -2.0f, 3.25f, 4.0f}, {2, 2});
  Tensor d = Tensor::zeros({2, 2}, DType::f64);
  copy_(d, src);
  CHECK(d.to_vector<double>() == std::vector<double>{1.5, -2.0, 3.25, 4.0});
  Tensor dst = Tensor::zeros({2, 2});
  copy_(dst.as_strided({2, 2}, {1, 2}, 0), src);  // write transposed
  check_close(dst, {1.5, 3.25, -2.0, 4.0});
  CHECK_THROWS_AS(copy_(dst, Tensor::zeros({3})), ShapeError);
}

TEST_CASE("printing shows shape and dtype and device and values") {
  Tensor t = Tensor::from({1, 2, 3, 4}, {2, 2});
  CHECK(t.str() == "tensor((2, 2), f32, cpu)\n[[1, 2],\n [3, 4]]");
  Tensor big = Tensor::zeros({10});
  CHECK(big.str() == "tensor((10), f32, cpu)\n[0, 0, 0, ..., 0, 0, 0]");
}

TEST_CASE("moving to CUDA: a clear error without a GPU and a round trip with one") {
  Tensor t = Tensor::from({1, 2, 3}, {3});
  if (cuda_device_count() == 0) {
    CHECK_THROWS_AS(t.to(Device::cuda(0)), DeviceError);
    return;
  }
  Tensor g = t.to(Device::cuda(0));
  CHECK(g.is_cuda());
  check_close(g.detach().to(Device::cpu()), {1, 2, 3});
}

TEST_CASE("devices parse from strings") {
  CHECK(Device::parse("cpu") == Device::cpu());
  CHECK(Device::parse("cuda:1") == Device::cuda(1));
  CHECK_THROWS_AS(Device::parse("gpu"), ConfigError);
}

TEST_CASE("the caching allocator reuses freed blocks") {
  CHECK(size_class(1) == 512);
  CHECK(size_class(1000) == 1024);
  CHECK(size_class(1025) == 1152);  // 9·2^7: at most 1/8 waste
  { Tensor warm = Tensor::empty({1000, 1000}); }
  auto before = allocator_stats();
  for (int i = 0; i < 10; ++i) {
    Tensor a = Tensor::empty({1000, 1000});  // same size class each time
    Tensor b = Tensor::empty({999, 1001});
  }
  auto after = allocator_stats();
  CHECK(after.os_allocs - before.os_allocs <= 1);  // at most b's first block
}

TEST_CASE("from_storage views borrowed memory without a copy and checks its bounds") {
  auto host = std::make_shared<std::vector<float>>(std::vector<float>{1, 2, 3, 4, 5, 6});
  auto storage = std::make_shared<Storage>(host->data(), host->size() * sizeof(float),
                                           Device::cpu(), host);
  Tensor t = Tensor::from_storage(storage, {2, 2}, {1, 2}, 1, DType::f32);  // [[2 4] [3 5]]
  check_close(t, {2, 4, 3, 5});
  (*host)[1] = 20;  // the same memory: no copy was made
  check_close(t, {20, 4, 3, 5});
  CHECK(test::error_message([&] { Tensor::from_storage(storage, {2, 3}, {3, 1}, 1, DType::f32); }) ==
        "[as_strided] view (2, 3) at offset 1 reaches outside its storage of 24 bytes");
  CHECK_THROWS_AS(Tensor::from_storage(storage, {-1}, {1}, 0, DType::f32), ShapeError);
}
