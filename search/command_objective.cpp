// search/command_objective.cpp — a shell command as the objective. Read command_objective.h.
#include "search/command_objective.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <exception>
#include <map>
#include <sstream>
#include <cctype>
#include <cstdio>
#include <sys/wait.h>

#include "runtime/error.h"
#include "search/shell_command.h"
#include "search/text.h"

namespace mase::search {

namespace {

double number(const std::string& text, const std::string& item) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MASE_CHECK(used == text.size() && !text.empty(), ConfigError, "[search] --space item '",
             clipped(item), "': expected a number, got '", clipped(text), "'");
  return v;
}

// A value as the shell should see it: as it is when it is made of safe characters only (every
// number is, so "{x}" may sit inside quoted code: python3 -c "print({x}**2)"), else quoted.
std::string shell_quoted(const std::string& s) {
  const bool safe = !s.empty() && s.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOP"
                                                      "QRSTUVWXYZ0123456789_.+-=/:,@%") ==
                                      std::string::npos;
  if (safe) return s;
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

Space parse_space_spec(const std::string& spec) {
  constexpr const char* kGrammar =
      "name=real:LOW:HIGH[:log], name=int:LOW:HIGH[:log] or name=cat:A|B";
  Space space;
  // "x=int:1:3, y=cat:a|b" is two items, x and y; "x=int:1:3," an error (an empty item)
  for (const std::string& item : split_items(spec, ',', "--space", kGrammar)) {
    const size_t eq = item.find('=');
    MASE_CHECK(eq != std::string::npos && eq > 0, ConfigError, "[search] expected each --space ",
               "item to be ", kGrammar, ", got '", clipped(item), "'");
    const std::string name = trimmed(item.substr(0, eq));
    MASE_CHECK(name.find_first_of("{}") == std::string::npos, ConfigError, "[search] --space item '",
               clipped(item), "': expected a name without { or } (--command names it as {name}), "
               "got '", clipped(name), "'");
    std::vector<std::string> f = split(item.substr(eq + 1), ':');  // "real:0:1:" has 4 fields
    for (std::string& field : f) field = trimmed(field);
    const std::string kind = f.empty() ? "" : f[0];
    const bool log = f.size() == 4 && f[3] == "log";
    if (kind == "cat" && f.size() == 2) {
      const std::vector<std::string> choices = split_items(f[1], '|', "--space", "a choice");
      MASE_CHECK(!choices.empty(), ConfigError, "[search] --space item '", clipped(item),
                 "': expected choices A|B|..., got none");
      space.categorical(name, choices);
    } else if ((kind == "real" || kind == "int") && (f.size() == 3 || log)) {
      const double lo = number(f[1], item), hi = number(f[2], item);
      MASE_CHECK(lo < hi && (!log || lo > 0), ConfigError, "[search] --space item '",
                 clipped(item), "': expected ", log ? "0 < LOW < HIGH on a log scale" : "LOW < HIGH",
                 ", got ", clipped(f[1]), " and ", clipped(f[2]));
      if (kind == "real") {
        space.real(name, lo, hi, log);
      } else {
        // whole and within ±2^53 (a Param's bounds are doubles): casting 1e300 to int64 is
        // undefined, and 0.5 would quietly become 0
        for (double v : {lo, hi})
          MASE_CHECK(v == std::floor(v) && std::fabs(v) <= 0x1p53, ConfigError, "[search] --space item '",
                     clipped(item), "': expected whole LOW and HIGH within ±2^53 for int, got ",
                     clipped(f[1]), " and ", clipped(f[2]));
        space.integer(name, static_cast<int64_t>(lo), static_cast<int64_t>(hi), 1, log);
      }
    } else {
      throw ConfigError(cat("[search] expected each --space item to be ", kGrammar, ", got '",
                            clipped(item), "'"));
    }
  }
  MASE_CHECK(!space.empty(), ConfigError, "[search] expected a non-empty list for --space, got none (",
             kGrammar, ", comma-separated)");
  return space;
}

std::string expand_command(const std::string& tmpl, const Space& space, const Values& values,
                           int64_t trial) {
  std::string out;
  for (size_t i = 0; i < tmpl.size(); ++i) {
    const size_t close = tmpl[i] == '{' ? tmpl.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      out += tmpl[i];
      continue;
    }
    const std::string name = tmpl.substr(i + 1, close - i - 1);
    if (name == "trial") {
      out += std::to_string(trial);
    } else {
      const auto it = values.find(name);
      MASE_CHECK(it != values.end(), ConfigError, "[search] --command: expected each {name} to ",
                 "be a parameter of --space or {trial}, got {", clipped(name), "}");
      out += shell_quoted(space.at(name).format(it->second));
    }
    i = close;
  }
  return out;
}

std::vector<double> output_values(const std::string& line, size_t count) {
  const auto fail = [&](const std::string& got) {
    throw Error(cat("[search] expected ",
                    count == 1 ? std::string("a number")
                               : cat(count, " numbers (one per objective, separated by spaces "
                                     "or commas)"),
                    " on the last line of the command's stdout, got ", got));
  };
  // "1, 2" by its commas (an empty piece is a word that is not a number), "1 2" by its blanks
  std::vector<std::string> words;
  if (line.find(',') != std::string::npos) {
    words = split(line, ',');
  } else {
    std::string word;
    for (char c : line + ' ') {
      if (!std::isspace(static_cast<unsigned char>(c))) word += c;
      else if (!word.empty()) words.push_back(word), word.clear();
    }
  }
  const std::string quoted = cat("'", clipped(line), "'");
  if (words.size() != count) fail(count == 1 ? quoted : cat(words.size(), " in ", quoted));
  std::vector<double> values;
  for (const std::string& word : words) {
    size_t used = 0;
    double v = NAN;
    try {
      v = std::stod(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    while (used < word.size() && std::isspace(static_cast<unsigned char>(word[used]))) ++used;
    if (word.empty() || used != word.size() || !std::isfinite(v)) fail(quoted);
    values.push_back(v);
  }
  return values;
}

std::vector<Direction> parse_directions(const std::string& text) {
  std::vector<Direction> out;
  for (const std::string& word : split_items(text, ',', "--directions", "maximize or minimize")) {
    MASE_CHECK(word == "maximize" || word == "minimize", ConfigError,
               "[--directions] expected maximize or minimize for each objective, got '",
               clipped(word), "'");
    out.push_back(word == "maximize" ? Direction::maximize : Direction::minimize);
  }
  MASE_CHECK(!out.empty(), ConfigError, "[--directions] expected maximize or minimize for each "
             "objective, comma-separated, got none");
  return out;
}

namespace {

// The two words after `tag` at the start of `line` (and whether anything followed them), or
// nullopt when the line does not start with the tag.
struct Tagged {
  std::string first, second, extra;
};
std::optional<Tagged> tagged(const std::string& line, const std::string& tag) {
  const size_t start = line.find_first_not_of(" \t");
  if (start == std::string::npos || line.compare(start, tag.size(), tag) != 0) return {};
  const size_t after = start + tag.size();
  if (after < line.size() && !std::isspace(static_cast<unsigned char>(line[after]))) return {};
  std::istringstream in(line.substr(after));
  Tagged t;
  in >> t.first >> t.second >> t.extra;
  return t;
}

}  // namespace

std::optional<std::pair<std::string, double>> constraint_line(const std::string& line) {
  const auto t = tagged(line, "mase:constraint");
  if (!t) return {};
  size_t used = 0;
  double value = NAN;
  try {
    value = std::stod(t->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  const std::string& name = t->first;
  const bool name_ok = !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-';
  });
  MASE_CHECK(name_ok && t->extra.empty() && !t->second.empty() && used == t->second.size() &&
                 std::isfinite(value),
             Error, "[search] expected 'mase:constraint NAME VALUE' (a name of letters, digits, "
             "_.-, a finite number; feasible when <= 0) on the command's stdout, got '",
             clipped(line), "'");
  return std::make_pair(t->first, value);
}

std::optional<std::pair<int64_t, double>> report_line(const std::string& line) {
  const auto t = tagged(line, "mase:report");
  if (!t) return {};
  const std::string &step_word = t->first, &value_word = t->second, &extra = t->extra;
  size_t used_step = 0, used_value = 0;
  int64_t step = -1;
  double value = NAN;
  try {
    step = std::stoll(step_word, &used_step);
    value = std::stod(value_word, &used_value);  // nan and inf too, as Optuna's report takes
  } catch (const std::exception&) {
    used_step = used_value = 0;
  }
  MASE_CHECK(extra.empty() && used_step == step_word.size() && used_value == value_word.size() &&
                 !step_word.empty() && !value_word.empty() && step >= 0,
             Error, "[search] expected 'mase:report STEP VALUE' (an integer step >= 0, a number) "
             "on the command's stdout, got '", clipped(line), "'");
  return std::make_pair(step, value);
}

Objective command_objective(const Space& space, const std::string& tmpl, size_t objectives,
                            std::shared_ptr<const Pruning> pruning) {
  MASE_CHECK(!tmpl.empty(), ConfigError, "[search] expected --command, got an empty template");
  MASE_CHECK(objectives >= 1, ConfigError, "[search] expected at least one objective, got 0");
  MASE_CHECK(!pruning || objectives == 1, ConfigError, "[search] --directions with ",
             objectives, " objectives expected --pruner none (a pruner judges one value as a "
             "trial runs)");
  Values zero;
  for (const Param& p : space.params()) zero[p.name] = p.kind == Param::Kind::categorical ? 0 : p.low;
  (void)expand_command(tmpl, space, zero, 0);  // unknown placeholders fail now
  return [tmpl, space, objectives, pruning](const Params& p, int64_t number) -> Outcome {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string cmd = expand_command(tmpl, space, p.values(), number);
    // Each constraint line is kept; with a pruner, each report line is recorded and judged as
    // it arrives. What stops the command (the pruner's verdict, a bad line, the storage) is
    // kept and acted on after it.
    std::optional<TrialPruned> pruned;
    std::exception_ptr failed;
    std::map<std::string, double> constraints;
    const LineWatch watch = [&](const std::string& line) {
      try {
        if (const auto c = constraint_line(line)) constraints[c->first] = c->second;
        const auto r = report_line(line);  // without a pruner, checked and not stored
        if (r && pruning) pruning->report(number, r->first, r->second);
        return true;
      } catch (const TrialPruned& e) {
        pruned = e;
      } catch (...) {
        failed = std::current_exception();
      }
      return false;
    };
    const ShellRun run = run_shell(cmd, kCommandGrace_s, watch);
    // stopped (Ctrl-C, kill): whatever it printed is not the trial's result; the caller
    // records the trial as interrupted (lab_runner.h, run_one_trial)
    MASE_CHECK(!run.stopped, Error, "[search] stopped: the command was sent SIGTERM",
               run.killed ? cat(" and, ", kCommandGrace_s, " s later, SIGKILL") : std::string(),
               ": ", cmd);
    if (failed) std::rethrow_exception(failed);
    Outcome o;
    o.constraints = constraints;
    o.attrs["wall_s"] =
        cat(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (pruned) {  // stopped early by the pruner: its last report is its value
      o.state = TrialState::pruned;
      o.value = pruned->value;
      o.attrs["pruned_at_step"] = cat(pruned->step);
      return o;
    }
    const std::string& last = run.last_line;
    const int status = run.status;
    MASE_CHECK(status != -1 && WIFEXITED(status) && WEXITSTATUS(status) == 0, Error,
               "[search] command ",
               status != -1 && WIFSIGNALED(status)
                   ? cat("killed by signal ", WTERMSIG(status))
                   : cat("exited with status ", status != -1 && WIFEXITED(status) ? WEXITSTATUS(status) : -1),
               ": ", cmd);
    try {
      const std::vector<double> values = output_values(last, objectives);
      o.value = values[0];
      if (objectives > 1) o.values = values;
    } catch (const Error& e) {
      throw Error(cat(e.what(), ": ", cmd));
    }
    o.attrs["output"] = last;
    return o;
  };
}

}  // namespace mase::search
