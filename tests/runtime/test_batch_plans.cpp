// tests/runtime/test_batch_plans.cpp — the host-side plans of the GPU's batched kernels: the
// grid of a batch of GEMMs (runtime/kernels/matmul.h: one cuBLAS call instead of B·NH) and the
// launches of the multi-tensor kernels (runtime/kernels/multi_tensor.h). Plain arithmetic,
// tested here without a GPU; the kernels themselves are tested CPU == CUDA
// (tests/autograd/test_matmul_batched.cpp, tests/train/test_gpu_step.cpp).
#include "helpers.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/multi_tensor.h"

using namespace mase;

namespace {

// Offsets of matrix (b, h) of a (B, NH, ...) batch with strides (sb, sh), row-major order.
std::vector<int64_t> grid_offsets(int64_t B, int64_t NH, int64_t sb, int64_t sh, int64_t first = 0) {
  std::vector<int64_t> o;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < NH; ++h) o.push_back(first + b * sb + h * sh);
  return o;
}

}  // namespace

TEST_CASE("batch_grid: head-split attention is a two-level grid") {
  // q (B=3, T=5, NH=4, HS=2) viewed (B, NH, T, HS): matrix (b, h) at b·T·C + h·HS, C = 8
  const auto a = grid_offsets(3, 4, 5 * 8, 2);
  const auto b = grid_offsets(3, 4, 5 * 8, 2, 1);  // k: the same layout, another buffer offset
  const auto c = grid_offsets(3, 4, 4 * 25, 25);    // the (B, NH, T, T) output, packed
  BatchGrid g;
  REQUIRE(batch_grid(12, a.data(), b.data(), c.data(), &g));
  CHECK(g.inner == 4);
  CHECK(g.first[0] == 0);
  CHECK(g.first[1] == 1);
  CHECK(g.outer_stride[0] == 40);
  CHECK(g.inner_stride[0] == 2);
  CHECK(g.outer_stride[2] == 100);
  CHECK(g.inner_stride[2] == 25);
}

TEST_CASE("batch_grid: evenly spaced matrices (and a shared one) are one level") {
  const auto a = grid_offsets(1, 6, 0, 10);
  const std::vector<int64_t> shared(6, 7);  // B broadcast: stride 0
  const auto c = grid_offsets(1, 6, 0, 4);
  BatchGrid g;
  REQUIRE(batch_grid(6, a.data(), shared.data(), c.data(), &g));
  CHECK(g.inner == 6);
  CHECK(g.inner_stride[0] == 10);
  CHECK(g.inner_stride[1] == 0);
  CHECK(g.first[1] == 7);
  // a (B, NH) batch whose batch stride is NH times the head stride is one level too
  const auto packed = grid_offsets(3, 4, 8, 2);
  REQUIRE(batch_grid(12, packed.data(), packed.data(), packed.data(), &g));
  CHECK(g.inner == 12);
  // one matrix, two matrices
  REQUIRE(batch_grid(1, a.data(), a.data(), a.data(), &g));
  CHECK(g.inner == 1);
  REQUIRE(batch_grid(2, a.data(), a.data(), a.data(), &g));
  CHECK(g.inner == 2);
  CHECK_FALSE(batch_grid(0, a.data(), a.data(), a.data(), &g));
}

TEST_CASE("batch_grid: irregular offsets are not a grid, and split into strided runs") {
  // 0 1 2 | 10 11 12 | 20 (7 matrices: 7 is not a multiple of the inner 3)
  const std::vector<int64_t> a = {0, 1, 2, 10, 11, 12, 20};
  BatchGrid g;
  CHECK_FALSE(batch_grid(7, a.data(), a.data(), a.data(), &g));
  CHECK(strided_run(7, 0, a.data(), a.data(), a.data()) == 3);
  CHECK(strided_run(7, 3, a.data(), a.data(), a.data()) == 3);
  CHECK(strided_run(7, 6, a.data(), a.data(), a.data()) == 1);
  // inner looks like 2, but the outer steps differ: 0 1 | 5 6 | 7 8
  const std::vector<int64_t> b = {0, 1, 5, 6, 7, 8};
  CHECK_FALSE(batch_grid(6, b.data(), b.data(), b.data(), &g));
  // the runs of several arrays end where any of them changes step
  const std::vector<int64_t> even = {0, 4, 8, 12, 16, 20};
  CHECK(strided_run(6, 0, even.data(), b.data(), even.data()) == 2);
  // b's steps are 1, 4, 1, 1, 1: runs {0, 1} and {2, 3, 4, 5}
  int64_t runs = 0;
  for (int64_t i = 0; i < 6; i += strided_run(6, i, even.data(), b.data(), even.data())) ++runs;
  CHECK(runs == 2);
  CHECK(strided_run(6, 2, even.data(), b.data(), even.data()) == 4);
}

TEST_CASE("plan_multi_tensor: every element in exactly one chunk, launches within limits") {
  // sizes: a chunk and a bit, tiny ones, an empty one, a big one spanning launches
  std::vector<int64_t> sizes = {kMultiTensorChunk + 1, 3, 0, 512};
  for (int i = 0; i < 50; ++i) sizes.push_back(100 + i);   // more tensors than one launch holds
  sizes.push_back(400 * kMultiTensorChunk + 17);            // more chunks than one launch holds
  const std::vector<MultiTensorLaunch> plan = plan_multi_tensor(sizes);
  std::vector<int64_t> covered(sizes.size(), 0);
  int32_t next_slot = 0;
  for (const MultiTensorLaunch& l : plan) {
    CHECK(l.tensors.size() <= size_t(kMultiTensorMax));
    CHECK(l.block_chunk.size() <= size_t(kMultiTensorBlocks));
    CHECK(l.block_chunk.size() == l.block_tensor.size());
    CHECK(l.block_slot.size() == l.block_tensor.size());
    for (size_t b = 0; b < l.block_chunk.size(); ++b) {
      CHECK(l.block_slot[b] == next_slot++);  // slots consecutive: the kernels rely on it
      const int32_t t = l.tensors.at(l.block_tensor[b]);
      const int64_t lo = int64_t(l.block_chunk[b]) * kMultiTensorChunk;
      CHECK(lo == covered[t]);  // chunks of a tensor in order, no gap, no overlap
      covered[t] = std::min(sizes[t], lo + kMultiTensorChunk);
    }
  }
  for (size_t t = 0; t < sizes.size(); ++t) CHECK(covered[t] == sizes[t]);
  CHECK(multi_tensor_chunks(plan) == next_slot);
  CHECK(plan.size() >= 3);  // 53 tensors need two launches; 401 chunks need two more
  CHECK(plan_multi_tensor({}).empty());
  CHECK(plan_multi_tensor({0, 0}).empty());
}
