// tests/train/test_data_parallel.cpp — the parts of data-parallel training (train/
// data_parallel.h) that one process can check: --dist's values, the refusals before any
// rank starts, and NCCL at world size 1 on a GPU (skipped visibly without one): its
// all-reduce of a single rank leaves the gradients as they were, and a training step through
// it equals the plain step. The 2-rank MPI run against 1 process is
// tests/tools/mase_train_mpi.sh (ctest: "mpirun 2 ranks equal 1 process").
#include <doctest/doctest.h>

#include "helpers.h"
#include "runtime/error.h"
#include "runtime/kernels/allreduce.h"
#include "train/data_parallel.h"

using namespace mase;
using namespace mase::train;

TEST_CASE("data parallel: --dist values; auto is none outside mpirun") {
  CHECK(parse_dist("none") == DistBackend::none);
  CHECK(parse_dist("mpi") == DistBackend::mpi);
  CHECK(parse_dist("nccl") == DistBackend::nccl);
  if (!cpu::mpi_launched()) CHECK(parse_dist("auto") == DistBackend::none);
  CHECK_THROWS_WITH_AS(parse_dist("gloo"),
                       "[dist] expected --dist auto, none, mpi or nccl, got 'gloo'", ConfigError);
  CHECK(rank_seed(42, 0) == 42);  // rank 0's seed is the one checkpoints record
  CHECK(rank_seed(42, 1) != 42);
  CHECK(rank_seed(42, 1) != rank_seed(42, 2));
}

// 45 reviews in batches of 8 end each epoch with a batch of 5 rows, which 2 ranks cannot
// share: mpirun -np 2 ran to that batch (anywhere in the epoch, bucketing shuffles the batches)
// and died there with "try --batch-size 6". Now refused before the run folder is made.
TEST_CASE("data parallel: an epoch whose last batch cannot split over the ranks is refused") {
  CHECK_NOTHROW(check_epoch_splits(48, 8, 2));     // no shorter batch
  CHECK_NOTHROW(check_epoch_splits(46, 8, 2));     // a last batch of 6: 3 rows each
  CHECK_NOTHROW(check_epoch_splits(25000, 32, 8)); // IMDb's 8 rows: one each
  CHECK_NOTHROW(check_epoch_splits(45, 8, 1));
  CHECK_THROWS_WITH_AS(check_epoch_splits(45, 8, 2),
                       "[dist] expected every batch to split evenly over the 2 ranks, got a last "
                       "batch of 5 rows (45 training reviews in batches of 8: --train-subset 44, "
                       "or another --batch-size)",
                       ConfigError);
  CHECK_THROWS_WITH_AS(check_epoch_splits(25000, 30, 3),
                       doctest::Contains("a last batch of 10 rows (25000 training reviews in "
                                         "batches of 30: --train-subset 24999"),
                       ConfigError);
  CHECK_NOTHROW(check_epoch_splits(24999, 30, 3));  // what the hint says: a last batch of 9
}

TEST_CASE("data parallel: nccl on a CPU device and mpi on a GPU are refused before starting") {
  CHECK_THROWS_WITH_AS(DataParallel::start(DistBackend::nccl, Device::cpu()),
                       doctest::Contains("--dist nccl expected --device cuda, got cpu"),
                       ConfigError);
  CHECK_THROWS_WITH_AS(DataParallel::start(DistBackend::mpi, Device::cuda(0)),
                       doctest::Contains("--dist mpi expected a CPU device, got cuda:0"),
                       ConfigError);
}

TEST_CASE("data parallel: NCCL at world size 1 averages a gradient to itself on the GPU") {
  if (!test::have_gpu()) return;
  REQUIRE(cuda::nccl_built());
  std::unique_ptr<DataParallel> dp = DataParallel::start(DistBackend::nccl, Device::cuda(0));
  CHECK(dp->world() == 1);
  CHECK(dp->rank() == 0);
  Tensor p = Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}).to(Device::cuda(0));
  p.set_requires_grad(true);
  const std::vector<float> g = {0.5f, -1.25f, 3.0f, 1e-7f, -0.0f, 7.75f};
  p.set_grad(Tensor::from(g, {2, 3}).to(Device::cuda(0)));
  Tensor missing = Tensor::zeros({4}, DType::f32, Device::cuda(0));
  missing.set_requires_grad(true);  // no gradient yet: gets zeros, as on every rank
  dp->average_gradients({p, missing});
  CHECK(p.grad().to_vector<float>() == g);  // Σ over one rank × 1/1: bit-exact
  CHECK(missing.grad().to_vector<float>() == std::vector<float>(4, 0.0f));
  CHECK(dp->last_seconds() >= 0);
  std::pair<int64_t, int64_t> rows = dp->share(32);
  CHECK(rows == std::pair<int64_t, int64_t>{0, 32});
}
