// train/session.cpp — new, resumed and evaluation-only runs around the Trainer (session.h).
#include "train/session.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <regex>

#include "runtime/atomic_file.h"
#include "models/checkpoint.h"
#include "models/fusion.h"
#include "models/json_io.h"
#include "models/lora.h"
#include "models/parameters.h"
#include "quant/checkpoint.h"
#include "quant/integer_linear.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "runtime/cpu_features.h"
#include "runtime/gpu_math.h"
#include "runtime/parallel.h"
#include "runtime/random.h"

namespace mase::train {
namespace {

using nlohmann::json;

using nn::with_commas;  // 1234567 -> "1,234,567" (models/parameters.h)

json read_json(const fs::path& p, const char* op) { return nn::parse_json_file(p.string(), op); }

// ", padded to a multiple of 16" for the data and eval lines ("" for the default, 1)
std::string padding(const TrainConfig& c) {
  return c.pad_multiple > 1 ? cat(", padded to a multiple of ", c.pad_multiple) : "";
}

// The folder holding config.json + model.safetensors for `dir`: itself, or, for a run still
// in progress, its latest checkpoint. Reads only: RunDir::open would tidy the checkpoints
// folder, deleting the temporary folder of a save that the training process is writing.
fs::path model_folder(const fs::path& dir) {
  MASE_CHECK(fs::is_directory(dir), ConfigError, "[init] expected a model or run folder, got ",
             dir.string(), fs::exists(dir) ? " (a file)" : " (no such folder)");
  if (fs::is_regular_file(dir / "model.safetensors")) return dir;
  if (fs::is_regular_file(dir / RunDir::kConfig)) {
    const std::optional<fs::path> latest = RunDir::of_other_rank(dir).latest_checkpoint();
    MASE_CHECK(latest.has_value(), ConfigError, "[init] expected a checkpoint in the run folder ",
               dir.string(), ", got none (it stopped, or is still running, before its first one)");
    return *latest;
  }
  throw ConfigError(cat("[init] ", dir.string(),
                        " is neither a model folder (config.json + model.safetensors) nor a "
                        "mase-train run folder"));
}

// The data of `c`: IMDb tokenized with c's tokenizer, subsets applied.
struct Data {
  data::TokenizedSplit train, test;
  std::shared_ptr<const data::Tokenizer> tokenizer;
  fs::path source, tokenizer_path;
};

Data load_data(const TrainConfig& c, std::FILE* out) {
  data::ImdbOptions o;
  o.data_dir = c.data_dir;
  o.cache_dir = c.cache_dir;  // "" = $MASE_CACHE_DIR/imdb or ~/.cache/mase/imdb (data/fetch.h)
  o.tokenizer = c.tokenizer;
  o.vocab = c.vocab;
  o.sentencepiece.vocab_size = static_cast<int>(c.vocab_size);
  o.note = [out](const std::string& s) {
    std::fprintf(out, "[data] %s\n", s.c_str());
    std::fflush(out);
  };
  data::ImdbData d = data::load_imdb(o);
  Data r;
  r.train = balanced_subset(d.train, c.train_subset, c.seed);
  // the test subset does not depend on --seed: runs with different seeds compare on the same
  r.test = balanced_subset(d.test, c.test_subset, 0);
  r.tokenizer = d.tokenizer;
  r.source = d.source;
  r.tokenizer_path = d.tokenizer_path;
  for (const auto& [split, name] : {std::pair{&r.train, "train"}, std::pair{&r.test, "test"}})
    if (std::string w = data::one_class_warning(*split, name); !w.empty())
      std::fprintf(out, "%s\n", w.c_str());
  return r;
}

// Ranks must train on the same reviews: their data folders and caches may come from the
// environment ($MASE_DATA_DIR, $MASE_CACHE_DIR), which the compared config does not record.
void check_same_data(const DataParallel* dp, const Data& d) {
  if (!dp) return;
  std::vector<std::pair<const void*, size_t>> parts;
  for (const data::TokenizedSplit* s : {&d.train, &d.test}) {
    parts.emplace_back(s->ids.data(), s->ids.size() * sizeof(int32_t));
    parts.emplace_back(s->offsets.data(), s->offsets.size() * sizeof(int64_t));
    parts.emplace_back(s->labels.data(), s->labels.size() * sizeof(int32_t));
  }
  dp->check_same_bytes("data (the token ids and labels of the reviews)", parts);
}

void check_vocab(const nn::BertConfig& mc, const data::Tokenizer& tok, const std::string& what) {
  MASE_CHECK(mc.vocab_size == tok.vocab_size(), ConfigError, "[train] ", what, " has vocab_size ",
             mc.vocab_size, " but the tokenizer has ", tok.vocab_size(),
             " ids (use the tokenizer the model was trained with: --vocab FILE, or set "
             "vocab_size in config.json)");
}

// Applies --layers, --heads, --hidden, --intermediate, --dropout and --pooling to a model config
// (BertConfig::validate, called next, refuses a hidden size the heads do not divide).
nn::BertConfig with_overrides(nn::BertConfig mc, const TrainConfig& c) {
  if (c.num_layers > 0) mc.num_hidden_layers = c.num_layers;
  if (c.num_heads > 0) mc.num_attention_heads = c.num_heads;
  if (c.hidden_size > 0) mc.hidden_size = c.hidden_size;
  if (c.intermediate_size > 0) mc.intermediate_size = c.intermediate_size;
  if (c.dropout) {
    mc.hidden_dropout_prob = *c.dropout;
    mc.attention_probs_dropout_prob = *c.dropout;
  }
  if (c.pooling) mc.pooling = *c.pooling;
  mc.validate();
  return mc;
}

// The model of a new run or an evaluation: from scratch or from c.init.
std::shared_ptr<nn::BertForSequenceClassification> build_model(const TrainConfig& c,
                                                               const data::Tokenizer& tok,
                                                               std::FILE* out) {
  manual_seed(c.seed);  // the initial weights are a function of the seed
  std::shared_ptr<nn::BertForSequenceClassification> model;
  if (!c.init.empty()) {
    const fs::path dir = model_folder(c.init);
    nn::BertConfig mc = with_overrides(nn::load_config((dir / "config.json").string()), c);
    check_vocab(mc, tok, (dir / "config.json").string());
    model = std::make_shared<nn::BertForSequenceClassification>(mc);
    nn::LoadReport report;
    quant::load_compressed_weights(*model, dir.string(), &report);  // + compression.json
    std::fprintf(out, "init      %s (%zu tensors renamed, %zu ignored, %zu freshly initialised%s)\n",
                 dir.string().c_str(), report.renamed.size(), report.ignored.size(),
                 report.initialized.size(),
                 report.initialized.empty() ? "" : cat(": ", report.initialized.front(),
                                                       report.initialized.size() > 1 ? ", …" : "")
                                                       .c_str());
  } else if (c.model.ends_with(".json")) {
    nn::BertConfig mc = with_overrides(nn::load_config(c.model), c);
    check_vocab(mc, tok, c.model);
    model = std::make_shared<nn::BertForSequenceClassification>(mc);
  } else {
    nn::BertConfig mc = nn::BertConfig::preset(c.model, tok.vocab_size());
    mc.pad_token_id = tok.special().pad;
    model = std::make_shared<nn::BertForSequenceClassification>(with_overrides(mc, c));
  }
  MASE_CHECK(c.max_len <= model->config().max_position_embeddings, ConfigError,
             "[train] expected --max-len <= ", model->config().max_position_embeddings,
             " (the model's max_position_embeddings), got ", c.max_len);
  return model;
}

// --quant / --prune / --compress as one compress config ({"quantize": ..., "prune": ...}),
// read now so that a bad file fails before the data is loaded.
json read_compression(const TrainConfig& c) {
  // an empty file would quietly do nothing (a wrong file, or one not saved yet): refused
  auto read = [](const std::string& file, const char* flag) {
    json j = quant::read_config_file(file);
    MASE_CHECK(!(j.is_object() && j.empty()), ConfigError, "[", flag, "] expected a config, got "
               "an empty one in ", file, " (docs/lab1.md shows one)");
    return j;
  };
  json cfg = json::object();
  if (!c.compress.empty()) cfg = read(c.compress, "--compress");
  if (!c.quant.empty()) cfg["quantize"] = read(c.quant, "--quant");
  if (!c.prune.empty()) cfg["prune"] = read(c.prune, "--prune");
  return cfg;
}

// The passes, in order: quantize, prune, then MXINT8 packing; each prints its report.
void apply_compression(nn::BertForSequenceClassification& model, const TrainConfig& c,
                       const json& cfg, std::FILE* out) {
  if (!cfg.empty()) {
    try {
      std::fprintf(out, "%s", quant::compress(model, cfg).str().c_str());
    } catch (const ConfigError& e) {  // name the file(s) the config came from
      std::string files;
      for (const std::string* f : {&c.compress, &c.quant, &c.prune})
        if (!f->empty()) files += (files.empty() ? "" : ", ") + *f;
      throw ConfigError(cat(e.what(), " (in ", files, ")"));
    }
  }
  if (c.mxint8_weights) std::fprintf(out, "%s", quant::mxint8_weights(model).str().c_str());
  std::fflush(out);
}

void print_summary(const TrainConfig& c, const Data& d, const nn::BertForSequenceClassification& m,
                   const Trainer& t, const RunDir& run, std::FILE* out, const DataParallel* dp) {
  const auto& mc = m.config();
  std::fprintf(out, "model     %s: L%lld H%lld A%lld I%lld, vocab %s, pooling %s, %s\n",
               c.init.empty() ? c.model.c_str() : c.init.c_str(),
               (long long)mc.num_hidden_layers, (long long)mc.hidden_size,
               (long long)mc.num_attention_heads, (long long)mc.intermediate_size,
               with_commas(mc.vocab_size).c_str(), mc.pooling.c_str(),
               c.init.empty() ? cat("random init (seed ", c.seed, ")").c_str() : "from --init");
  if (mc.pooling != "cls")
    std::fprintf(out, "note      pooling %s is not HF's: transformers would load this model but pool "
                      "[CLS] and predict differently (--pooling cls for HF parity)\n",
                 mc.pooling.c_str());
  std::fprintf(out, "data      %s: %s train / %s test reviews, max_len %lld, bucketing %s%s\n",
               d.source.string().c_str(), with_commas(d.train.size()).c_str(),
               with_commas(d.test.size()).c_str(), (long long)c.max_len, c.bucketing ? "on" : "off",
               padding(c).c_str());
  std::fprintf(out, "tokenizer %s, vocab %s (%s)\n", d.tokenizer->name().c_str(),
               with_commas(d.tokenizer->vocab_size()).c_str(), d.tokenizer_path.string().c_str());
  std::fprintf(out,
               "recipe    AdamW lr %g, %s schedule, warm-up %lld steps, batch %lld, %lld steps "
               "(%lld per epoch), weight decay %g, clip %g, dropout %g\n",
               *c.lr, c.schedule.c_str(), (long long)warmup_steps(c, t.total_steps()),
               (long long)c.batch_size, (long long)t.total_steps(),
               (long long)t.steps_per_epoch(), c.weight_decay, c.clip,
               mc.hidden_dropout_prob);
  const bool on_gpu = Device::parse(c.device).is_cuda();
  const std::string precision =
      c.precision == "fp32" ? "fp32"
      : c.precision == "tf32" ? "tf32 GEMMs (tensor cores, fp32 accumulation)"
      : on_gpu ? "bf16 GEMMs with fp32 accumulation (bf16 tensor cores)"
      : cat("bf16 GEMMs with fp32 accumulation (", cpu_bf16_gemm_path(), ")");
  // the attention's arithmetic follows the precision (runtime/gpu_math.h, runtime/cpu/sdpa_amx.h)
  const std::string attention = on_gpu                  ? cat("; attention ", gpu_attention_math())
                                : c.precision == "bf16" ? cat("; attention ", cpu_bf16_attention_path())
                                                        : "";
  std::fprintf(out, "device    %s, %d thread%s, precision %s%s\n", c.device.c_str(), num_threads(),
               num_threads() == 1 ? "" : "s", precision.c_str(), attention.c_str());
  if (dp)
    std::fprintf(out, "dist      %s, %d ranks, each %lld rows of the batch of %lld\n",
                 dp->backend() == DistBackend::nccl ? "nccl" : "mpi", dp->world(),
                 (long long)(c.batch_size / dp->world()), (long long)c.batch_size);
  if (!Device::parse(c.device).is_cuda())
    std::fprintf(out, "cpu       %s; GEMMs: %s\n", isa_summary().c_str(), gemm_library().c_str());
  std::fprintf(out, "trainable parameters\n");
  for (const auto& [name, n] : parameter_counts(m)) {
    std::fprintf(out, "  %-18s %12s\n", name.c_str(), with_commas(n).c_str());
  }
  const int64_t frozen = m.num_parameters() - m.num_parameters(true);
  if (frozen > 0) std::fprintf(out, "  (frozen: %s)\n", with_commas(frozen).c_str());
  std::fprintf(out, "run       %s\n", run.path().string().c_str());
  std::fflush(out);
}

void report(const TrainResult& r, const RunDir& run, const Data& d, std::FILE* out) {
  if (r.status == TrainStatus::completed) {
    const auto& labels = d.test.labels;
    const double pos = labels.empty() ? 0 : static_cast<double>(std::count(labels.begin(), labels.end(), 1)) /
                                                static_cast<double>(labels.size());
    if (std::string w = chance_level_warning(r.eval.accuracy, pos, r.step); !w.empty())
      std::fprintf(out, "%s\n", w.c_str());
    std::fprintf(out,
                 "done      test_accuracy %.4f  test_loss %.4f  (%lld reviews)  %s tok/s  "
                 "wall %s\n          model and results in %s\n",
                 r.eval.accuracy, unsigned_nan(r.eval.loss), (long long)r.eval.examples,
                 format_rate(r.train_tokens_per_s).c_str(), format_duration(r.wall_s).c_str(),
                 run.path().string().c_str());
  } else {
    std::fprintf(out, "%s\n", r.message.c_str());
  }
  std::fflush(out);
}

}  // namespace

std::vector<std::pair<std::string, int64_t>> parameter_counts(const nn::Module& model) {
  std::vector<std::pair<std::string, int64_t>> out;
  int64_t total = 0;
  for (const auto& [name, child] : model.named_children()) {
    // a container child (bert) is listed by its own children (embeddings, encoder, pooler)
    nn::NamedModules parts = child->named_children();
    bool nested = false;
    for (const auto& [sub, m] : parts) nested |= !m->named_children().empty();
    if (!nested) parts = {{"", child}};
    for (const auto& [sub, m] : parts) {
      const int64_t n = m->num_parameters(/*trainable_only=*/true);
      if (n > 0 || m->num_parameters() > 0)
        out.push_back({sub.empty() ? name : name + "." + sub, n});
      total += n;
    }
  }
  out.push_back({"total", total});
  return out;
}

int64_t freeze_parameters(nn::Module& model, const std::string& pattern) {
  std::regex re;
  try {
    re = std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw ConfigError(cat("[train] --freeze '", pattern, "' is not a valid regex (", e.what(), ")"));
  }
  int64_t n = 0;
  for (auto& [name, p] : model.named_parameters()) {
    if (std::regex_search(name, re)) {
      p.set_requires_grad(false);
      ++n;
    }
  }
  MASE_CHECK(n > 0, ConfigError, "[train] --freeze '", pattern,
             "' matches no parameter (paths look like bert.encoder.layer.0.attention.self.query.weight)");
  return n;
}

TrainResult train_new(TrainConfig c, std::FILE* out, const StepHook& on_step,
                      DataParallel* dp, const ForwardFactory& forward, const EvalHook& on_eval) {
  c = resolve_recipe(c);
  if (c.out.empty()) c.out = default_run_name(c.model_name(), c.data);
  if (dp) {  // one run folder (rank 0's name: the clocks may differ), one config
    c.out = dp->broadcast(c.out);
    dp->check_same("config (flags)", c.to_json().dump());
    dp->share(c.batch_size);  // the batch splits evenly, or a ConfigError before any writing
  }
  const bool root = !dp || dp->root();
  // refuse a used --out before the slow work (RunDir::create checks again)
  MASE_CHECK(!root || !fs::exists(c.out) || fs::is_directory(c.out), ConfigError, "[run] --out ",
             c.out, " exists and is not a folder (pass another --out)");
  MASE_CHECK(!root || !fs::exists(c.out) || (fs::is_directory(c.out) && fs::is_empty(c.out)),
             ConfigError,
             "[run] --out ", c.out, " is not empty (pass another --out, or continue that run with "
             "--resume ", c.out, ")");
  require_device(Device::parse(c.device));
  if (!c.init.empty()) nn::load_config((model_folder(c.init) / "config.json").string());
  set_num_threads(c.threads);
  quant::set_integer_kernels(c.int8_kernels == "on");  // the evaluations of a QAT run
  set_cpu_gemm_precision(c.precision == "bf16" ? GemmPrecision::bf16 : GemmPrecision::fp32);
  if (!c.init.empty() && c.vocab.empty()) {  // --init brings its tokenizer (HF: vocab.txt)
    const fs::path tok = find_tokenizer_file(c.init);
    if (!tok.empty()) {
      c.vocab = tok.string();
      c.tokenizer = tokenizer_kind(tok);
    }
  }
  const json compression = read_compression(c);
  Data d = load_data(c, out);
  check_same_data(dp, d);
  if (dp) check_epoch_splits(d.train.size(), c.batch_size, dp->world());  // before --out is made
  auto model = build_model(c, *d.tokenizer, out);
  apply_compression(*model, c, compression, out);  // before the optimizer exists (QAT)
  if (!c.freeze.empty()) freeze_parameters(*model, c.freeze);
  if (c.lora_rank > 0) {  // adapters; then only they and the head train (models/lora.h)
    nn::LoraConfig lc;
    lc.rank = c.lora_rank;
    lc.alpha = c.lora_alpha;
    lc.dropout = c.lora_dropout;
    lc.targets = c.lora_targets;
    std::fprintf(out, "%s", nn::insert_lora(*model, lc).str().c_str());
  }
  // the blocks left plain by the passes above run fused kernels (a compiler fuses on its graph)
  if (!forward) nn::fuse_kernels(*model);
  model->to(Device::parse(c.device));
  RunDir run = root ? RunDir::create(c.out) : RunDir::of_other_rank(c.out);
  if (root) {
    write_text_atomic(run.file(RunDir::kConfig).string(), c.to_json().dump(2) + "\n");
    d.tokenizer->save(run.file(tokenizer_file_name(d.tokenizer->name())));
  }
  Trainer trainer(c, *model, d.train, d.test, d.tokenizer->special().pad, run, out);
  trainer.on_step = on_step;
  trainer.on_eval = on_eval;
  if (dp) trainer.set_data_parallel(dp);
  if (forward) trainer.set_forward(forward(model));
  print_summary(c, d, *model, trainer, run, out, dp);
  TrainResult r = trainer.fit();
  report(r, run, d, out);
  return r;
}

TrainResult resume(const fs::path& dir, const ResumeOverrides& o, std::FILE* out,
                   const StepHook& on_step, DataParallel* dp, const ForwardFactory& forward) {
  RunDir run = RunDir::open(dir);
  TrainConfig c = TrainConfig::from_json(read_json(run.file(RunDir::kConfig), "resume"),
                                         run.file(RunDir::kConfig).string());
  if (o.threads) c.threads = *o.threads;
  if (o.device) c.device = *o.device;
  if (o.log_every) c.log_every = *o.log_every;
  c.validate();
  try {  // a hand-edited file that lost a value of its recipe: now, naming it, before any data
    (void)total_steps(c, 1);
  } catch (const ConfigError& e) {
    throw ConfigError(cat("[resume] ", run.file(RunDir::kConfig).string(), ": ", e.what()));
  }
  require_device(Device::parse(c.device));
  set_num_threads(c.threads);
  quant::set_integer_kernels(c.int8_kernels == "on");
  set_cpu_gemm_precision(c.precision == "bf16" ? GemmPrecision::bf16 : GemmPrecision::fp32);
  const fs::path tok = find_tokenizer_file(dir);
  MASE_CHECK(!tok.empty(), ConfigError, "[resume] ", dir.string(),
             " has no tokenizer file (vocab.txt or tokenizer.model)");
  c.vocab = tok.string();
  c.tokenizer = tokenizer_kind(tok);
  const fs::path ckpt = *run.latest_checkpoint();
  check_world_size(ckpt, dp ? dp->world() : 1);  // before the batch is split over the ranks
  Data d = load_data(c, out);
  check_same_data(dp, d);
  nn::BertConfig mc = nn::load_config((ckpt / "config.json").string());
  check_vocab(mc, *d.tokenizer, (ckpt / "config.json").string());
  auto model = std::make_shared<nn::BertForSequenceClassification>(mc);
  quant::apply_compression_sidecar(*model, ckpt.string());  // quantized / pruned / LoRA layers
  if (!c.freeze.empty()) freeze_parameters(*model, c.freeze);
  if (c.lora_rank > 0) nn::set_lora_trainable(*model);  // as insert_lora left it
  if (!forward) nn::fuse_kernels(*model);
  model->to(Device::parse(c.device));
  if (dp) dp->check_same("config (train_config.json and flags)", c.to_json().dump());
  Trainer trainer(c, *model, d.train, d.test, d.tokenizer->special().pad, run, out);
  if (dp) trainer.set_data_parallel(dp);
  trainer.restore(ckpt);
  trainer.on_step = on_step;
  if (forward) trainer.set_forward(forward(model));
  std::fprintf(out, "resume    %s at step %lld of %lld (epoch %lld, batch %lld of %lld)\n",
               ckpt.string().c_str(), (long long)trainer.state().step,
               (long long)trainer.total_steps(), (long long)trainer.state().epoch + 1,
               (long long)trainer.state().batch, (long long)trainer.steps_per_epoch());
  std::fflush(out);
  TrainResult r = trainer.fit();
  report(r, run, d, out);
  return r;
}

EvalResult eval_only(TrainConfig c, std::FILE* out, const ForwardFactory& forward) {
  MASE_CHECK(!c.init.empty(), ConfigError,
             "[train] --eval-only needs a model: pass --init RUN_OR_MODEL_DIR");
  set_num_threads(c.threads);
  const json compression = read_compression(c);
  LoadedModel lm = load_model_dir(c.init, c.vocab);
  apply_compression(*lm.model, c, compression, out);  // post-training quantization / pruning
  quant::set_integer_kernels(c.int8_kernels == "on");
  set_cpu_gemm_precision(c.precision == "bf16" ? GemmPrecision::bf16 : GemmPrecision::fp32);
  if (c.int8_kernels == "on" && Device::parse(c.device).is_cpu()) {  // integers, weights packed once
    if (forward) {
      // --compile traces the model, and an Int8Linear records no op: the compiled graph keeps
      // the QuantizedLinears (their own integer path under no-grad; fold_mxint8 may unpack
      // MXINT8 weights once), so say which one runs
      bool quantized = false;
      for (auto& [path, lin] : quant::linear_layers(*lm.model))
        quantized |= dynamic_cast<const quant::QuantizedLinear*>(lin) != nullptr;
      if (quantized)
        std::fprintf(out, "integer inference: the compiled graph keeps its QuantizedLinears "
                          "(Int8Linear cannot be traced); drop --compile for the packed int8 layers\n");
    } else {
      const quant::IntegerInferenceReport ir = quant::integer_inference(*lm.model);
      if (!ir.converted.empty() || !ir.kept.empty()) std::fprintf(out, "%s", ir.str().c_str());
    }
  }
  if (c.max_len <= 0) c.max_len = lm.max_len;  // 0: what the run was trained with
  c.vocab = lm.tokenizer_file.string();          // the data tokenized with the model's tokenizer
  c.tokenizer = tokenizer_kind(lm.tokenizer_file);
  c.validate();
  Data d = load_data(c, out);
  if (!forward) nn::fuse_kernels(*lm.model);
  lm.model->to(Device::parse(c.device));
  EvalOptions eo;
  if (forward) eo.forward = forward(lm.model);
  eo.batch_size = c.eval_batch_size;
  eo.max_len = c.max_len;
  eo.pad_multiple = c.pad_multiple;
  eo.pad_id = d.tokenizer->special().pad;
  eo.device = Device::parse(c.device);
  EvalResult e = evaluate(*lm.model, d.test, eo);
  std::fprintf(out,
               "eval      %s: test_accuracy %.6f  test_loss %.9g  (%lld reviews, max_len %lld%s, %s)\n",
               lm.weights.string().c_str(), e.accuracy, unsigned_nan(e.loss), (long long)e.examples,
               (long long)c.max_len, padding(c).c_str(), format_duration(e.seconds).c_str());
  std::fflush(out);
  return e;
}

LoadedModel load_model_dir(const fs::path& dir, const std::string& vocab) {
  const fs::path folder = model_folder(dir);
  LoadedModel lm;
  lm.weights = folder / "model.safetensors";
  lm.model = quant::load_compressed(folder.string());  // + its compression.json, if any
  lm.model->eval();
  fs::path tok = vocab.empty() ? find_tokenizer_file(dir) : fs::path(vocab);
  if (tok.empty()) tok = find_tokenizer_file(folder);
  MASE_CHECK(!tok.empty(), ConfigError, "[tokenizer] ", dir.string(),
             " has no tokenizer (vocab.txt or tokenizer.model); pass --vocab FILE");
  lm.tokenizer = data::load_tokenizer(tok);
  lm.tokenizer_file = tok;
  check_vocab(lm.model->config(), *lm.tokenizer, (folder / "config.json").string());
  lm.max_len = std::min<int64_t>(512, lm.model->config().max_position_embeddings);
  if (fs::is_regular_file(dir / RunDir::kConfig)) {
    TrainConfig c = TrainConfig::from_json(read_json(dir / RunDir::kConfig, "predict"),
                                           (dir / RunDir::kConfig).string());
    lm.max_len = c.max_len;
  }
  return lm;
}

}  // namespace mase::train
