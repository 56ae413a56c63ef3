// tests/runtime/test_profiler.cpp — the step profiler's bookkeeping (runtime/profiler.h) with a
// fake timeline whose stamp times are chosen by hand, the op classes, and the summary table.
// (Stamps from real ops: tests/autograd/test_profiler_ops.cpp.)
#include <map>

#include "helpers.h"
#include "runtime/profiler.h"

using namespace mase;
using namespace mase::profile;

namespace {

// Stamp i is taken at times[i] ms; a hold is remembered.
class FakeTimeline final : public Timeline {
 public:
  explicit FakeTimeline(std::vector<double> times, double* held = nullptr)
      : times_(std::move(times)), held_(held) {}
  void stamp(size_t i) override { taken_ = std::max(taken_, i + 1); }
  double ms_between(size_t a, size_t b) override {
    REQUIRE(b < taken_);
    return times_.at(b) - times_.at(a);
  }
  bool hold(double ms) override {
    if (held_) *held_ = ms;
    return true;
  }

 private:
  std::vector<double> times_;
  double* held_;
  size_t taken_ = 0;
};

}  // namespace

TEST_CASE("profiler: stretches between stamps go to the later stamp's op and phase") {
  // stamps: 0 phase(data) @0 | 1 phase(forward) @2 | 2 linear @5 | 3 gelu @6 | 4 sdpa @10
  //         5 phase(backward) @11 | 6 linear' @17 | 7 phase(optimizer) @18 | 8 end @21
  Profiler prof(std::make_unique<FakeTimeline>(
      std::vector<double>{0, 2, 5, 6, 10, 11, 17, 18, 21}));
  prof.begin_step();
  mark_phase("data");
  mark_phase("forward");
  op_done("linear", false);
  op_done("gelu", false);
  {
    Nested inside;             // the body of a composite: not stamped on its own
    op_done("matmul", false);
    op_done("softmax", false);
  }
  op_done("sdpa", false);
  mark_phase("backward");
  op_done("linear", true);
  mark_phase("optimizer");
  StepProfile p = prof.end_step();
  CHECK(p.stamps == 9);
  CHECK(p.span_ms == 21);                  // from the first phase's start to the end
  CHECK(p.phase_ms("data") == 2);          // (0, 2]
  CHECK(p.phase_ms("forward") == 9);       // (2, 11]: 3 + 1 + 4 + the 1 ms after sdpa
  CHECK(p.phase_ms("backward") == 7);      // (11, 18]
  CHECK(p.phase_ms("optimizer") == 3);     // (18, 21]
  CHECK(p.phase_ms("nothing") == 0);
  CHECK(p.class_ms[size_t(OpClass::gemm)][0] == 3);
  CHECK(p.class_ms[size_t(OpClass::gemm)][1] == 6);
  CHECK(p.class_ms[size_t(OpClass::elementwise)][0] == 1);
  CHECK(p.class_ms[size_t(OpClass::attention)][0] == 4);   // the nested matmul/softmax inside
  CHECK(p.class_count[size_t(OpClass::gemm)][0] == 1);
  CHECK(p.class_count[size_t(OpClass::softmax)][0] == 0);
  // outside ops: data 2 + forward's tail 1 + backward's tail 1 + optimizer 3
  CHECK(p.class_total(OpClass::outside) == 7);
  CHECK(p.host_syncs == 0);  // no GPU in this process
  double all = 0;
  for (size_t c = 0; c < kNumClasses; ++c) all += p.class_total(OpClass(c));
  CHECK(all == p.span_ms);   // every stretch is charged exactly once
}

TEST_CASE("profiler: a held step excludes the hold; ops outside a step are not stamped") {
  double held = 0;
  // 0 before the hold @0 | 1 phase(forward) @100 | 2 add @103 | 3 end @104
  Profiler prof(std::make_unique<FakeTimeline>(std::vector<double>{0, 100, 103, 104}, &held));
  op_done("add", false);  // no step in progress: ignored
  prof.begin_step(/*hold_ms=*/80);
  op_done("add", false);  // before any phase: ignored
  mark_phase("forward");
  op_done("add", false);
  StepProfile p = prof.end_step();
  CHECK(held == 80);
  CHECK(p.held_ms == 80);
  CHECK(p.stamps == 4);
  CHECK(p.span_ms == 4);
  CHECK(p.phase_ms("forward") == 4);
  CHECK(p.class_ms[size_t(OpClass::elementwise)][0] == 3);
  CHECK_FALSE(active());  // end_step uninstalls it
  mark_phase("backward"); // and later phases are no-ops
}

TEST_CASE("profiler: a phase name may repeat; the summary averages steps") {
  Profiler prof(std::make_unique<FakeTimeline>(std::vector<double>{0, 1, 3, 6, 10}));
  ProfileSummary sum;
  sum.title = "fake";
  for (int step = 0; step < 2; ++step) {
    prof.begin_step();
    mark_phase("forward");   // stamp 0 @0
    mark_phase("clip");      // stamp 1 @1
    mark_phase("forward");   // stamp 2 @3
    op_done("layer_norm", false);  // stamp 3 @6
    StepProfile p = prof.end_step();  // stamp 4 @10
    CHECK(p.phases.size() == 2);
    CHECK(p.phase_ms("forward") == 1 + 3 + 4);
    CHECK(p.phase_ms("clip") == 2);
    CHECK(p.class_ms[size_t(OpClass::layernorm)][0] == 3);
    sum.add(p);
  }
  sum.wall_ms_sum = 30;
  sum.wall_steps = 3;
  const std::string t = sum.table();
  CHECK(t.find("| forward (GPU) | 8.00 |") != std::string::npos);
  CHECK(t.find("| clip (GPU) | 2.00 |") != std::string::npos);
  CHECK(t.find("| **step, unprofiled (host wall, synced)** | **10.00** |") != std::string::npos);
  CHECK(t.find("| LayerNorm | 3.00 | 0.00 | 1/0 |") != std::string::npos);
  CHECK(t.find("| kernel launches | n/a |") != std::string::npos);
  sum.device = "CPU";  // a host timeline's table names the CPU and drops the GPU-only rows
  const std::string c = sum.table();
  CHECK(c.find("| forward (CPU) | 8.00 |") != std::string::npos);
  CHECK(c.find("kernel launches") == std::string::npos);
  CHECK(c.find("| malloc (allocator's OS allocations) |") != std::string::npos);
}

TEST_CASE("profiler: misuse is a typed error") {
  Profiler prof(std::make_unique<FakeTimeline>(std::vector<double>{0, 1}));
  CHECK_THROWS_AS(prof.phase("forward"), Error);  // outside a step
  CHECK_THROWS_AS(prof.end_step(), Error);
  prof.begin_step();
  Profiler other(std::make_unique<FakeTimeline>(std::vector<double>{0}));
  CHECK_THROWS_AS(other.begin_step(), Error);  // one step per thread at a time
  prof.end_step();
}

TEST_CASE("profiler: op names map to classes") {
  const std::map<std::string, OpClass> want = {
      {"linear", OpClass::gemm},          {"matmul", OpClass::gemm},
      {"sdpa", OpClass::attention},       {"softmax", OpClass::softmax},
      {"log_softmax", OpClass::softmax},  {"layer_norm", OpClass::layernorm},
      {"dropout_add_layer_norm", OpClass::layernorm},
      {"bias_gelu", OpClass::elementwise}, {"dropout", OpClass::elementwise},
      {"add_scalar", OpClass::elementwise}, {"sum", OpClass::reduce},
      {"embedding", OpClass::embedding},  {"cross_entropy", OpClass::loss},
      {"transpose", OpClass::view},       {"contiguous", OpClass::view},
      {"quantize", OpClass::quant},       {"frobnicate", OpClass::other}};
  for (const auto& [op, cls] : want) {
    INFO(op);
    CHECK(classify(op) == cls);
  }
  CHECK(std::string(class_name(OpClass::gemm)) == "GEMM");
}

TEST_CASE("profiler: the host timeline measures the host clock") {
  Profiler prof(host_timeline());
  prof.begin_step();
  mark_phase("forward");
  double x = 0;
  for (int i = 0; i < 200000; ++i) x += i * 1e-9;  // some work to measure
  op_done("add", false);
  StepProfile p = prof.end_step();
  CHECK(x > 0);
  CHECK(p.span_ms > 0);
  CHECK(p.span_ms >= p.class_ms[size_t(OpClass::elementwise)][0]);
  CHECK(p.host_ms >= p.span_ms * 0.5);
}
