// search/lab_objectives.cpp — architecture (+ compression) and precision trials. Read
// lab_objectives.h first.
#include "search/lab_objectives.h"

#include <algorithm>
#include <chrono>

#include "quant/passes.h"
#include "runtime/error.h"
#include "runtime/random.h"
#include "search/lab_spaces.h"
#include "search/objectives.h"
#include "train/session.h"

namespace mase::search {
namespace fs = std::filesystem;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// An architecture parameter's value: the integer, or the categorical choice read as one.
int64_t arch_value(const Params& p, const Param& param) {
  if (param.kind == Param::Kind::integer) return p.integer(param.name);
  return std::stoll(p.category(param.name));
}

bool is_architecture(const std::string& name) {
  const auto& known = architecture_params();
  return std::find(known.begin(), known.end(), name) != known.end();
}

}  // namespace

Objective arch_trial_objective(const Space& space, train::TrainConfig base,
                               std::shared_ptr<const TrialData> data, CompressStep compress,
                               fs::path trials_dir, std::FILE* log,
                               std::shared_ptr<const Pruning> pruning, bool params_objective) {
  for (const Param& p : space.params())
    MASE_CHECK(is_architecture(p.name) || p.name == "linear_layer" || p.name.ends_with("_type"),
               ConfigError, "[search] the architecture objective has no parameter '", p.name,
               "' (it knows num_layers, num_heads, hidden_size, intermediate_size and the "
               "Linear-or-Identity choices)");
  MASE_CHECK(base.init.empty(), ConfigError,
             "[search] architecture search trains from random init; --init is not allowed");
  if (!compress.config.is_null()) {  // a bad compress config fails now, not in every trial
    auto probe = std::make_shared<nn::BertForSequenceClassification>(
        nn::BertConfig::preset("bert-tiny", data->tokenizer->vocab_size()));
    (void)quant::compress(*probe, compress.config);
  }

  MASE_CHECK(!pruning || base.eval_every > 0, ConfigError, "[search] a pruner judges the "
             "accuracies reported during training: expected --eval-every N > 0, got ",
             base.eval_every);
  MASE_CHECK(!pruning || !params_objective, ConfigError, "[search] a pruner judges one value: "
             "expected no pruner for two objectives (accuracy, parameters), got one");
  return [space, base, data, compress, trials_dir, log, pruning, params_objective](
             const Params& p, int64_t number) {
    const auto t0 = std::chrono::steady_clock::now();
    train::TrainConfig c = base;
    for (const Param& param : space.params()) {
      if (!is_architecture(param.name)) continue;
      const int64_t v = arch_value(p, param);
      if (param.name == "num_layers") c.num_layers = v;
      if (param.name == "num_heads") c.num_heads = v;
      if (param.name == "hidden_size") c.hidden_size = v;
      if (param.name == "intermediate_size") c.intermediate_size = v;
    }
    auto model = new_model(c, *data->tokenizer);
    const std::vector<std::string> identity = apply_linear_choice(*model, p);
    Outcome o;
    const int64_t parameters = model->num_parameters(true);
    o.attrs["parameters"] = cat(parameters);
    o.attrs["identity_layers"] = cat(identity.size());
    const fs::path run = trial_dir(trials_dir, number);
    train::TrainResult r;
    try {
      r = train_model(c, *model, *data, run, log, report_accuracy(pruning, number));
    } catch (const TrialPruned& e) {  // stopped early: its last accuracy is its value
      o.state = TrialState::pruned;
      o.value = e.value;
      o.attrs["pruned_at_step"] = cat(e.step);
      o.attrs["wall_s"] = cat(seconds_since(t0));
      o.attrs["run"] = run.string();
      return o;
    }
    if (pruning) pruning->record_final(number, r.step, r.eval.accuracy);  // the curve's end
    o.value = r.eval.accuracy;
    o.attrs["accuracy_trained"] = cat(r.eval.accuracy);
    o.attrs["test_loss"] = cat(r.eval.loss);
    if (!compress.config.is_null()) {
      const quant::CompressReport report = quant::compress(*model, compress.config);
      const train::EvalResult e = test_model(*model, *data, c);
      o.value = e.accuracy;
      o.attrs["accuracy_compressed"] = cat(e.accuracy);
      o.attrs["test_loss"] = cat(e.loss);
      if (report.pruned)
        o.attrs["weight_sparsity"] =
            cat(static_cast<double>(report.prune.pruned()) / std::max<int64_t>(1, report.prune.weights()));
      if (compress.post_steps > 0) {
        train::TrainConfig post = c;
        post.max_steps = compress.post_steps;
        post.seed = c.seed + 1;  // another batch order than the first training
        train::TrainResult r2 = train_model(post, *model, *data, run / "post", log);
        o.value = r2.eval.accuracy;
        o.attrs["accuracy_post"] = cat(r2.eval.accuracy);
        o.attrs["test_loss"] = cat(r2.eval.loss);
      }
    }
    // two objectives: accuracy up, parameters down
    if (params_objective) o.values = {o.value, static_cast<double>(parameters)};
    o.attrs["wall_s"] = cat(seconds_since(t0));
    o.attrs["run"] = run.string();
    return o;
  };
}

LayerList linear_layer_list(const fs::path& init) {
  train::LoadedModel lm = train::load_model_dir(init);
  LayerList l;
  for (const auto& [name, lin] : quant::linear_layers(*lm.model)) {
    l.names.push_back(name);
    l.sizes.push_back(lin->weight.numel());
  }
  MASE_CHECK(!l.names.empty(), ConfigError, "[search] --init ", init.string(),
             " has no Linear layer to quantize");
  return l;
}

void check_precision_pruner(const PrunerConfig& pruner, int64_t qat_steps, int64_t eval_every,
                            bool bits_objective) {
  MASE_CHECK(!bits_objective, ConfigError, "[search] precision --pruner expected one objective "
             "(it judges one value), got --objectives accuracy,bits");
  MASE_CHECK(qat_steps > 0 || judges_instances(pruner), ConfigError, "[search] precision "
             "without QAT: expected --pruner wilcoxon (a trial's reports are its test batches), "
             "got ", pruner_name(pruner), " (it judges curves: add --qat-steps)");
  MASE_CHECK(qat_steps == 0 || !judges_instances(pruner), ConfigError, "[search] precision "
             "with --qat-steps: expected a curve pruner (median, percentile, halving, hyperband, "
             "threshold, patient), got ", pruner_name(pruner), " (it judges the PTQ test's "
             "batches: drop --qat-steps)");
  MASE_CHECK(qat_steps == 0 || (eval_every > 0 && eval_every < qat_steps), ConfigError,
             "[search] a pruner of QAT trials judges the tests during QAT: expected --eval-every "
             "N in [1, --qat-steps ", qat_steps, "), got ", eval_every);
}

Objective precision_trial_objective(const Space& space, const LayerList& layers, fs::path init,
                                    train::TrainConfig base, std::shared_ptr<const TrialData> data,
                                    int64_t qat_steps, fs::path trials_dir, std::FILE* log,
                                    double bits_weight, bool bits_objective,
                                    std::shared_ptr<const Pruning> pruning) {
  (void)space;
  if (pruning)
    check_precision_pruner(pruning->pruner(), qat_steps, base.eval_every, bits_objective);
  // what a report is (precision_trial_objective in lab_objectives.h)
  const bool by_batch = pruning && qat_steps == 0;
  const bool by_curve = pruning && qat_steps > 0;
  return [layers, init, base, data, qat_steps, trials_dir, log, bits_weight, bits_objective,
          pruning, by_batch, by_curve](const Params& p, int64_t number) {
    const auto t0 = std::chrono::steady_clock::now();
    const nlohmann::json cfg = precision_quant_config(p, layers.names);
    train::LoadedModel lm = train::load_model_dir(init);  // a fresh copy: weights only, fast
    const quant::QuantizeReport report = quant::quantize(*lm.model, cfg);
    Outcome o;
    o.attrs["quantized_layers"] = cat(report.quantized());
    const double bits = average_weight_bits(cfg, layers.names, layers.sizes);
    o.attrs["avg_weight_bits"] = cat(bits);
    const double penalty = bits_weight * bits / 32;  // every report is a value: less it too
    // a pruned trial's value is the last value it reported, as Optuna's
    auto pruned = [&](const TrialPruned& stop) {
      o.state = TrialState::pruned;
      o.value = stop.value;
      o.attrs["pruned_at_step"] = cat(stop.step);
      o.attrs["wall_s"] = cat(seconds_since(t0));
      return o;
    };
    // Wilcoxon: each batch's value reported as it is tested, in a per-trial order
    int64_t batches = 0, examples = 0, correct = 0;
    train::BatchHook on_batch;
    if (by_batch)
      on_batch = [&](int64_t b, const train::BatchScore& s) {
        ++batches;
        examples += s.examples;
        correct += s.correct;
        pruning->report(number, b, s.accuracy() - penalty);
      };
    train::EvalResult e;
    try {
      const uint64_t order_seed = by_batch ? static_cast<uint64_t>(number) + 1 : 0;
      e = test_model(*lm.model, *data, base, on_batch, order_seed);
    } catch (const TrialPruned& stop) {
      o.attrs["batches_tested"] = cat(batches);
      o.attrs["accuracy_so_far"] =
          cat(static_cast<double>(correct) / static_cast<double>(examples));
      return pruned(stop);
    }
    o.value = e.accuracy;
    o.attrs["accuracy_ptq"] = cat(e.accuracy);
    o.attrs["test_loss"] = cat(e.loss);
    if (qat_steps > 0) {
      train::TrainConfig c = base;
      c.max_steps = qat_steps;
      if (!c.lr) c.lr = 1e-4;  // fine-tuning a trained model: far below the from-scratch rate
      if (!c.warmup) c.warmup = 0.1;
      const fs::path run = trial_dir(trials_dir, number);
      o.attrs["run"] = run.string();
      train::EvalHook on_eval;  // the curve: PTQ at step 0, then every eval_every QAT steps
      if (by_curve)
        on_eval = [&](int64_t step, const train::EvalResult& r) {
          pruning->report(number, step, r.accuracy - penalty);
        };
      // the dropout masks a function of the seed, not of the trials this process ran before
      // (a loaded model, unlike a new one, draws no seed of its own: search/trial_pipeline.h)
      manual_seed(c.seed);
      train::TrainResult r;
      try {
        if (by_curve) pruning->report(number, 0, e.accuracy - penalty);
        r = train_model(c, *lm.model, *data, run, log, on_eval);
      } catch (const TrialPruned& stop) {  // at PTQ (no QAT step spent on it) or a QAT test
        return pruned(stop);
      }
      if (by_curve) pruning->record_final(number, r.step, r.eval.accuracy - penalty);
      o.value = r.eval.accuracy;
      o.attrs["accuracy_qat"] = cat(r.eval.accuracy);
      o.attrs["test_loss"] = cat(r.eval.loss);
    }
    o.attrs["accuracy"] = cat(o.value);
    if (bits_objective) o.values = {o.value, bits};  // two objectives: accuracy up, bits down
    o.value -= penalty;
    o.attrs["wall_s"] = cat(seconds_since(t0));
    return o;
  };
}

}  // namespace mase::search
