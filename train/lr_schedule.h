// train/lr_schedule.h — learning-rate schedules: constant, linear warm-up + linear decay,
// cosine with warm-up. Each gives a factor in [0, 1] that multiplies the base learning rate,
// exactly as HuggingFace transformers' get_*_schedule_with_warmup lambdas (optimization.py):
//
//   warm-up (all kinds), step < W:  factor = step / max(1, W)
//   constant:                       factor = 1
//   linear:                         factor = max(0, (N − step) / max(1, N − W))
//   cosine:                         progress = (step − W) / max(1, N − W)
//                                   factor = max(0, ½·(1 + cos(π · 2c · progress)))
// with W = warmup_steps, N = total_steps and c = num_cycles (0.5: one half cosine, 1 → 0).
//
// `step` counts optimizer steps already taken, from 0: the k-th call of Optimizer::step (k from
// 0) uses factor(k), as HF's Trainer does (so with warm-up the very first step has lr 0).
//   opt.set_lr_factor(schedule.factor(step)); opt.step();
//
// Read next: train/clip_grad_norm.h.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace mase::train {

enum class ScheduleKind { constant, linear, cosine };

class LrSchedule {
 public:
  LrSchedule() = default;  // constant, no warm-up
  // ConfigError when warmup_steps < 0, when total_steps < 1 for linear and cosine, or when
  // num_cycles < 0.
  LrSchedule(ScheduleKind kind, int64_t warmup_steps, int64_t total_steps = 0,
             double num_cycles = 0.5);
  // By name, for configs and flags: "constant", "linear" or "cosine" (ConfigError otherwise).
  static LrSchedule parse(std::string_view kind, int64_t warmup_steps, int64_t total_steps);

  double factor(int64_t step) const;  // ConfigError for step < 0
  double lr(int64_t step, double base_lr) const { return base_lr * factor(step); }

  ScheduleKind kind() const { return kind_; }
  int64_t warmup_steps() const { return warmup_; }
  int64_t total_steps() const { return total_; }
  std::string str() const;  // "linear(warmup=100, total=1000)"

 private:
  ScheduleKind kind_ = ScheduleKind::constant;
  int64_t warmup_ = 0, total_ = 0;
  double num_cycles_ = 0.5;
};

}  // namespace mase::train
