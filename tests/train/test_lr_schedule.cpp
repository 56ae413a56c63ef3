// tests/train/test_lr_schedule.cpp — schedule factors at hand-picked steps (HF's own values
// are checked against the PyTorch/transformers fixture in test_optim_fixture.cpp).
#include <cmath>
#include <numbers>

#include "helpers.h"
#include "train/lr_schedule.h"

using namespace mase;
using namespace mase::train;
using doctest::Approx;

TEST_CASE("lr schedule: constant with and without warm-up") {
  LrSchedule flat;
  CHECK(flat.factor(0) == 1.0);
  CHECK(flat.factor(123456) == 1.0);
  LrSchedule warm(ScheduleKind::constant, 4);
  CHECK(warm.factor(0) == 0.0);   // 0/4
  CHECK(warm.factor(1) == 0.25);  // 1/4
  CHECK(warm.factor(3) == 0.75);  // 3/4
  CHECK(warm.factor(4) == 1.0);
  CHECK(warm.lr(2, 2e-5) == Approx(1e-5));  // 2e-5 · 2/4
}

TEST_CASE("lr schedule: linear warm-up then linear decay to 0") {
  // W = 10, N = 110: warm-up step/10, then (110 − step)/100
  LrSchedule s(ScheduleKind::linear, 10, 110);
  CHECK(s.factor(0) == 0.0);
  CHECK(s.factor(5) == 0.5);
  CHECK(s.factor(10) == 1.0);      // (110 − 10)/100
  CHECK(s.factor(35) == 0.75);     // 75/100
  CHECK(s.factor(109) == Approx(0.01));
  CHECK(s.factor(110) == 0.0);
  CHECK(s.factor(500) == 0.0);     // clamped at 0 past the end
  // no warm-up: starts at 1
  LrSchedule nw(ScheduleKind::linear, 0, 4);
  CHECK(nw.factor(0) == 1.0);
  CHECK(nw.factor(1) == 0.75);
  // warm-up longer than training (HF allows it): max(1, N − W) keeps it finite, then 0
  LrSchedule odd(ScheduleKind::linear, 8, 4);
  CHECK(odd.factor(4) == 0.5);
  CHECK(odd.factor(8) == 0.0);
}

TEST_CASE("lr schedule: cosine with warm-up") {
  // W = 4, N = 12, half a cycle: factor = ½(1 + cos(π·(step − 4)/8)) after warm-up
  LrSchedule s(ScheduleKind::cosine, 4, 12);
  CHECK(s.factor(2) == 0.5);                                // warm-up 2/4
  CHECK(s.factor(4) == 1.0);                                // cos 0
  CHECK(s.factor(6) == Approx(0.5 * (1 + std::sqrt(0.5))));  // cos(π/4) = √½ → 0.853553
  CHECK(s.factor(8) == Approx(0.5));                        // cos(π/2) = 0
  CHECK(s.factor(12) == Approx(0.0));                       // cos π = −1
  // past the end HF does not clamp the progress: the cosine rises again (cos(1.25π) = −√½)
  CHECK(s.factor(14) == Approx(0.5 * (1 - std::sqrt(0.5))));
  // a full cycle (num_cycles 1) comes back to 1 at the end
  LrSchedule full(ScheduleKind::cosine, 0, 10, 1.0);
  CHECK(full.factor(5) == Approx(0.0));
  CHECK(full.factor(10) == Approx(1.0));
}

TEST_CASE("lr schedule: parse by name and reject bad settings") {
  CHECK(LrSchedule::parse("cosine", 1, 9).kind() == ScheduleKind::cosine);
  CHECK(LrSchedule::parse("linear", 1, 9).str() == "linear(warmup=1, total=9)");
  CHECK(test::error_message([] { LrSchedule::parse("step", 0, 9); }) ==
        "[lr_schedule] expected constant, linear or cosine, got 'step'");
  CHECK_THROWS_AS(LrSchedule(ScheduleKind::linear, -1, 10), ConfigError);
  CHECK_THROWS_AS(LrSchedule(ScheduleKind::cosine, 0, 0), ConfigError);
  CHECK_THROWS_AS(LrSchedule(ScheduleKind::cosine, 0, 10, -1.0), ConfigError);
  CHECK_THROWS_AS(LrSchedule().factor(-1), ConfigError);
  CHECK_NOTHROW(LrSchedule(ScheduleKind::constant, 0, 0));  // constant needs no total
}
