// search/lab_plot.cpp — best-so-far and Pareto figures through gnuplot. Read lab_plot.h first.
#include "search/lab_plot.h"

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "runtime/atomic_file.h"
#include "runtime/error.h"
#include "search/curve_plot.h"
#include "search/plot.h"

namespace mase::search {
namespace fs = std::filesystem;

namespace {

std::string gp_quote(const std::string& s) {  // a gnuplot string: '' stands for '
  std::string q = "'";
  for (char c : s) q += c == '\'' ? "''" : std::string(1, c);
  return q + "'";
}

// Many curves: a wider figure with the legend outside, right of the plot.
std::string terminal_for(const std::string& path, bool wide) {
  const std::string ext = fs::path(path).extension().string();
  const char* size = wide ? "1100,600" : "900,560";
  if (ext == ".svg") return cat("set terminal svg size ", size, " dynamic font 'sans,12'\n");
  if (ext == ".png") return cat("set terminal pngcairo size ", size, " font 'sans,11'\n");
  throw ConfigError(cat("[plot] expected --plot ending in .svg or .png, got '", path, "'"));
}

// Writes data and script beside `path`, runs gnuplot, renames its output into place.
void draw(const std::string& path, const std::string& data, const std::string& body,
          bool wide) {
  const std::string term = terminal_for(path, wide);
  write_text_atomic(path + ".dat", data);  // creates the folder
  const std::string out_tmp = path + ".part";
  write_text_atomic(path + ".gp", cat(term, "set output ", gp_quote(out_tmp), "\n", body));
  run_gnuplot(path + ".gp", out_tmp, path);
}

// A title as a double-quoted gnuplot string, broken into lines at "; " (gnuplot reads \n there);
// a backquote as its octal escape \140 (gnuplot runs `...` as a command even inside quotes).
std::string title_lines(const std::string& title) {
  std::string q = "\"";
  for (size_t i = 0; i < title.size(); ++i) {
    if (title.compare(i, 2, "; ") == 0) {
      q += "\\n";
      ++i;
    } else if (title[i] == '`') {
      q += "\\140";
    } else if (title[i] == '"' || title[i] == '\\') {
      q += std::string("\\") + title[i];
    } else {
      q += title[i];
    }
  }
  return q + "\"";
}

std::string common_settings(const std::string& title, const std::string& xlabel,
                            const std::string& ylabel, bool wide) {
  return cat("set title ", title_lines(title), " noenhanced\n", "set xlabel ", gp_quote(xlabel),
             "\nset ylabel ", gp_quote(ylabel), "\n",
             wide ? "set key outside right top noenhanced\n"
                  : "set key bottom right box opaque noenhanced\n",
             "set grid\n");
}

// Style i of n: colour, dash pattern and marker all change, and with a few curves the earlier
// ones are drawn wider, so a curve lying on another shows as a thin line inside a thick one.
// (n = 0: points, no line width; a curve i >= n is drawn at the base width.) The colours are
// 20 distinct ones (Tableau's 20, dark and light in pairs), not gnuplot's 8, which repeat from
// the 9th curve: Lab 3.2 draws 18.
std::string style(size_t i, size_t n = 0) {
  static constexpr const char* kColours[] = {
      "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2",
      "#7f7f7f", "#bcbd22", "#17becf", "#aec7e8", "#ffbb78", "#98df8a", "#ff9896",
      "#c5b0d5", "#c49c94", "#f7b6d2", "#c7c7c7", "#dbdb8d", "#9edae5"};
  std::string s = cat("linecolor rgb \"", kColours[i % 20], "\" dashtype ", i % 5 + 1);
  if (n == 0) return cat(s, " pointtype ", i % 13 + 1);  // a marker only for points (a line
                                                          // drawn `with steps` refuses one)
  const double wider = n <= 4 && i < n ? 2.0 * static_cast<double>(n - 1 - i) : 0.0;
  return cat(s, " linewidth ", 1.5 + wider);
}

double attr_value(const TrialRecord& r, const std::string& key) {
  auto it = r.attrs.find(key);
  return it == r.attrs.end() ? NAN : std::strtod(it->second.c_str(), nullptr);
}

}  // namespace

void plot_best_so_far(const Series& series, const std::string& title, const std::string& ylabel,
                      const std::string& path, Direction direction) {
  MASE_CHECK(!series.empty(), ConfigError, "[plot] expected at least one study, got none");
  const bool wide = series.size() > 4;
  std::string data, plot = "plot ";
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& [label, trials] = series[i];
    data += "# " + label + ": trial best_so_far value\n";
    const std::vector<double> best = running_best(trials, direction);
    for (size_t j = 0; j < trials.size(); ++j)
      if (!std::isnan(best[j]))
        data += cat(trials[j].trial.number, " ", best[j], " ",
                    trials[j].trial.state == TrialState::complete ? cat(trials[j].trial.value)
                                                                  : std::string("NaN"),
                    "\n");
    data += "\n\n";
    const std::string dat = gp_quote(path + ".dat");
    plot += cat(i ? ", " : "", dat, " index ", i, " using 1:2 with steps ", style(i, series.size()),
                " title ", gp_quote(wide ? label : label + " (best so far)"), ", ", dat, " index ", i,
                " using 1:3 with points pointsize 0.8 ", style(i), " notitle");
  }
  std::string key = direction == Direction::maximize ? "" : "set key top right\n";
  size_t most = 0;
  for (const auto& [label, trials] : series) most = std::max(most, trials.size());
  if (most <= 20) key += "set xtics 1\n";  // few trials: whole numbers only
  draw(path, data,
       cat(common_settings(title, "trial", ylabel, wide), key,
           "set offsets 0.3, 0.3, 0.02, 0.02\nset xrange [-0.5:*]\n", plot, "\n"),
       wide);
}

namespace {
// The y of a Pareto point: attribute "accuracy" when the trial has it (a trial whose value is a
// weighted sum of accuracy and bits), else its value.
double accuracy_of(const TrialRecord& r) {
  const double a = attr_value(r, "accuracy");
  return std::isnan(a) ? r.trial.value : a;
}
}  // namespace

std::vector<TrialRecord> pareto_front(const std::vector<TrialRecord>& trials,
                                      const std::string& x_attr) {
  std::vector<TrialRecord> pts;
  for (const auto& r : trials)
    if (r.trial.state == TrialState::complete && !std::isnan(attr_value(r, x_attr)))
      pts.push_back(r);
  std::sort(pts.begin(), pts.end(), [&](const TrialRecord& a, const TrialRecord& b) {
    const double xa = attr_value(a, x_attr), xb = attr_value(b, x_attr);
    return xa != xb ? xa < xb : accuracy_of(a) > accuracy_of(b);
  });
  std::vector<TrialRecord> front;  // by increasing x: keep each trial better than all before
  for (const auto& r : pts)
    if (front.empty() || accuracy_of(r) > accuracy_of(front.back())) front.push_back(r);
  return front;
}

void plot_pareto(const Series& series, const std::string& x_attr, const std::string& title,
                 const std::string& xlabel, const std::string& path) {
  MASE_CHECK(!series.empty(), ConfigError, "[plot] expected at least one study, got none");
  const bool wide = series.size() > 2;
  std::string data, plot = "plot ";
  size_t block = 0;
  double most = 0;  // the largest x: parameter counts are read as 2.5M, not 2.5x10^6
  for (const auto& [label, trials] : series)
    for (const auto& r : trials)
      if (r.trial.state == TrialState::complete && attr_value(r, x_attr) > most)
        most = attr_value(r, x_attr);
  for (size_t i = 0; i < series.size(); ++i) {
    const auto& [label, trials] = series[i];
    data += "# " + label + ": trials (x y)\n";
    for (const auto& r : trials)
      if (r.trial.state == TrialState::complete && !std::isnan(attr_value(r, x_attr)))
        data += cat(attr_value(r, x_attr), " ", accuracy_of(r), "\n");
    data += "\n\n# " + label + ": Pareto front\n";
    for (const auto& r : pareto_front(trials, x_attr))
      data += cat(attr_value(r, x_attr), " ", accuracy_of(r), "\n");
    data += "\n\n";
    const std::string dat = gp_quote(path + ".dat");
    plot += cat(i ? ", " : "", dat, " index ", block, " using 1:2 with points pointsize 1 ",
                style(i), wide ? std::string(" notitle") : " title " + gp_quote(label + " trials"),
                ", ", dat, " index ", block + 1, " using 1:2 with steps ", style(i, 1),
                " title ", gp_quote(wide ? label : label + " Pareto front"));
    block += 2;
  }
  draw(path, data,
       cat(common_settings(title, xlabel, "test accuracy", wide),
           most >= 1e5 ? "set format x '%.1s%c'\n" : "", plot, "\n"),
       wide);
}

void plot_intermediate(const std::vector<TrialRecord>& trials, const std::string& title,
                       const std::string& path, const std::string& xlabel,
                       const std::string& ylabel) {
  // index 0: complete trials' curves, index 1: pruned ones', index 2: where those stopped;
  // within an index a blank line starts a new curve
  std::string data[3];
  int complete = 0, pruned = 0;
  for (const TrialRecord& r : trials) {
    const bool was_pruned = r.trial.state == TrialState::pruned;
    if (r.intermediate.empty() || (!was_pruned && r.trial.state != TrialState::complete)) continue;
    std::string& block = data[was_pruned ? 1 : 0];
    block += cat("# trial ", r.trial.number, "\n");
    for (const auto& [step, v] : r.intermediate) block += cat(step, " ", v, "\n");
    block += "\n";
    if (was_pruned)
      data[2] += cat(r.intermediate.rbegin()->first, " ", r.intermediate.rbegin()->second, "\n");
    (was_pruned ? pruned : complete) += 1;
  }
  MASE_CHECK(complete + pruned > 0, ConfigError, "[plot] expected trials with reported "
             "accuracies (--eval-every with --pruner), got none");
  std::string all;
  for (int i = 0; i < 3; ++i)  // an empty index still needs a point: one off the axes
    all += (data[i].empty() ? std::string("NaN NaN\n") : data[i]) + "\n\n";
  const std::string dat = gp_quote(path + ".dat");
  const std::string plot = cat(
      "plot ", dat, " index 0 using 1:2 with linespoints linecolor rgb \"#1f77b4\" linewidth 1.5 "
      "pointtype 7 pointsize 0.5 title ", gp_quote(cat("complete (", complete, ")")), ", ", dat,
      " index 1 using 1:2 with linespoints linecolor rgb \"#d62728\" dashtype 2 linewidth 1.5 "
      "pointtype 7 pointsize 0.5 title ", gp_quote(cat("pruned (", pruned, ")")), ", ", dat,
      " index 2 using 1:2 with points linecolor rgb \"#d62728\" pointtype 2 pointsize 1.6 "
      "notitle\n");
  draw(path, all, cat(common_settings(title, xlabel, ylabel, false), plot), false);
}

void write_summary_csv(const Series& series, const std::string& x_attr, const std::string& path) {
  std::string csv = cat("study,trials,best_accuracy,best_trial,", x_attr, "_of_best,worst_accuracy,",
                        "fewest_", x_attr, ",accuracy_at_fewest\n");
  for (const auto& [label, trials] : series) {
    const TrialRecord *best = nullptr, *worst = nullptr, *fewest = nullptr;
    int n = 0;
    auto acc = [](const TrialRecord& r) {
      const double a = attr_value(r, "accuracy");
      return std::isnan(a) ? r.trial.value : a;
    };
    for (const TrialRecord& r : trials) {
      const double x = attr_value(r, x_attr);
      if (r.trial.state != TrialState::complete || std::isnan(x)) continue;
      ++n;
      if (!best || acc(r) > acc(*best) || (acc(r) == acc(*best) && x < attr_value(*best, x_attr)))
        best = &r;
      if (!worst || acc(r) < acc(*worst)) worst = &r;
      if (!fewest || x < attr_value(*fewest, x_attr)) fewest = &r;
    }
    if (!best) continue;  // nothing complete yet
    csv += cat("\"", label, "\",", n, ",", acc(*best), ",", best->trial.number, ",",
               attr_value(*best, x_attr), ",", acc(*worst), ",", attr_value(*fewest, x_attr), ",",
               acc(*fewest), "\n");
  }
  write_text_atomic(path, csv);
}

}  // namespace mase::search
