// search/sweep_model.cpp — evaluate after a pass and restore; train through a pass. Read
// sweep_model.h first.
#include "search/sweep_model.h"

#include <fstream>

#include "data/dataset.h"
#include "runtime/atomic_file.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "runtime/error.h"
#include "train/evaluate.h"
#include "train/run_dir.h"

namespace mase::search {
namespace fs = std::filesystem;

PassEvaluator::PassEvaluator(const train::TrainConfig& c, std::FILE* out)
    : lm_(train::load_model_dir(c.init, c.vocab)) {
  data::ImdbOptions o;
  o.data_dir = c.data_dir;
  o.cache_dir = c.cache_dir;
  o.vocab = lm_.tokenizer_file.string();  // the data tokenized with the model's tokenizer
  o.tokenizer = lm_.tokenizer_file.extension() == ".model" ? "sentencepiece" : "wordpiece";
  o.note = [out](const std::string& s) { std::fprintf(out, "[data] %s\n", s.c_str()); };
  test_ = train::balanced_subset(data::load_imdb(o).test, c.test_subset, 0);
  max_len_ = c.max_len > 0 ? c.max_len : lm_.max_len;
  eval_.batch_size = c.eval_batch_size;
  eval_.max_len = max_len_;
  eval_.pad_id = lm_.tokenizer->special().pad;
  eval_.device = Device::parse(c.device);
  lm_.model->to(eval_.device);
  for (const auto& [path, linear] : quant::linear_layers(*lm_.model)) {
    originals_[path] = lm_.model->submodule(path);
    if (const auto* q = dynamic_cast<const quant::QuantizedLinear*>(linear))
      prune_state_[path] = {q->weight_mask().defined(), q->activation_pruning()};
  }
  for (const auto& [name, t] : lm_.model->state_dict()) weights_[name] = t.detach().clone();  // values only
  std::fprintf(out, "model     %s (%s), %lld test reviews, max_len %lld, loaded once\n",
               lm_.weights.string().c_str(), lm_.tokenizer_file.filename().string().c_str(),
               static_cast<long long>(test_.size()), static_cast<long long>(max_len_));
  std::fflush(out);
}

void PassEvaluator::restore() {
  for (const auto& [path, module] : originals_) lm_.model->replace_submodule(path, module);
  for (const auto& [path, state] : prune_state_) {  // what prune() set in place
    auto* q = dynamic_cast<quant::QuantizedLinear*>(originals_.at(path).get());
    if (!state.had_mask) q->clear_weight_mask();
    if (state.activation) q->set_activation_pruning(*state.activation);
    else q->clear_activation_pruning();
  }
  lm_.model->load_state_dict(weights_);
  lm_.model->eval();
}

train::EvalResult PassEvaluator::evaluate(const std::function<void(nn::Module&)>& pass) {
  train::EvalResult r;
  try {
    pass(*lm_.model);
    r = train::evaluate(*lm_.model, test_, eval_);
  } catch (...) {
    restore();
    throw;
  }
  restore();
  return r;
}

train::TrainResult train_point(train::TrainConfig c, const nlohmann::json& pass,
                               const std::string& pass_flag, const fs::path& run) {
  std::error_code ec;
  fs::remove_all(run, ec);  // an earlier attempt of this point that did not finish
  fs::create_directories(run.parent_path());
  const std::string config = run.string() + ".json", log = run.string() + ".log";
  write_text_atomic(config, pass.dump(2) + "\n");
  (pass_flag == "quant" ? c.quant : c.prune) = config;
  c.out = run.string();
  std::FILE* sink = std::fopen(log.c_str(), "w");
  MASE_CHECK(sink != nullptr, IoError, "[sweep] cannot write ", log);
  train::TrainResult r;
  try {
    r = train::train_new(c, sink);
  } catch (...) {
    std::fclose(sink);
    throw;
  }
  std::fclose(sink);
  MASE_CHECK(r.status != train::TrainStatus::interrupted, Error, "[sweep] stopped during ",
             run.string(), " (run the same command again: this point starts over)");
  MASE_CHECK(r.status == train::TrainStatus::completed, Error, "[sweep] the run ", run.string(),
             " did not complete: ", r.message, " (its log: ", log, ")");
  return r;
}

Outcome eval_outcome(const train::EvalResult& e, Outcome o) {
  o.value = e.accuracy;
  o.attrs["test_loss"] = cat(e.loss);
  o.attrs["seconds"] = cat(e.seconds);
  return o;
}

Outcome train_outcome(train::TrainConfig c, int64_t steps, const nlohmann::json& pass,
                      const std::string& pass_flag, const fs::path& run, std::FILE* out) {
  c.max_steps = steps;
  std::fprintf(out, "training  %s: %lld steps (progress in %s.log)\n", run.string().c_str(),
               static_cast<long long>(steps), run.string().c_str());
  std::fflush(out);
  train::TrainResult r = train_point(c, pass, pass_flag, run);
  train::EvalResult e = r.eval;
  e.seconds = r.wall_s;
  Outcome o = eval_outcome(e);
  o.attrs["run"] = run.string();
  return o;
}

namespace {
// A key of the run's train_config.json, or null when there is no such file or key.
nlohmann::json run_config_value(const fs::path& model_dir, const char* key) {
  std::ifstream in(model_dir / train::RunDir::kConfig);
  if (!in.good()) return nullptr;
  try {
    return nlohmann::json::parse(in).value(key, nlohmann::json());
  } catch (const std::exception&) {
    return nullptr;
  }
}
}  // namespace

int64_t trained_max_len(const fs::path& model_dir) {
  nlohmann::json v = run_config_value(model_dir, "max_len");
  return v.is_number_integer() ? v.get<int64_t>() : 512;
}

std::string budget_text(const train::TrainConfig& b, const std::string& what, int64_t steps) {
  auto count = [](int64_t n) { return n > 0 ? cat(n) : std::string("all"); };
  std::string s = cat(count(b.test_subset), " test reviews, max_len ", b.max_len);
  if (steps > 0)
    s += cat("; ", what, " ", steps, " steps x ", b.batch_size, " on ", count(b.train_subset),
             " reviews");
  return s;
}

std::string model_label(const fs::path& model_dir) {
  nlohmann::json v = run_config_value(model_dir, "model");
  return v.is_string() ? v.get<std::string>() : model_dir.filename().string();
}

}  // namespace mase::search
