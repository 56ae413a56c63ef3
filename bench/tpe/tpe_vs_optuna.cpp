// bench/tpe/tpe_vs_optuna.cpp — mase-tpe-bench: how good mase-cpp's TPE is against Optuna's.
//
//   build/bin/mase-tpe-bench                       # 500 seeds, best after 10, 20, 30 trials
//   build/bin/mase-tpe-bench --seeds 100 --objective lab2 --samplers tpe,random
//
// Not a timing benchmark: a quality one. For each synthetic objective (the Lab 2 space with a
// made-up accuracy, Branin, a mixed hyper-parameter space) and each sampler, it runs one study
// per seed in memory (ask, evaluate, tell, as search/study.cpp would) and prints, over seeds, the
// mean (± standard error) and median of the best value after N trials and in how many seeds that
// best is within a tolerance of the optimum; beside them the same figures for Optuna 5.0's
// default TPESampler and its independent TPE, made once by bench/tpe/optuna_tpe.py and read from
// bench/tpe/optuna_tpe.json (whose objectives are checked against ours at a few points first).
// Results and what they show: docs/lab2.md "TPE against Optuna". Read next: search/tpe.h.
#include <CLI/CLI.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <numbers>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "runtime/error.h"
#include "search/sampler.h"

using namespace mase;
using namespace mase::search;
using nlohmann::json;

namespace {

// A synthetic objective, maximized; the same formulas as optuna_tpe.py.
struct Problem {
  std::string name;
  Space space;
  std::function<double(const Params&)> f;
};

double num(const Params& p, const char* name) { return std::stod(p.category(name)); }

std::vector<Problem> problems() {
  std::vector<Problem> out;
  {
    Space s;  // search/objectives.cpp lab2_space(), with the same choices
    s.categorical("num_layers", {"2", "4", "8"})
        .categorical("num_heads", {"2", "4", "8", "16"})
        .categorical("hidden_size", {"128", "192", "256", "384", "512"})
        .categorical("intermediate_size", {"512", "768", "1024", "1536", "2048"});
    out.push_back({"lab2", s, [](const Params& p) {
                     const double L = num(p, "num_layers"), H = num(p, "num_heads"),
                                  D = num(p, "hidden_size"), I = num(p, "intermediate_size");
                     auto sq = [](double x) { return x * x; };
                     return -(0.5 * sq(std::log2(D / H) - 6) + sq(std::log2(I / D) - 2) +
                              0.7 * sq(std::log2(L) - 2) + 0.3 * sq(std::log2(D) - 8));
                   }});
  }
  {
    Space s;
    s.real("x1", -5, 10).real("x2", 0, 15);
    out.push_back({"branin", s, [](const Params& p) {
                     const double x1 = p.real("x1"), x2 = p.real("x2"), pi = std::numbers::pi;
                     const double b = 5.1 / (4 * pi * pi), c = 5 / pi, t = 1 / (8 * pi);
                     const double u = x2 - b * x1 * x1 + c * x1 - 6;
                     return -(u * u + 10 * (1 - t) * std::cos(x1) + 10);
                   }});
  }
  {
    Space s;
    s.real("lr", 1e-5, 1e-1, true)
        .integer("layers", 1, 8)
        .categorical("act", {"relu", "gelu", "tanh"})
        .real("dropout", 0, 0.5);
    out.push_back({"hparams", s, [](const Params& p) {
                     const double r = std::log10(p.real("lr")) + 3 + 0.25 * (p.real("layers") - 4);
                     const double l = p.real("layers") - 6, d = p.real("dropout") - 0.1;
                     return -r * r - 0.05 * l * l + (p.category("act") == "gelu" ? 0.3 : 0.0) -
                            2 * d * d;
                   }});
  }
  return out;
}

// A point as optuna_tpe.py writes it (choices as text, numbers as numbers) in internal form.
Values internal(const Space& space, const json& point) {
  Values v;
  for (const Param& p : space.params()) {
    const json& x = point.at(p.name);
    v[p.name] = p.kind == Param::Kind::categorical ? p.parse(x.get<std::string>()) : x.get<double>();
  }
  return v;
}

// One study in memory: the best value after each of trials 1..n_trials.
std::vector<double> running_best(Sampler& sampler, const Problem& pb, int n_trials) {
  std::vector<Trial> history;
  std::vector<double> best;
  for (int n = 0; n < n_trials; ++n) {
    Trial t;
    t.number = n;
    t.values = *sampler.sample(pb.space, history, n);
    t.value = pb.f(Params(pb.space, t.values));
    t.state = TrialState::complete;
    best.push_back(n == 0 ? t.value : std::max(best.back(), t.value));
    history.push_back(std::move(t));
  }
  return best;
}

void print_row(const std::string& objective, const std::string& sampler, int n, double mean,
               double stderr_, double median, int hits, int seeds) {
  std::printf("%-8s %-19s %3d  %10.4f ± %-7.4f %10.4f  %4d/%d (%3.0f%%)\n", objective.c_str(),
              sampler.c_str(), n, mean, stderr_, median, hits, seeds, 100.0 * hits / seeds);
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mase-tpe-bench: mase-cpp's samplers against Optuna's TPE on synthetic objectives"};
  int seeds = 500;
  std::vector<std::string> wanted = {"lab2", "branin", "hparams"},
                           sampler_names = {"tpe", "tpe-independent", "random"};
  std::string optuna_path = MASE_TPE_OPTUNA_JSON;
  app.add_option("--seeds", seeds, "studies per (objective, sampler), seeds 0..S-1")
      ->capture_default_str();
  app.add_option("--objective", wanted, "lab2, branin, hparams (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--samplers", sampler_names, "mase-cpp samplers to run (comma-separated)")
      ->delimiter(',')
      ->capture_default_str();
  app.add_option("--optuna", optuna_path, "Optuna's figures (bench/tpe/optuna_tpe.py)")
      ->capture_default_str();
  CLI11_PARSE(app, argc, argv);

  try {
    MASE_CHECK(seeds >= 2, ConfigError, "[tpe-bench] expected --seeds >= 2, got ", seeds);
    std::ifstream in(optuna_path);
    MASE_CHECK(in.good(), IoError, "[tpe-bench] expected Optuna's figures in ", optuna_path,
               ", got no such file (run bench/tpe/optuna_tpe.py, or give --optuna)");
    const json optuna = json::parse(in);
    const auto checkpoints = optuna.at("checkpoints").get<std::vector<int>>();
    const int n_trials = checkpoints.back();
    std::printf("best value after N trials over seeds; found = within the tolerance of the "
                "optimum. Optuna %s: %d seeds (bench/tpe/optuna_tpe.json); mase-cpp: %d seeds\n",
                optuna.at("optuna_version").get<std::string>().c_str(),
                optuna.at("seeds").get<int>(), seeds);
    std::printf("%-8s %-19s %3s  %19s %10s  %s\n", "problem", "sampler", "N", "mean ± s.e.",
                "median", "found");
    const std::vector<Problem> all = problems();
    for (const std::string& w : wanted)
      MASE_CHECK(std::any_of(all.begin(), all.end(), [&](const Problem& p) { return p.name == w; }),
                 ConfigError, "[tpe-bench] --objective expected lab2, branin or hparams, got '", w,
                 "'");
    for (const Problem& pb : all) {
      if (std::find(wanted.begin(), wanted.end(), pb.name) == wanted.end()) continue;
      const json& ref = optuna.at("objectives").at(pb.name);
      // The same objective as Optuna ran, or the comparison means nothing.
      for (const auto& c : ref.at("checks")) {
        const double ours = pb.f(Params(pb.space, internal(pb.space, c[0])));
        MASE_CHECK(std::abs(ours - c[1].get<double>()) <= 1e-9 * std::max(1.0, std::abs(ours)),
                   Error, "[tpe-bench] objective ", pb.name, " at ", c[0].dump(), ": expected ",
                   c[1].get<double>(), " (optuna_tpe.py), got ", ours,
                   " (the two definitions differ)");
      }
      const double optimum = ref.at("optimum"), tol = ref.at("tolerance");
      for (const std::string& name : sampler_names) {
        const auto start = std::chrono::steady_clock::now();
        std::vector<std::vector<double>> bests(checkpoints.size());
        for (int seed = 0; seed < seeds; ++seed) {
          auto sampler = make_sampler(name, static_cast<uint64_t>(seed));
          const std::vector<double> b = running_best(*sampler, pb, n_trials);
          for (size_t i = 0; i < checkpoints.size(); ++i)
            bests[i].push_back(b[static_cast<size_t>(checkpoints[i] - 1)]);
        }
        for (size_t i = 0; i < checkpoints.size(); ++i) {
          std::vector<double>& b = bests[i];
          double mean = 0, var = 0;
          for (double x : b) mean += x / seeds;
          for (double x : b) var += (x - mean) * (x - mean) / (seeds - 1);
          std::sort(b.begin(), b.end());
          const double median = seeds % 2 ? b[seeds / 2] : 0.5 * (b[seeds / 2 - 1] + b[seeds / 2]);
          const auto hits = static_cast<int>(
              std::count_if(b.begin(), b.end(), [&](double x) { return x >= optimum - tol; }));
          print_row(pb.name, "mase " + name, checkpoints[i], mean, std::sqrt(var / seeds), median,
                    hits, seeds);
        }
        std::fprintf(stderr, "(%s %s: %.1f s)\n", pb.name.c_str(), name.c_str(),
                     std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
                         .count());
      }
      for (const auto& [label, rows] : ref.at("samplers").items())
        for (int n : checkpoints) {
          const json& r = rows.at(std::to_string(n));
          print_row(pb.name, label, n, r.at("mean"), r.at("stderr"), r.at("median"),
                    r.at("hits"), optuna.at("seeds"));
        }
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "mase-tpe-bench: %s\n", e.what());
    return 1;
  }
  return 0;
}
