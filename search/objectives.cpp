// search/objectives.cpp — the architecture-search objective (Lab 2). Read objectives.h first.
#include "search/objectives.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "runtime/error.h"
#include "search/trial_pipeline.h"
#include "train/session.h"

namespace mase::search {

Space lab2_space() {
  Space s;
  s.categorical("num_layers", {"2", "4", "8"})
      .categorical("num_heads", {"2", "4", "8", "16"})
      .categorical("hidden_size", {"128", "192", "256", "384", "512"})
      .categorical("intermediate_size", {"512", "768", "1024", "1536", "2048"});
  return s;
}

const std::vector<std::string>& architecture_params() {
  static const std::vector<std::string> names = {"num_layers", "num_heads", "hidden_size",
                                                 "intermediate_size"};
  return names;
}

namespace {

// A parameter's value as an integer: the integer itself, or a categorical choice read as one.
int64_t as_integer(const Params& p, const Param& param) {
  if (param.kind == Param::Kind::integer) return p.integer(param.name);
  const std::string& choice = p.category(param.name);
  size_t used = 0;
  int64_t v = 0;
  try {
    v = std::stoll(choice, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  MASE_CHECK(used == choice.size() && !choice.empty(), ConfigError, "[search] parameter '",
             param.name, "' expected integer choices, got '", choice, "'");
  return v;
}

// The model's parameter count, as the trainer wrote it in final.json (train/trainer.cpp).
int64_t parameters_of(const std::filesystem::path& run) {
  std::ifstream in(run / "final.json");
  MASE_CHECK(in.good(), IoError, "[search] cannot read ", (run / "final.json").string());
  return nlohmann::json::parse(in).at("parameters").get<int64_t>();
}

}  // namespace

Objective architecture_objective(const Space& space, train::TrainConfig base,
                                 std::filesystem::path trials_dir, std::FILE* out,
                                 std::shared_ptr<const Pruning> pruning) {
  const auto& known = architecture_params();
  for (const Param& p : space.params()) {
    MASE_CHECK(std::find(known.begin(), known.end(), p.name) != known.end(), ConfigError,
               "[search] the architecture objective has no parameter '", p.name,
               "' (it knows num_layers, num_heads, hidden_size, intermediate_size)");
    MASE_CHECK(p.kind != Param::Kind::real, ConfigError, "[search] parameter '", p.name,
               "' must be categorical or integer, not real");
  }
  MASE_CHECK(base.init.empty(), ConfigError,
             "[search] architecture search trains from random init; --init is not allowed");

  MASE_CHECK(!pruning || base.eval_every > 0, ConfigError, "[search] a pruner judges the "
             "accuracies reported during training: expected --eval-every N > 0, got ",
             base.eval_every);

  // Captures by value: the Objective outlives this call. The space is copied for the same reason.
  return [space, base, trials_dir, out, pruning](const Params& p, int64_t number) -> Outcome {
    train::TrainConfig c = base;
    for (const Param& param : space.params()) {
      int64_t v = as_integer(p, param);
      if (param.name == "num_layers") c.num_layers = v;
      if (param.name == "num_heads") c.num_heads = v;
      if (param.name == "hidden_size") c.hidden_size = v;
      if (param.name == "intermediate_size") c.intermediate_size = v;
    }
    char name[32];
    std::snprintf(name, sizeof name, "trial-%04lld", static_cast<long long>(number));
    c.out = (trials_dir / name).string();

    // A FILE* for the trial's output: the caller's, or /dev/null.
    std::FILE* sink = out ? out : std::fopen("/dev/null", "w");
    MASE_CHECK(sink != nullptr, IoError, "[search] cannot open /dev/null");
    train::TrainResult r;
    try {
      r = train::train_new(c, sink, {}, nullptr, {}, report_accuracy(pruning, number));
    } catch (const TrialPruned& e) {  // stopped early: its last accuracy is its value
      if (!out) std::fclose(sink);
      Outcome o;
      o.state = TrialState::pruned;
      o.value = e.value;
      o.attrs["pruned_at_step"] = cat(e.step);
      o.attrs["run"] = c.out;
      return o;
    } catch (...) {
      if (!out) std::fclose(sink);
      throw;
    }
    if (!out) std::fclose(sink);
    MASE_CHECK(r.status == train::TrainStatus::completed, Error, "[search] trial ", number,
               " did not complete: ", r.message);
    if (pruning) pruning->record_final(number, r.step, r.eval.accuracy);  // the curve's end

    Outcome o;
    o.value = r.eval.accuracy;
    o.attrs["test_loss"] = cat(r.eval.loss);
    o.attrs["train_tokens_per_s"] = cat(r.train_tokens_per_s);
    o.attrs["wall_s"] = cat(r.wall_s);
    o.attrs["parameters"] = cat(parameters_of(c.out));
    o.attrs["run"] = c.out;
    return o;
  };
}

}  // namespace mase::search
