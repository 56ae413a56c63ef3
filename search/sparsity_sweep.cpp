// search/sparsity_sweep.cpp — Lab 1.2's points. Read sparsity_sweep.h first.
#include "search/sparsity_sweep.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <optional>

#include "quant/passes.h"
#include "runtime/error.h"
#include "search/sweep_list.h"
#include "search/sweep_model.h"

namespace mase::search {
namespace fs = std::filesystem;
using nlohmann::json;

const std::vector<std::string>& prune_methods() {
  static const std::vector<std::string> v = {"random", "l1-norm"};
  return v;
}
const std::vector<std::string>& prune_scopes() {
  static const std::vector<std::string> v = {"local", "global"};
  return v;
}
const std::vector<std::string>& prune_targets() {
  static const std::vector<std::string> v = {"weight", "activation", "both"};
  return v;
}

json prune_config(double sparsity, const std::string& method, const std::string& scope,
                  const std::string& target, uint64_t seed) {
  const json spec = {{"sparsity", sparsity}, {"method", method}, {"scope", scope}, {"seed", seed}};
  json c = json::object();
  if (target != "activation") c["weight"] = spec;
  if (target != "weight") c["activation"] = spec;
  return c;
}

namespace {

double index_of(const std::vector<std::string>& v, const std::string& s) {
  return double(std::find(v.begin(), v.end(), s) - v.begin());
}

// The fraction of Linear weights a fine-tuned run ended with (its final.json), as text.
std::string final_weight_sparsity(const fs::path& run) {
  std::ifstream in(run / "final.json");
  if (!in.good()) return "";
  try {
    json v = json::parse(in).at("compression").value("linear_weight_sparsity", json());
    return v.is_number() ? cat(v.get<double>()) : "";
  } catch (const std::exception&) {
    return "";
  }
}

}  // namespace

SweepPlan sparsity_sweep_plan(const SparsitySweepOptions& opt) {
  const train::TrainConfig& b = opt.base;
  SweepPlan plan = sweep_files(opt.dir, opt.study, opt.plots);
  const std::vector<std::string> finetune = {"no", "yes"};
  plan.space.categorical("sparsity", choices_of(opt.sparsities))
      .categorical("method", prune_methods())
      .categorical("scope", prune_scopes())
      .categorical("target", prune_targets())
      .categorical("finetune", finetune);
  for (const std::string& ft : finetune) {
    if (ft == "yes" && opt.finetune_steps <= 0) continue;
    for (const std::string& target : opt.targets)
      for (const std::string& scope : opt.scopes)
        for (const std::string& method : opt.methods)
          for (size_t i = 0; i < opt.sparsities.size(); ++i)
            plan.points.push_back({{"sparsity", double(i)},
                                   {"method", index_of(prune_methods(), method)},
                                   {"scope", index_of(prune_scopes(), scope)},
                                   {"target", index_of(prune_targets(), target)},
                                   {"finetune", index_of(finetune, ft)}});
  }
  plan.objective = {{"sweep", "lab1.2 sparsity"},
                    {"model_dir", fs::weakly_canonical(fs::absolute(b.init)).string()},
                    {"test_subset", b.test_subset}, {"max_len", b.max_len},
                    {"finetune_steps", opt.finetune_steps}, {"train_subset", b.train_subset},
                    {"batch_size", b.batch_size}, {"lr", b.lr ? json(*b.lr) : json()},
                    {"seed", b.seed}};

  // Curve labels name what varies; what is the same for every curve goes in the title.
  const bool scopes = opt.scopes.size() > 1, targets = opt.targets.size() > 1;
  const int64_t steps = opt.finetune_steps;
  plan.layout.x_param = "sparsity";
  plan.layout.label_params = {"method", "scope", "target", "finetune"};
  plan.layout.curve_label = [scopes, targets, steps](const Params& p) {
    std::string s = p.category("method");
    if (scopes) s += ", " + p.category("scope");
    if (targets) s += ", " + p.category("target");
    if (steps > 0)
      s += p.category("finetune") == "yes" ? cat(", fine-tuned ", steps, " steps")
                                           : std::string(", not fine-tuned");
    return s;
  };
  plan.layout.attr_columns = {"weight_sparsity", "test_loss", "seconds", "run"};
  std::string what = targets ? "" : opt.targets[0] == "both" ? "weights+activations"
                                                             : opt.targets[0] + "s";
  if (!scopes) what += (what.empty() ? "" : ", ") + opt.scopes[0] + " scope";
  plan.text.title = cat("Lab 1.2: ", model_label(b.init), " pruned",
                        what.empty() ? "" : " (" + what + ")", "\n",
                        budget_text(b, "fine-tuning", steps));
  auto joined = [](const std::vector<std::string>& v) {
    std::string j;
    for (const std::string& x : v) j += (j.empty() ? "" : ",") + x;
    return "{" + j + "}";
  };
  plan.summary = cat("Lab 1.2: ", opt.sparsities.size(), " sparsities x ", joined(opt.methods),
                     " x ", joined(opt.scopes), " x ", joined(opt.targets),
                     steps > 0 ? cat(", fine-tuned ", steps, " steps and not") : std::string(),
                     ", model ", b.init);
  plan.text.xlabel = "sparsity (fraction of values pruned)";
  return plan;
}

int run_sparsity_sweep(const SparsitySweepOptions& opt, std::FILE* out) {
  const SweepPlan plan = sparsity_sweep_plan(opt);
  std::optional<PassEvaluator> eval;  // loaded at the first point without fine-tuning
  const fs::path runs = fs::path(opt.dir) / opt.study;
  auto evaluate = [&](const Params& p) -> Outcome {
    const double s = std::stod(p.category("sparsity"));
    const std::string method = p.category("method"), scope = p.category("scope"),
                      target = p.category("target");
    const json config = prune_config(s, method, scope, target, opt.base.seed);
    if (p.category("finetune") == "no") {
      if (!eval) eval.emplace(opt.base, out);
      std::string sparsity;
      Outcome o = eval_outcome(eval->evaluate([&](nn::Module& m) {
        quant::PruneReport r = quant::prune(m, config);
        sparsity = cat(r.weights() ? double(r.pruned()) / double(r.weights()) : 0.0);
      }));
      o.attrs["weight_sparsity"] = sparsity;
      return o;
    }
    const fs::path run = runs / cat("ft-", method, "-", scope, "-", target, "-s", format_real(s));
    Outcome o = train_outcome(opt.base, opt.finetune_steps, config, "prune", run, out);
    o.attrs["weight_sparsity"] = final_weight_sparsity(run);
    return o;
  };
  return run_sweep(plan, evaluate, out);
}

}  // namespace mase::search
