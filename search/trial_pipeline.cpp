// search/trial_pipeline.cpp — data once, then build / train / test per trial. Read
// trial_pipeline.h first; train/session.cpp is the one-run version of the same steps.
#include "search/trial_pipeline.h"

#include <unistd.h>

#include <cstdlib>
#include <fstream>

#include "models/checkpoint.h"
#include "models/fusion.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "runtime/random.h"
#include "train/run_dir.h"

namespace mase::search {
namespace fs = std::filesystem;

namespace {

// mase-train's rule (train/session.cpp): a data folder we may not write keeps its tokenizer
// and token cache under ~/.cache/mase/imdb instead of tokenizing again on every run.
std::string cache_dir_for(const train::TrainConfig& c) {
  if (!c.cache_dir.empty()) return c.cache_dir;
  const fs::path dir = data::data_dir(c.data_dir) / "imdb";
  const fs::path probe = fs::exists(dir) ? dir : dir.parent_path();
  // writable: we may write (root may write anywhere) and the folder is not marked r-x
  std::error_code ec;
  const auto any_write = fs::perms::owner_write | fs::perms::group_write | fs::perms::others_write;
  const bool writable = ::access(probe.c_str(), W_OK) == 0 &&
                        (fs::status(probe, ec).permissions() & any_write) != fs::perms::none;
  if (!fs::exists(probe) || writable) return "";
  const char* home = std::getenv("HOME");
  if (!home || !*home) return "";
  const fs::path fallback = fs::path(home) / ".cache" / "mase" / "imdb";
  fs::create_directories(fallback, ec);
  return fallback.string();
}

}  // namespace

TrialData load_trial_data(const train::TrainConfig& c, std::FILE* log) {
  data::ImdbOptions o;
  o.data_dir = c.data_dir;
  o.cache_dir = cache_dir_for(c);
  o.tokenizer = c.tokenizer;
  o.vocab = c.vocab;
  o.sentencepiece.vocab_size = static_cast<int>(c.vocab_size);
  o.note = [log](const std::string& s) {
    std::fprintf(log, "[data] %s\n", s.c_str());
    std::fflush(log);
  };
  data::ImdbData d = data::load_imdb(o);
  TrialData t;
  t.train = train::balanced_subset(d.train, c.train_subset, c.seed);
  t.test = train::balanced_subset(d.test, c.test_subset, 0);
  t.tokenizer = d.tokenizer;
  t.tokenizer_path = d.tokenizer_path;
  t.pad_id = d.tokenizer->special().pad;
  return t;
}

std::shared_ptr<nn::BertForSequenceClassification> new_model(const train::TrainConfig& c,
                                                             const data::Tokenizer& tokenizer) {
  nn::BertConfig mc;
  if (c.model.ends_with(".json")) {
    mc = nn::load_config(c.model);
  } else {
    mc = nn::BertConfig::preset(c.model, tokenizer.vocab_size());
    mc.pad_token_id = tokenizer.special().pad;
  }
  if (c.num_layers > 0) mc.num_hidden_layers = c.num_layers;
  if (c.num_heads > 0) mc.num_attention_heads = c.num_heads;
  if (c.hidden_size > 0) mc.hidden_size = c.hidden_size;
  if (c.intermediate_size > 0) mc.intermediate_size = c.intermediate_size;
  const train::TrainConfig r = train::resolve_recipe(c);
  if (r.dropout) mc.hidden_dropout_prob = mc.attention_probs_dropout_prob = *r.dropout;
  if (r.pooling) mc.pooling = *r.pooling;
  mc.validate();
  manual_seed(c.seed);  // the initial weights are a function of the seed
  return std::make_shared<nn::BertForSequenceClassification>(mc);
}

train::EvalHook report_accuracy(std::shared_ptr<const Pruning> pruning, int64_t number) {
  if (!pruning) return {};
  return [pruning, number](int64_t step, const train::EvalResult& e) {
    pruning->report(number, step, e.accuracy);
  };
}

train::TrainResult train_model(train::TrainConfig c, nn::BertForSequenceClassification& model,
                               const TrialData& d, const fs::path& run_dir, std::FILE* log,
                               const train::EvalHook& on_eval) {
  c = train::resolve_recipe(c);
  c.out = run_dir.string();
  c.validate();
  set_num_threads(c.threads);
  nn::fuse_kernels(model);  // the blocks the trial left plain run the fused kernels
  model.to(Device::parse(c.device));
  fs::create_directories(run_dir.parent_path());
  train::RunDir run = train::RunDir::create(run_dir);
  {
    std::ofstream f(run.file(train::RunDir::kConfig));
    f << c.to_json().dump(2) << "\n";
  }
  d.tokenizer->save(run.file(train::tokenizer_file_name(d.tokenizer->name())));
  train::Trainer trainer(c, model, d.train, d.test, d.pad_id, run, log);
  trainer.on_eval = on_eval;
  train::TrainResult r = trainer.fit();
  MASE_CHECK(r.status == train::TrainStatus::completed, Error, "[search] training in ",
             run_dir.string(), " did not complete: ", r.message);
  return r;
}

train::EvalResult test_model(nn::BertForSequenceClassification& model, const TrialData& d,
                             const train::TrainConfig& c, const train::BatchHook& on_batch,
                             uint64_t batch_order_seed) {
  nn::fuse_kernels(model);
  train::EvalOptions eo;
  eo.batch_size = c.eval_batch_size;
  eo.max_len = c.max_len;
  eo.pad_id = d.pad_id;
  eo.device = Device::parse(c.device);
  eo.on_batch = on_batch;
  eo.batch_order_seed = batch_order_seed;
  return train::evaluate(model, d.test, eo);
}

fs::path trial_dir(const fs::path& dir, int64_t number) {
  char name[32];
  std::snprintf(name, sizeof name, "trial-%04lld", static_cast<long long>(number));
  return dir / name;
}

std::FILE* null_sink() {
  static std::FILE* sink = std::fopen("/dev/null", "w");
  MASE_CHECK(sink != nullptr, IoError, "[search] cannot open /dev/null");
  return sink;
}

}  // namespace mase::search
