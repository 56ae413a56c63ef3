// tests/train/test_trainer_gpu_flags.cpp — the trainer's issue-23 flags end to end on the
// made-up IMDb: --profile writes the step profile (on the CPU, with the host clock), and on a
// GPU --cuda-graphs trains like the uncaptured step and --deterministic repeats a run bit for bit.
#include <fstream>
#include <iterator>

#include "helpers.h"
#include "trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::TrainFixture;

TEST_CASE("trainer: --profile N writes the step profile to the run folder") {
  TrainFixture fx;
  TrainConfig c = fx.config("prof");
  c.epochs = 1;  // 12 steps: 3 warm-up, 4 profiled, 5 plain
  c.profile = 4;
  TrainResult r = train_new(c, fx.null);
  REQUIRE(r.status == TrainStatus::completed);
  std::ifstream in(fx.run("prof") / "profile.md");
  REQUIRE(in.good());
  const std::string table((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  for (const char* row : {"| forward (CPU) |", "| backward (CPU) |", "| clip (CPU) |",
                          "| optimizer (CPU) |", "| GEMM |", "| LayerNorm |", "| op class (CPU) |"})
    CHECK_MESSAGE(table.find(row) != std::string::npos, row);
  for (const char* gpu_only : {"(GPU", "host syncs", "kernel launches", "cudaMalloc"})
    CHECK_MESSAGE(table.find(gpu_only) == std::string::npos, gpu_only);
  TrainConfig bad = fx.config("bad");
  bad.profile = -1;
  CHECK_THROWS_AS(bad.validate(), ConfigError);
}

TEST_CASE("trainer: --cuda-graphs and --deterministic on the GPU") {
  if (!test::have_gpu()) return;
  TrainFixture fx;
  auto run = [&](const char* name, bool graphs) {
    TrainConfig c = fx.config(name);
    c.device = "cuda";
    c.bucketing = false;  // one batch shape (but the last): graphs replay from step 3
    c.cuda_graphs = graphs;
    c.deterministic = true;
    return train_new(c, fx.null);
  };
  TrainResult eager = run("eager", false), graphed = run("graphed", true),
              again = run("again", true);
  REQUIRE(graphed.status == TrainStatus::completed);
  REQUIRE(graphed.losses.size() == eager.losses.size());
  for (size_t i = 0; i < eager.losses.size(); ++i) {
    CHECK(graphed.losses[i] == doctest::Approx(eager.losses[i]).epsilon(1e-5));
    CHECK(again.losses[i] == graphed.losses[i]);  // --deterministic: bit for bit
  }
}
