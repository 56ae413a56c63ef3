// train/progress.cpp — see progress.h.
#include "train/progress.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"

namespace mase::train {

std::string format_duration(double seconds) {
  if (!std::isfinite(seconds) || seconds < 0) return "?";
  const auto s = static_cast<long long>(std::llround(seconds));
  char buf[32];
  std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", s / 3600, (s / 60) % 60, s % 60);
  return buf;
}

std::string format_rate(double v) {
  char buf[32];
  if (v >= 1e6) std::snprintf(buf, sizeof buf, "%.1fM", v / 1e6);
  else if (v >= 1e3) std::snprintf(buf, sizeof buf, "%.1fk", v / 1e3);
  else std::snprintf(buf, sizeof buf, "%.0f", v);
  return buf;
}

std::string format_bar(int64_t done, int64_t total, int width) {
  const int64_t filled = total > 0 ? std::clamp<int64_t>(done * width / total, 0, width) : 0;
  std::string bar(static_cast<size_t>(width) + 2, '.');
  bar.front() = '[';
  bar.back() = ']';
  std::fill_n(bar.begin() + 1, filled, '#');
  return bar;
}

void Progress::step(const StepInfo& s, bool log) {
  if (!tty_) {
    if (!log) return;
    std::fprintf(out_,
                 "step %lld/%lld  epoch %lld/%lld  loss %.4f  lr %.2e  grad %.2f  %.0f tok/s  "
                 "elapsed %s  ETA %s\n",
                 static_cast<long long>(s.step), static_cast<long long>(s.total_steps),
                 static_cast<long long>(s.epoch), static_cast<long long>(s.epochs), unsigned_nan(s.loss), s.lr,
                 s.grad_norm, s.tokens_per_s, format_duration(s.elapsed_s).c_str(),
                 format_duration(s.eta_s).c_str());
    std::fflush(out_);
    return;
  }
  // redraw at most 10 times a second (and always on the last step)
  const auto now = std::chrono::steady_clock::now();
  if (bar_shown_ && s.step < s.total_steps && now - last_draw_ < std::chrono::milliseconds(100))
    return;
  last_draw_ = now;
  const int64_t pct = s.total_steps > 0 ? 100 * s.step / s.total_steps : 0;
  std::fprintf(out_, "\r\033[Kepoch %lld/%lld %s %3lld%%  step %lld/%lld  loss %.4f  lr %.1e  %s tok/s  ETA %s",
               static_cast<long long>(s.epoch), static_cast<long long>(s.epochs),
               format_bar(s.step, s.total_steps, 20).c_str(), static_cast<long long>(pct),
               static_cast<long long>(s.step), static_cast<long long>(s.total_steps), unsigned_nan(s.loss), s.lr,
               format_rate(s.tokens_per_s).c_str(), format_duration(s.eta_s).c_str());
  std::fflush(out_);
  bar_shown_ = true;
}

void Progress::line(const std::string& text) {
  if (tty_ && bar_shown_) std::fputs("\r\033[K", out_);  // erase the bar, print, redraw later
  bar_shown_ = false;
  std::fprintf(out_, "%s\n", text.c_str());
  std::fflush(out_);
}

void Progress::finish() {
  if (tty_ && bar_shown_) std::fputs("\n", out_);
  bar_shown_ = false;
  std::fflush(out_);
}

}  // namespace mase::train
