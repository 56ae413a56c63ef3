// search/curve_plot.cpp — x-y curves through gnuplot (SVG or PNG). Read curve_plot.h first.
#include "search/curve_plot.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "runtime/atomic_file.h"
#include "runtime/error.h"

namespace mase::search {
namespace fs = std::filesystem;
namespace {

// gnuplot string literal in double quotes (so a title's "\n" breaks the line): backslash,
// double quote and newline escaped, and a backquote written as its octal escape \140 (gnuplot
// runs `...` as a shell command even inside double quotes).
std::string gp_string(const std::string& s) {
  std::string q = "\"";
  for (char c : s) {
    if (c == '\n') q += "\\n";
    else if (c == '`') q += "\\140";
    else if (c == '\\' || c == '"') q += std::string("\\") + c;
    else q += c;
  }
  return q + "\"";
}

extern "C" char** environ;

// Runs `gnuplot script` with no shell in between (a $ or ` in the path stays a character),
// its stdout and stderr into `output`; returns its wait status. IoError if it cannot start.
int spawn_gnuplot(const std::string& script, std::string& output) {
  // a relative path starting with '-' would read as an option
  const std::string arg = script.rfind('-', 0) == 0 ? "./" + script : script;
  int fd[2];
  MASE_CHECK(pipe2(fd, O_CLOEXEC) == 0, IoError, "[plot] cannot run gnuplot: pipe: ",
             std::strerror(errno));
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  posix_spawn_file_actions_adddup2(&actions, fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&actions, fd[1], STDERR_FILENO);
  char* argv[] = {const_cast<char*>("gnuplot"), const_cast<char*>(arg.c_str()), nullptr};
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, "gnuplot", &actions, nullptr, argv, environ);
  posix_spawn_file_actions_destroy(&actions);
  close(fd[1]);
  if (rc != 0) close(fd[0]);
  MASE_CHECK(rc == 0, IoError, "[plot] cannot run gnuplot: ", std::strerror(rc),
             " (apt-get install gnuplot-nox)");
  char buf[256];
  for (;;) {
    const ssize_t n = read(fd[0], buf, sizeof buf);
    if (n > 0) output.append(buf, static_cast<size_t>(n));
    else if (n == 0 || errno != EINTR) break;  // EINTR: a signal (Ctrl-C's handler) came
  }
  close(fd[0]);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return status;
}

}  // namespace

std::string terminal_for(const std::string& path, int extra_width, int extra_height) {
  const std::string ext = fs::path(path).extension().string();
  if (ext == ".svg")
    return cat("svg size ", 800 + extra_width, ",", 500 + extra_height, " dynamic font 'sans,13'");
  if (ext == ".png")
    return cat("pngcairo size ", 900 + extra_width, ",", 560 + extra_height, " font 'sans,12'");
  return "";
}

void check_plot_path(const std::string& path, const std::string& flag) {
  MASE_CHECK(!terminal_for(path).empty(), ConfigError, "[", flag,
             "] expected a file ending in .svg or .png, got '", path,
             "' (the extension chooses gnuplot's terminal)");
}

void plot_curves(const std::vector<Curve>& curves, const CurvePlotText& text,
                 const std::string& path) {
  check_plot_path(path, "plot");
  MASE_CHECK(!curves.empty(), ConfigError, "[plot] expected at least one curve to draw, got none");
  const std::string dat = path + ".dat", gp = path + ".gp", tmp = path + ".tmp";

  std::string data;  // one block per curve (gnuplot's "index"), two blank lines between blocks
  for (const Curve& c : curves) {
    data += "# " + c.label + ": x y\n";
    auto pts = c.points;
    std::sort(pts.begin(), pts.end());
    for (const auto& [x, y] : pts) data += cat(x, " ", y, "\n");
    data += "\n\n";
  }
  write_text_atomic(dat, data);

  std::string script = cat("set terminal ", terminal_for(path), "\n",
                           "set output ", gp_string(tmp), "\n",
                           "set title ", gp_string(text.title), " noenhanced\n",
                           "set xlabel ", gp_string(text.xlabel), " noenhanced\n",
                           "set ylabel ", gp_string(text.ylabel), " noenhanced\n",
                           "set key below noenhanced\nset grid\nset offsets graph 0.02, graph 0.02,"
                           " graph 0.05, graph 0.05\nset yrange [*:*]\n",
                           "plot ");
  // Markers shrink from curve to curve, so equal points show as nested markers, not one.
  for (size_t i = 0; i < curves.size(); ++i)
    script += cat(i ? ", \\\n     " : "", gp_string(dat), " index ", i,
                  " using 1:2 with linespoints linewidth 2 pointsize ",
                  std::max(0.8, 1.9 - 0.35 * double(i)), " pointtype ", 2 * i + 5, " dashtype ",
                  i + 1, " linecolor ", i + 1, " title ", gp_string(curves[i].label));
  script += "\n";
  write_text_atomic(gp, script);

  run_gnuplot(gp, tmp, path);
}

void plot_bars(const BarChart& chart, const std::string& path) {
  check_plot_path(path, "plot");
  MASE_CHECK(!chart.categories.empty() && !chart.series.empty(), ConfigError,
             "[plot] expected bars to draw, got ", chart.categories.size(), " categories and ",
             chart.series.size(), " series (did every benchmark fail, or have no ratio?)");
  const std::string dat = path + ".dat", gp = path + ".gp", tmp = path + ".tmp";
  // "category" v1 v2 …, '?' where a series has no value (gnuplot's missing-data mark)
  std::string data = "category";
  for (const BarSeries& b : chart.series) data += cat(" ", gp_string(b.label));
  data += "\n";
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    data += gp_string(chart.categories[c]);
    for (const BarSeries& b : chart.series)
      data += c < b.values.size() && std::isfinite(b.values[c]) ? cat(" ", b.values[c]) : " ?";
    data += "\n";
  }
  write_text_atomic(dat, data);
  // names stand upright under their bars (slanted ones run off the figure's edge); the bottom
  // margin, in character heights, grows with the longest (a character is under half as wide)
  size_t longest = 0;
  for (const std::string& c : chart.categories) longest = std::max(longest, c.size());
  const size_t bmargin = std::clamp<size_t>(longest / 2 + 3, 4, 40);
  // long names get the height they take below the plot, many bars the width: the plot itself
  // keeps its size (42 per-layer names of 50 characters squeezed it to a strip)
  const int taller = bmargin > 12 ? static_cast<int>(bmargin - 12) * 16 : 0;
  const int wider = chart.categories.size() > 20
                        ? static_cast<int>(chart.categories.size() - 20) * 18
                        : 0;
  std::string script = cat(
      "set terminal ", terminal_for(path, wider, taller), "\n", "set output ", gp_string(tmp), "\n",
      "set title ", gp_string(chart.title), " noenhanced\n", "set ylabel ",
      gp_string(chart.ylabel), " noenhanced\n", "set datafile missing '?'\n",
      "set style data histograms\nset style histogram clustered gap 1\n",
      "set style fill solid 0.6 border -1\nset grid ytics\nset yrange [0:*]\n",
      "set xrange [-0.6:", double(chart.categories.size()) - 0.4, "]\n",  // cluster i is at x = i
      "set xtics rotate by 90 right noenhanced\nset bmargin ", bmargin, "\n",
      "set key autotitle columnheader noenhanced\n",  // the first row names the series
      chart.series.size() > 1 ? "set key above\n" : "set key off\n",
      "plot for [i=2:", chart.series.size() + 1, "] ", gp_string(dat), " using i:xtic(1)");
  if (chart.reference > 0)
    script += cat(", ", chart.reference, " with lines dashtype 2 linecolor rgb '#d62728' notitle");
  script += "\n";
  write_text_atomic(gp, script);
  run_gnuplot(gp, tmp, path);
}

void run_gnuplot(const std::string& script, const std::string& tmp, const std::string& path) {
  // gnuplot writes the figure to a temporary name; it is renamed only when gnuplot succeeded
  std::string output;
  const int status = spawn_gnuplot(script, output);
  MASE_CHECK(status == 0, IoError, "[plot] gnuplot failed on ", script, ": ",
             output.empty() ? std::string("no output (apt-get install gnuplot-nox)") : output);
  std::error_code ec;
  fs::rename(tmp, path, ec);
  MASE_CHECK(!ec, IoError, "[plot] gnuplot wrote no ", tmp, ": ", ec.message());
}

}  // namespace mase::search
