// train/train_config.cpp — TrainConfig: checks, JSON both ways, and the recipe defaults.
#include "train/train_config.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <limits>
#include <set>
#include <thread>

#include "models/bert_config.h"
#include "runtime/device.h"
#include "runtime/error.h"
#include "runtime/parallel.h"

namespace mase::train {
namespace {

using nlohmann::json;

// Calls f(name, member) for every field, in the order of the struct: one list serves
// to_json, from_json and the unknown-key check, so they cannot drift apart.
template <class C, class F>
void for_each_field(C& c, F&& f) {
  f("model", c.model);
  f("init", c.init);
  f("pooling", c.pooling);
  f("dropout", c.dropout);
  f("freeze", c.freeze);
  f("num_layers", c.num_layers);
  f("num_heads", c.num_heads);
  f("hidden_size", c.hidden_size);
  f("intermediate_size", c.intermediate_size);
  f("data", c.data);
  f("data_dir", c.data_dir);
  f("cache_dir", c.cache_dir);
  f("tokenizer", c.tokenizer);
  f("vocab", c.vocab);
  f("vocab_size", c.vocab_size);
  f("max_len", c.max_len);
  f("train_subset", c.train_subset);
  f("test_subset", c.test_subset);
  f("bucketing", c.bucketing);
  f("pad_multiple", c.pad_multiple);
  f("batch_size", c.batch_size);
  f("epochs", c.epochs);
  f("max_steps", c.max_steps);
  f("lr", c.lr);
  f("warmup", c.warmup);
  f("schedule", c.schedule);
  f("weight_decay", c.weight_decay);
  f("beta1", c.beta1);
  f("beta2", c.beta2);
  f("eps", c.eps);
  f("clip", c.clip);
  f("seed", c.seed);
  f("threads", c.threads);
  f("device", c.device);
  f("precision", c.precision);
  f("cuda_graphs", c.cuda_graphs);
  f("deterministic", c.deterministic);
  f("profile", c.profile);
  f("quant", c.quant);
  f("prune", c.prune);
  f("compress", c.compress);
  f("mxint8_weights", c.mxint8_weights);
  f("int8_kernels", c.int8_kernels);
  f("lora_rank", c.lora_rank);
  f("lora_alpha", c.lora_alpha);
  f("lora_dropout", c.lora_dropout);
  f("lora_targets", c.lora_targets);
  f("fuse_lora", c.fuse_lora);
  f("out", c.out);
  f("log_every", c.log_every);
  f("ckpt_every", c.ckpt_every);
  f("eval_every", c.eval_every);
  f("eval_batch_size", c.eval_batch_size);
}

template <class T>
json to_j(const T& v) {
  return json(v);
}
template <class T>
json to_j(const std::optional<T>& v) {
  return v ? json(*v) : json(nullptr);
}

// Reads j into v, checking the JSON type against the field's C++ type.
template <class T>
void from_j(const json& j, T& v, const char* key, const std::string& src) {
  bool ok;
  if constexpr (std::is_same_v<T, std::string>) ok = j.is_string();
  else if constexpr (std::is_same_v<T, bool>) ok = j.is_boolean();
  else if constexpr (std::is_integral_v<T>) ok = j.is_number_integer();
  else ok = j.is_number();
  MASE_CHECK(ok, ConfigError, "[train] ", src, ": expected ", key, " to be ",
             std::is_same_v<T, std::string> ? "a string"
             : std::is_same_v<T, bool>      ? "a boolean"
             : std::is_integral_v<T>        ? "an integer"
                                            : "a number",
             ", got ", j.dump());
  if constexpr (std::is_unsigned_v<T> && !std::is_same_v<T, bool>) {
    MASE_CHECK(j.is_number_unsigned(), ConfigError, "[train] ", src, ": expected ", key,
               " >= 0, got ", j.dump());
  }
  if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
    // get<T> would wrap a value outside T ("threads": 4294967297 read as 1)
    using L = std::numeric_limits<T>;
    bool fits = false;  // an unsigned T took only unsigned JSON numbers (above)
    if (j.is_number_unsigned()) {
      fits = j.get<uint64_t>() <= static_cast<uint64_t>(L::max());
    } else if constexpr (std::is_signed_v<T>) {
      fits = j.get<int64_t>() >= L::min() && j.get<int64_t>() <= L::max();
    }
    MASE_CHECK(fits, ConfigError, "[train] ", src, ": expected ", key, " within [", +L::min(), ", ",
               +L::max(), "], got ", j.dump());
  }
  v = j.get<T>();
}
template <class T>
void from_j(const json& j, std::optional<T>& v, const char* key, const std::string& src) {
  if (j.is_null()) {
    v.reset();
    return;
  }
  T x{};
  from_j(j, x, key, src);
  v = x;
}

void at_least(const char* flag, double v, double lo) {
  MASE_CHECK(v >= lo, ConfigError, "[train] expected --", flag, " >= ", lo, ", got ", v);
}

}  // namespace

void TrainConfig::validate() const {
  MASE_CHECK(data == "imdb", ConfigError, "[train] expected --data imdb, got '", data,
             "' (the only dataset so far)");
  MASE_CHECK(tokenizer == "sentencepiece" || tokenizer == "wordpiece", ConfigError,
             "[train] expected --tokenizer sentencepiece or wordpiece, got '", tokenizer, "'");
  MASE_CHECK(!pooling || *pooling == "cls" || *pooling == "mean", ConfigError,
             "[train] expected --pooling cls or mean, got '", pooling.value_or(""), "'");
  MASE_CHECK(int8_kernels == "on" || int8_kernels == "off", ConfigError,
             "[train] expected --int8-kernels on or off, got '", int8_kernels, "'");
  MASE_CHECK(schedule == "linear" || schedule == "cosine" || schedule == "constant", ConfigError,
             "[train] expected --schedule linear, cosine or constant, got '", schedule, "'");
  MASE_CHECK(precision == "fp32" || precision == "tf32" || precision == "bf16", ConfigError,
             "[train] expected --precision fp32, tf32 or bf16, got '", precision, "'");
  MASE_CHECK(precision != "tf32" || Device::parse(device).is_cuda(), ConfigError,
             "[train] --precision tf32 is a GPU mode (tensor cores); use it with --device cuda "
             "(the CPU has fp32 and bf16)");
  MASE_CHECK(!cuda_graphs || Device::parse(device).is_cuda(), ConfigError,
             "[train] --cuda-graphs captures GPU work; use it with --device cuda");
  at_least("profile", static_cast<double>(profile), 0);
  at_least("vocab-size", static_cast<double>(vocab_size), 8);
  at_least("layers", static_cast<double>(num_layers), 0);
  at_least("heads", static_cast<double>(num_heads), 0);
  at_least("hidden", static_cast<double>(hidden_size), 0);
  at_least("intermediate", static_cast<double>(intermediate_size), 0);
  MASE_CHECK(init.empty() || num_layers + num_heads + hidden_size + intermediate_size == 0,
             ConfigError, "[train] --layers, --heads, --hidden and --intermediate change a "
             "preset; a model from --init keeps the architecture of its config.json");
  at_least("max-len", static_cast<double>(max_len), 2);
  at_least("pad-multiple", static_cast<double>(pad_multiple), 1);
  at_least("train-subset", static_cast<double>(train_subset), 0);
  at_least("test-subset", static_cast<double>(test_subset), 0);
  at_least("batch-size", static_cast<double>(batch_size), 1);
  at_least("epochs", static_cast<double>(epochs.value_or(1)), 1);
  at_least("max-steps", static_cast<double>(max_steps), 0);
  at_least("weight-decay", weight_decay, 0);
  at_least("clip", clip, 0);
  at_least("threads", threads, 0);
  // Upper bounds checked before any data is read or memory allocated
  const int cores = std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  MASE_CHECK(threads <= kMaxThreadsPerCore * cores, ConfigError, "[train] expected --threads <= ",
             kMaxThreadsPerCore, " x ", cores, " cores = ", kMaxThreadsPerCore * cores, ", got ",
             threads, " (0 = all cores)");
  auto at_most = [](const char* flag, const char* key, int64_t v, int64_t max) {
    MASE_CHECK(v <= max, ConfigError, "[train] expected ", key, " <= ", max, ", got ", v, " (", flag, ")");
  };
  at_most("--layers", "num_hidden_layers", num_layers, nn::kMaxLayers);
  at_most("--hidden", "hidden_size", hidden_size, 16384);
  at_most("--heads", "num_attention_heads", num_heads, 1024);
  at_most("--intermediate", "intermediate_size", intermediate_size, 65536);
  at_least("log-every", static_cast<double>(log_every), 1);
  at_least("ckpt-every", static_cast<double>(ckpt_every), 0);
  at_least("eval-every", static_cast<double>(eval_every), 0);
  at_least("eval-batch-size", static_cast<double>(eval_batch_size), 1);
  // NaN fails every comparison, so `!(x > 0)` also catches it
  MASE_CHECK(!lr || (*lr > 0 && std::isfinite(*lr)), ConfigError,
             "[train] expected --lr > 0, got ", lr.value_or(0));
  MASE_CHECK(!warmup || (*warmup >= 0 && std::isfinite(*warmup)), ConfigError,
             "[train] expected --warmup >= 0 (a fraction < 1 or a number of steps), got ",
             warmup.value_or(0));
  // at most 2^53 steps: whole and exact as a double, and within int64 for warmup_steps
  MASE_CHECK(!warmup || *warmup < 1 || (*warmup == std::floor(*warmup) && *warmup <= 0x1p53),
             ConfigError, "[train] expected --warmup to be a fraction < 1 or a whole number of "
             "steps up to 2^53, got ", *warmup);
  MASE_CHECK(!dropout || (*dropout >= 0 && *dropout < 1), ConfigError,
             "[train] expected --dropout in [0, 1), got ", dropout.value_or(0));
  MASE_CHECK(beta1 >= 0 && beta1 < 1 && beta2 >= 0 && beta2 < 1, ConfigError,
             "[train] expected betas in [0, 1), got ", beta1, ", ", beta2);
  at_least("eps", eps, 0);
  MASE_CHECK(compress.empty() || (quant.empty() && prune.empty()), ConfigError,
             "[train] --compress holds both the quantize and the prune config; it cannot be "
             "combined with --quant or --prune");
  at_least("lora-rank", static_cast<double>(lora_rank), 0);
  MASE_CHECK(lora_alpha > 0 && std::isfinite(lora_alpha), ConfigError,
             "[train] expected --lora-alpha > 0, got ", lora_alpha);
  MASE_CHECK(lora_dropout >= 0 && lora_dropout < 1, ConfigError,
             "[train] expected --lora-dropout in [0, 1), got ", lora_dropout);
  MASE_CHECK(!fuse_lora || lora_rank > 0, ConfigError,
             "[train] --fuse-lora folds the adapters of --lora-rank R into the weights; give "
             "--lora-rank too");
  MASE_CHECK(!model.empty(), ConfigError, "[train] expected --model NAME or a config.json, got ''");
  Device::parse(device);  // ConfigError for anything but cpu, cuda, cuda:N
  if (init.empty() && !model.ends_with(".json")) {
    nn::BertConfig::preset(model);  // ConfigError listing the presets for an unknown name
  }
}

json TrainConfig::to_json() const {
  json j = json::object();
  for_each_field(*this, [&](const char* key, const auto& v) { j[key] = to_j(v); });
  return j;
}

TrainConfig TrainConfig::from_json(const json& j, const std::string& source) {
  MASE_CHECK(j.is_object(), ConfigError, "[train] ", source, ": expected a JSON object, got ",
             j.type_name());
  TrainConfig c;
  std::set<std::string> known;
  for_each_field(c, [&](const char* key, auto& v) {
    known.insert(key);
    if (j.contains(key)) from_j(j[key], v, key, source);
  });
  for (const auto& [key, value] : j.items()) {
    MASE_CHECK(known.count(key), ConfigError, "[train] ", source, ": unknown key '", key,
               "' (written by another version of mase-train?)");
  }
  c.validate();
  return c;
}

std::string TrainConfig::model_name() const {
  std::filesystem::path p(model);
  if (p.has_filename() && p.filename() != p) {  // a path: config.json, or an --init folder
    return p.extension() == ".json" ? p.stem().string() : p.filename().string();
  }
  if (!p.has_filename()) return p.parent_path().filename().string();  // "dir/"
  return p.extension() == ".json" ? p.stem().string() : model;
}

// The recipe. From scratch, measured on IMDb (docs/training.md, "Runs"): [CLS] pooling, HF's,
// so that a saved model predicts the same in transformers' BertForSequenceClassification
// (which ignores our "pooling" key); with this recipe it scored as mean pooling did (bert-tiny
// e3b 85.96% against e1's 85.76% on 5,000 reviews; q2 against q1 on all 25,000); a peak lr
// that shrinks with the model's width; a short warm-up. From a checkpoint: BERT's fine-tuning
// values (Devlin et al. 2019, appendix A.3); pooling and dropout as the checkpoint has them.
TrainConfig resolve_recipe(TrainConfig c) {
  const bool scratch = c.init.empty();
  // from a checkpoint, pooling and dropout stay the checkpoint's (config.json) unless given
  if (!c.pooling && scratch) c.pooling = "cls";
  if (!c.dropout && scratch) c.dropout = 0.1;
  const bool narrow = c.model == "bert-tiny" || c.model == "bert-mini";
  // 2% of the steps was enough for bert-tiny (docs/training.md); wider post-LN models are
  // less stable early on, so they get a longer ramp
  if (!c.warmup) c.warmup = !scratch ? 0.1 : narrow ? 0.02 : 0.06;
  // From scratch both measured sizes peak after one epoch (docs/training.md, "Runs"): bert-tiny
  // scored 85.7% with the 1-epoch schedule and 81.4 / 84.5 / 84.8% by epoch with the 3-epoch
  // one (f1); bert-small 86.2% with the 1-epoch schedule (p1) and 86.2 / 85.2% after epochs 1
  // and 2 of the 3-epoch one, its test loss rising (s5). Fine-tuning a checkpoint: 3 (BERT's).
  if (!c.epochs) c.epochs = scratch ? 1 : 3;
  if (!c.lr) {
    if (!scratch) {
      c.lr = 5e-5;
    } else if (c.model == "bert-tiny") {
      c.lr = 1e-3;
    } else if (c.model == "bert-mini") {
      c.lr = 7e-4;
    } else {
      // bert-small and wider: 5e-4 left bert-small stuck at loss ~0.64 (67.8% after an epoch);
      // 2e-4 reached 86.2% in one epoch, 1e-4 84.4% (docs/training.md, runs s2, p1, p2)
      c.lr = 2e-4;
    }
  }
  c.validate();
  return c;
}

int64_t total_steps(const TrainConfig& c, int64_t batches_per_epoch) {
  const char* unset = !c.lr ? "lr" : !c.warmup ? "warmup" : !c.epochs ? "epochs" : nullptr;
  MASE_CHECK(unset == nullptr, ConfigError, "[train] expected the recipe resolved (lr, warmup ",
             "and epochs set), got ", unset ? unset : "", " unset (resolve_recipe fills them; a ",
             "run folder's train_config.json holds them unless it was edited)");
  if (c.max_steps > 0) return c.max_steps;
  const int64_t most = std::numeric_limits<int64_t>::max() / std::max<int64_t>(1, batches_per_epoch);
  MASE_CHECK(*c.epochs <= most, ConfigError, "[train] expected --epochs <= ", most, " (x ",
             batches_per_epoch, " batches an epoch within 64 bits), got ", *c.epochs);
  return *c.epochs * batches_per_epoch;
}

int64_t warmup_steps(const TrainConfig& c, int64_t total_steps) {
  const double w = c.warmup.value_or(0);
  if (w < 1) return static_cast<int64_t>(std::llround(w * static_cast<double>(total_steps)));
  return static_cast<int64_t>(w);
}

}  // namespace mase::train
