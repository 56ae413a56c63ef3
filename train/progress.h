// train/progress.h — what the user sees while training: a progress bar on a terminal, plain
// log lines otherwise (a file, a pipe, CI), so a redirected log stays readable.
//
//   terminal:  epoch 1/3 [#######.............]  35%  step 274/782  loss 0.5121  lr 9.6e-04
//              7.9k tok/s  ETA 0:14:32                              (one line, redrawn in place)
//   otherwise: step 250/2346  epoch 1/3  loss 0.5318  lr 9.7e-04  grad 0.81  7912 tok/s
//              elapsed 0:05:10  ETA 0:43:19                          (every --log-every steps)
// Other messages (evaluations, checkpoints) go through line(), which clears the bar first.
//
// Read next: train/trainer.h.
#pragma once
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>

namespace mase::train {

// The numbers of one step, as shown.
struct StepInfo {
  int64_t step = 0, total_steps = 0;  // steps done so far (this one included), of all
  int64_t epoch = 0, epochs = 0;      // 1-based epoch being trained, of all
  double loss = 0;                    // the mean loss since the previous log line
  double lr = 0, grad_norm = 0;
  double tokens_per_s = 0;            // real (not padding) tokens per second of training
  double elapsed_s = 0, eta_s = 0;
};

class Progress {
 public:
  // tty: draw the bar (pass isatty(fileno(out))).
  Progress(std::FILE* out, bool tty) : out_(out), tty_(tty) {}
  // Every step; log: this step is a --log-every step (a plain line is printed then).
  void step(const StepInfo& s, bool log);
  // A line of its own (clears the bar; it is redrawn at the next step).
  void line(const std::string& text);
  // The end of training: the bar's line is finished with a newline.
  void finish();
  bool tty() const { return tty_; }

 private:
  std::FILE* out_;
  bool tty_;
  bool bar_shown_ = false;
  std::chrono::steady_clock::time_point last_draw_{};
};

// x for printf, a NaN with its sign bit cleared: glibc prints a negative NaN as "-nan", and the
// sign of a NaN means nothing to the reader of a loss.
inline double unsigned_nan(double x) { return std::isnan(x) ? std::fabs(x) : x; }
// 3725 -> "1:02:05", 65 -> "0:01:05"; negative or non-finite -> "?".
std::string format_duration(double seconds);
// 7912 -> "7.9k", 1234567 -> "1.2M", 950 -> "950".
std::string format_rate(double per_s);
// The bar of `width` cells for done/total: "[#####.....]".
std::string format_bar(int64_t done, int64_t total, int width);

}  // namespace mase::train
