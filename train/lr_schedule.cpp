// train/lr_schedule.cpp — the schedule factors (formulas in lr_schedule.h).
#include "train/lr_schedule.h"

#include <algorithm>
#include <cmath>
#include <numbers>

#include "runtime/error.h"

namespace mase::train {

LrSchedule::LrSchedule(ScheduleKind kind, int64_t warmup_steps, int64_t total_steps,
                       double num_cycles)
    : kind_(kind), warmup_(warmup_steps), total_(total_steps), num_cycles_(num_cycles) {
  MASE_CHECK(warmup_ >= 0, ConfigError, "[lr_schedule] expected warmup_steps >= 0, got ", warmup_);
  MASE_CHECK(kind_ == ScheduleKind::constant || total_ >= 1, ConfigError,
             "[lr_schedule] expected total_steps >= 1 for a decaying schedule, got ", total_,
             " (set the number of training steps)");
  MASE_CHECK(num_cycles_ >= 0, ConfigError, "[lr_schedule] expected num_cycles >= 0, got ",
             num_cycles_);
}

LrSchedule LrSchedule::parse(std::string_view kind, int64_t warmup_steps, int64_t total_steps) {
  if (kind == "constant") return {ScheduleKind::constant, warmup_steps, total_steps};
  if (kind == "linear") return {ScheduleKind::linear, warmup_steps, total_steps};
  if (kind == "cosine") return {ScheduleKind::cosine, warmup_steps, total_steps};
  throw ConfigError(cat("[lr_schedule] expected constant, linear or cosine, got '", kind, "'"));
}

double LrSchedule::factor(int64_t step) const {
  MASE_CHECK(step >= 0, ConfigError, "[lr_schedule] expected step >= 0, got ", step);
  const double s = static_cast<double>(step), w = static_cast<double>(warmup_);
  if (step < warmup_) return s / std::max(1.0, w);
  const double decay_steps = std::max(1.0, static_cast<double>(total_ - warmup_));
  switch (kind_) {
    case ScheduleKind::constant: return 1.0;
    case ScheduleKind::linear:
      return std::max(0.0, static_cast<double>(total_ - step) / decay_steps);
    case ScheduleKind::cosine: {
      const double progress = (s - w) / decay_steps;
      return std::max(0.0, 0.5 * (1.0 + std::cos(std::numbers::pi * num_cycles_ * 2.0 * progress)));
    }
  }
  return 1.0;
}

std::string LrSchedule::str() const {
  switch (kind_) {
    case ScheduleKind::constant: return cat("constant(warmup=", warmup_, ")");
    case ScheduleKind::linear: return cat("linear(warmup=", warmup_, ", total=", total_, ")");
    case ScheduleKind::cosine:
      return cat("cosine(warmup=", warmup_, ", total=", total_, ", cycles=", num_cycles_, ")");
  }
  return "?";
}

}  // namespace mase::train
