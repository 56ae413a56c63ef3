// search/command_objective.h — any experiment as an objective: a command template run by the
// shell, whose last line on stdout is the trial's value (`mase-search custom`).
//
//   space    "lr=real:1e-5:1e-2:log,layers=int:1:8,act=cat:relu|gelu"
//            real:LOW:HIGH[:log]   int:LOW:HIGH[:log]   cat:A|B|C
//            (int bounds whole, within ±2^53; names without { or }; names and choices UTF-8)
//   command  "python3 train.py --lr {lr} --layers {layers} --act {act}"
// Each {name} becomes the trial's value as text (Param::format: the choice, the integer, or
// %.17g), single-quoted for the shell when it has other characters than letters, digits and
// _.+-=/:,@% (numbers never do, so {x} may sit inside quoted code); {trial} is the trial
// number. The trial fails (and the search goes on) when the command exits non-zero or its last
// non-empty stdout line is not a number; its stderr passes through to ours. Attributes: output
// (that line), wall_s. A study of several objectives (--directions maximize,minimize) reads as
// many numbers from that line, separated by blanks or by commas ("0.81 12.5", "0.81, 12.5"):
// another count, or a word among them, fails the trial the same way. The command runs in a
// process group of its own, stdin /dev/null; a stopped search (Ctrl-C, kill) sends it SIGTERM
// and the trial is interrupted, not complete (search/shell_command.h).
// Pruning (--pruner, search/pruner.h): the command reports as it goes with stdout lines
//   mase:report STEP VALUE          (Optuna's trial.report(VALUE, STEP); STEP an integer >= 0)
// each stored with the trial as it arrives (optuna-dashboard draws the curve) and judged by the
// pruner; a trial it stops is sent SIGTERM and recorded pruned, with the reported value and
// attribute pruned_at_step. The last line is still the value of a trial that runs to its end
// (a report line there fails the trial). A malformed report line fails the trial too.
// Constraints (Optuna's trial.set_constraint): stdout lines
//   mase:constraint NAME VALUE      (feasible when every VALUE <= 0; NAME letters, digits, _.-)
// are stored with the trial when it ends: an infeasible trial is never the best, and TPE and
// NSGA-II rank it after the feasible ones (search/study.h). With or without a pruner. Every
// command runs with PYTHONUNBUFFERED=1, so that these lines arrive as they are printed.
// Read next: search/lab_commands.h (run_custom), docs/lab2.md ("Any experiment").
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "search/pruner.h"
#include "search/study.h"

namespace mase::search {

// ConfigError naming --space and the item for a bad spec (kind, bounds, empty choices).
Space parse_space_spec(const std::string& spec);

// ConfigError naming --command for a {placeholder} that is not a parameter of `space`.
// `objectives` > 1: the trials' Outcome::values, one per objective, read from the last line.
// `pruning`: the reports are recorded and judged (one objective only: ConfigError otherwise).
Objective command_objective(const Space& space, const std::string& command_template,
                            size_t objectives = 1,
                            std::shared_ptr<const Pruning> pruning = nullptr);

// A "mase:report STEP VALUE" line's step and value; nullopt for any other line; Error saying
// what was expected for a line that starts so but is not of that form.
std::optional<std::pair<int64_t, double>> report_line(const std::string& line);
// The same for "mase:constraint NAME VALUE" (a finite VALUE).
std::optional<std::pair<std::string, double>> constraint_line(const std::string& line);

// The `count` numbers of a command's last stdout line (blank- or comma-separated; finite):
// Error saying what was expected and what the line held otherwise (the trial's "error").
std::vector<double> output_values(const std::string& line, size_t count);

// --directions "maximize,minimize": one direction per objective. ConfigError naming the flag
// for an empty item or another word.
std::vector<Direction> parse_directions(const std::string& text);

// The command of one trial (the template with its values in place).
std::string expand_command(const std::string& command_template, const Space& space,
                           const Values& values, int64_t trial);

}  // namespace mase::search
