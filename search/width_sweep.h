// search/width_sweep.h — Lab 1.1: accuracy against fixed-point width, a PTQ and a QAT curve.
//
// Every Linear (inputs, weights and biases) in `integer` fixed point of width w and frac width
// f = rule(w) (default 4 at every width, as the course's Q(w-4).4; or "half": Qw/2.w/2):
//   ptq  the trained model quantized and evaluated (search/sweep_model.h's PassEvaluator: one
//        load, one tokenized test set for all widths);
//   qat  the trained model quantized, trained `qat_steps` more steps through the quantizers
//        (straight-through gradients), then evaluated on the same test reviews.
// The study's points are (mode, width); PTQ ones come first (cheap). Its space and objective
// (model folder, frac rule, test subset, max_len, QAT budget) are recorded, so re-running the
// same command skips done points and a different one under the same --study is refused.
// Read next: search/sparsity_sweep.h (Lab 1.2), tools/sweep_cli.h (the command line).
#pragma once
#include <cstdio>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "search/sweep_list.h"
#include "search/sweep_study.h"
#include "train/train_config.h"

namespace mase::search {

struct WidthSweepOptions {
  // init = the model folder; data_dir, cache_dir, test_subset, max_len (already resolved: > 0),
  // eval_batch_size; for QAT also train_subset, batch_size, lr, seed, threads.
  train::TrainConfig base;
  std::vector<int64_t> widths;
  FracRule frac;
  std::vector<std::string> curves = {"ptq", "qat"};  // which curves to compute
  int64_t qat_steps = 100;
  std::string dir, study = "lab1-width";
  std::vector<std::string> plots;  // "" -> <dir>/<study>.svg and .png
};

// The quantize pass config: every Linear's data_in, weight and bias in integer(width, frac).
nlohmann::json integer_config(int64_t width, int64_t frac);

// The plan (space, points, objective, CSV, figures) without running anything: what the
// command checks before it loads a model.
SweepPlan width_sweep_plan(const WidthSweepOptions& opt);

// Runs the sweep; returns the number of points evaluated now.
int run_width_sweep(const WidthSweepOptions& opt, std::FILE* out);

}  // namespace mase::search
