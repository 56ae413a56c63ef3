// tools/mase-train — train and evaluate BERT sequence classifiers on IMDb.
//
//   mase-train --model bert-tiny --data imdb               # train from scratch, evaluate
//   mase-train --resume runs/bert-tiny-imdb-20250101-120000 # continue an interrupted run
//   mase-train --init RUN_OR_HF_DIR --eval-only              # evaluate a saved model
//   mase-train predict RUN_DIR "A wonderful film."          # label and probability
//   mpirun -np 2 mase-train --model bert-tiny ...            # data parallel: 2 CPU processes
//
// A thin main: flags (CLI11) -> train::TrainConfig -> train/session.h. The contradictions
// between flags are refused here, before anything is read or written.
// Exit status: 0 done; 1 an error (one line); 2 bad flags or config; 3 the loss diverged
// (NaN/inf); 130 stopped by Ctrl-C / SIGTERM / SIGHUP after saving a checkpoint (resume it).
// Read next: train/session.h, docs/training.md (the recipe and measured runs).
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "graph/compile.h"
#include "runtime/error.h"
#include "runtime/parallel.h"
#include "train/session.h"
#include "tools/cli.h"

using namespace mase;
using namespace mase::train;

namespace {

constexpr int kExitDiverged = 3, kExitInterrupted = 130;  // 1 and 2: tools/cli.h


const char* kFooter = R"(Examples:
  mase-train --model bert-tiny --data imdb --data-dir ../shared/data
      from scratch with the recipe for bert-tiny (sentencepiece 16k trained on IMDb train,
      [CLS] pooling, lr 1e-3, 1 epoch); results in runs/bert-tiny-imdb-<date>-<time>/
  mase-train --model bert-tiny --train-subset 2000 --test-subset 1000 --epochs 1
      a quick look (a few minutes)
  mase-train --resume runs/bert-tiny-imdb-20250101-120000
      continue a run stopped with Ctrl-C (bit-identical to an uninterrupted run)
  mase-train --init runs/bert-tiny-imdb-20250101-120000 --eval-only
      evaluate a saved model (a run folder, or an HF folder with vocab.txt)
  mase-train --init path/to/hf-bert-mini --lr 5e-5 --epochs 2 --freeze 'embeddings'
      fine-tune a pretrained HF checkpoint with its WordPiece vocab, embeddings frozen
  mase-train predict runs/bert-tiny-imdb-20250101-120000 "A wonderful film."
      print the label and its probability
  mpirun -np 2 mase-train --model bert-tiny --batch-size 32 --threads 1
      data parallel on the CPU: 2 processes, 16 reviews of each batch each, gradients
      all-reduced with MPI (--dist nccl --device cuda: one GPU per process; docs/scaling.md)
  mase-train --model bert-tiny --train-subset 2000 --test-subset 1000 --max-steps 20 --compile
      train and evaluate through graph::compile (docs/lab4.md): one plan per batch shape and
      mode, batches padded to multiples of 16 tokens (--pad-multiple); with --pad-multiple 1
      the losses of the run without --compile up to fp32 rounding (narrow_cls)
  mase-train --init runs/bert-tiny-imdb-20250101-120000 --eval-only --quant int8.toml
      post-training quantization (PTQ): quantize the trained model, evaluate it
  mase-train --init runs/bert-tiny-imdb-20250101-120000 --quant int8.toml --epochs 1
      quantization-aware training (QAT); --prune / --compress likewise (docs/lab1.md)
  mase-train --init runs/bert-tiny-imdb-20250101-120000 --lora-rank 8 --fuse-lora --epochs 1
      LoRA fine-tuning: rank-8 adapters on the encoder's Linears, fused at the end (docs/lab0.md)
Data: --data-dir DIR, else $MASE_DATA_DIR, else ~/.cache/mase; IMDb is DIR/imdb/aclImdb/ or
DIR/imdb/aclImdb_v1.tar.gz, downloaded there when missing (docs/data.md).
Exit status: 0 done, 1 error, 2 bad flags, 3 loss diverged, 130 stopped (resumable).)";

// The flags a resumed run may set (it keeps its saved config otherwise).
const std::vector<std::string> kResumeFlags = {"--resume", "--threads", "--device",
                                               "--log-every", "--dist",
                                               "--compile"};

// What --eval-only reads; any other flag (--out, --lr, --lora-rank, ...) would be silently
// unused: nothing is trained or saved.
const std::vector<std::string> kEvalOnlyFlags = {
    "--eval-only", "--init",  "--data",     "--data-dir",      "--cache-dir",    "--vocab",
    "--test-subset", "--max-len", "--pad-multiple", "--eval-batch-size", "--threads", "--device",
    "--precision", "--deterministic", "--compile", "--quant", "--prune", "--compress",
    "--mxint8-weights", "--int8-kernels", "--seed"};

// One line per text: label and probability, then (--logits) every logit with %.9g, enough
// digits to tell f32 values apart: what to compare with HF transformers' logits.
int run_predict(const std::string& dir, std::vector<std::string> texts, const std::string& file,
                bool logits, const std::string& vocab, int threads) {
  // (TrainConfig::validate checks it for training; predict reads it alone: -1 meant all cores)
  MASE_CHECK(threads >= 0, ConfigError, "[predict] expected --threads >= 0, got ", threads,
             " (0 = all cores)");
  set_num_threads(threads);
  if (!file.empty()) {  // one review per line, empty lines skipped
    std::ifstream in(file);
    if (!in) throw IoError(cat("[predict] cannot read --file ", file));
    int64_t n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      MASE_CHECK(cli::is_text(line), ConfigError, "[predict] expected text in --file ", file,
                 ", got bytes that are not UTF-8 text on line ", n, " (a binary file?)");
      if (!line.empty()) texts.push_back(line);
    }
  }
  if (texts.empty()) throw ConfigError("[predict] expected texts or --file FILE, got neither");
  LoadedModel lm = load_model_dir(dir, vocab);
  for (const std::string& text : texts) {
    Prediction p = predict(*lm.model, *lm.tokenizer, text, lm.max_len);
    const char* names[] = {"negative", "positive"};
    std::string label = lm.model->config().num_labels == 2 ? names[p.label]
                                                           : "LABEL_" + std::to_string(p.label);
    std::string shown = text.size() > 70 ? text.substr(0, 67) + "..." : text;
    std::printf("%s %.4f", label.c_str(), p.probability);
    if (logits) {
      std::printf("  logits");
      for (float z : p.logits) std::printf(" %.9g", z);
    }
    std::printf("  %s\n", shown.c_str());
  }
  return 0;
}

// A new run, or --resume, or --eval-only: the work once the flags are checked.
int train_or_resume(TrainConfig& c, const std::string& resume_dir, bool eval_only_flag,
                    std::FILE* out, DataParallel* dp,
                    const std::function<bool(const char*)>& given, const ForwardFactory& forward) {
  if (!resume_dir.empty()) {
    ResumeOverrides o;
    if (given("--threads")) o.threads = c.threads;
    if (given("--device")) o.device = c.device;
    if (given("--log-every")) o.log_every = c.log_every;
    clear_stop();
    install_stop_handlers();
    TrainResult r = resume(resume_dir, o, out, {}, dp, forward);
    return r.status == TrainStatus::completed     ? 0
           : r.status == TrainStatus::interrupted ? kExitInterrupted
                                                  : kExitDiverged;
  }
  if (eval_only_flag) {
    if (!given("--max-len")) c.max_len = 0;  // the run's own max_len
    eval_only(c, out, forward);
    return 0;
  }
  clear_stop();
  install_stop_handlers();
  TrainResult r = train_new(c, out, {}, dp, forward);
  return r.status == TrainStatus::completed     ? 0
         : r.status == TrainStatus::interrupted ? kExitInterrupted
                                                : kExitDiverged;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mase-train: train and evaluate BERT sequence classifiers on IMDb"};
  app.footer(kFooter);
  TrainConfig c;
  std::string resume_dir, pooling, bucketing = "on";
  double lr = 0, warmup = 0, dropout = 0;
  std::string dist = "auto";
  bool eval_only_flag = false, compile = false;

  app.add_option("--model", c.model,
                 "bert-tiny|bert-mini|bert-small|bert-medium|bert-base, or a config.json")
      ->capture_default_str();
  // when given, >= 1 (the config's 0 means "the preset's", which an explicit 0 must not mean)
  app.add_option("--layers", c.num_layers, "encoder layers (default: the preset's)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--heads", c.num_heads, "attention heads (default: the preset's)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--hidden", c.hidden_size, "hidden size (default: the preset's)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--intermediate", c.intermediate_size, "FFN size (default: the preset's)")
      ->check(CLI::Range(1, 1 << 20));
  app.add_option("--data", c.data, "dataset (imdb)")->capture_default_str();
  app.add_option("--data-dir", c.data_dir, "folder with imdb/ in it (else $MASE_DATA_DIR, ~/.cache/mase)")
      ->check(cli::nonempty("a folder"));
  app.add_option("--cache-dir", c.cache_dir, "tokenizer models and token caches (else $MASE_CACHE_DIR/imdb, ~/.cache/mase/imdb)")
      ->check(cli::nonempty("a folder"));
  app.add_option("--tokenizer", c.tokenizer, "sentencepiece (trained on IMDb train) or wordpiece")
      ->capture_default_str();
  app.add_option("--vocab", c.vocab, "tokenizer file: a vocab.txt or a sentencepiece .model")
      ->check(cli::existing_file("a tokenizer file (vocab.txt or .model)"));
  app.add_option("--vocab-size", c.vocab_size, "sentencepiece pieces to train")->capture_default_str();
  app.add_option("--max-len", c.max_len, "tokens per review, [CLS] and [SEP] included")
      ->capture_default_str();
  app.add_option("--batch-size", c.batch_size, "reviews per step")->capture_default_str();
  int64_t epochs = 0;
  app.add_option("--epochs", epochs, "passes over the training split (default: 1 from scratch, "
                 "3 from --init)");
  app.add_option("--max-steps", c.max_steps,
                 "train exactly this many steps (overrides --epochs; 0, the default: --epochs)");
  app.add_option("--train-subset", c.train_subset, "train on N reviews (label-balanced, seeded)");
  app.add_option("--test-subset", c.test_subset, "evaluate on N test reviews (label-balanced, fixed)");
  app.add_option("--lr", lr, "peak learning rate (default: by model, see docs/training.md)");
  app.add_option("--warmup", warmup, "warm-up: a fraction of the steps (< 1) or steps (>= 1)");
  app.add_option("--schedule", c.schedule, "after warm-up: linear, cosine or constant")
      ->capture_default_str();
  app.add_option("--weight-decay", c.weight_decay, "AdamW weight decay (not on biases, LayerNorm)")
      ->capture_default_str();
  app.add_option("--clip", c.clip, "max gradient norm (0 = off)")->capture_default_str();
  app.add_option("--dropout", dropout, "hidden and attention dropout (default 0.1)");
  app.add_option("--pooling", pooling, "cls or mean (default: cls from scratch, as HF; the model's with --init). mean is ours: HF transformers would pool [CLS] and predict differently");
  app.add_option("--bucketing", bucketing, "on|off: batch reviews of similar length")
      ->capture_default_str();
  app.add_option("--pad-multiple", c.pad_multiple,
                 "pad each batch to a multiple of N tokens (HF's pad_to_multiple_of): fewer "
                 "shapes to compile (default 1, the longest review; 16 with --compile)")
      ->check(CLI::PositiveNumber);
  app.add_option("--seed", c.seed, "seed of weights, dropout and data order")
      ->capture_default_str()
      ->check(cli::seed_check());
  app.add_option("--threads", c.threads, "threads (0 = all cores)")->capture_default_str();
  app.add_option("--device", c.device, "cpu or cuda[:N]")->capture_default_str();
  app.add_option("--dist", dist, "data parallelism: auto (mpi under mpirun, else none), none, "
                 "mpi (CPU ranks), nccl (one GPU per rank; world size 1 without mpirun)")
      ->capture_default_str();
  app.add_option("--precision", c.precision,
                 "GEMM arithmetic: fp32; tf32 (GPU tensor cores, 10-bit mantissa inputs); bf16 "
                 "(operands in bf16, fp32 accumulation; CPU: AVX512-BF16 where present, emulated "
                 "otherwise); weights, optimizer and statistics stay fp32")
      ->check(CLI::IsMember({"fp32", "tf32", "bf16"}))
      ->capture_default_str();
  app.add_flag("--cuda-graphs", c.cuda_graphs,
               "GPU: capture each batch shape's training step as a CUDA graph and replay it "
               "(with --compile: the compiled plan's step)");
  app.add_option("--profile", c.profile,
                 "profile N steps after 3 warm-up steps: time per phase and op class, GPU busy "
                 "and idle, syncs; the table goes to the screen and <run>/profile.md");
  app.add_flag("--deterministic", c.deterministic,
               "GPU: deterministic kernels only (bitwise-identical losses run to run)");
  app.add_option("--init", c.init, "start from a model: an HF folder or a mase-train run folder")
      ->check(cli::nonempty("a model or run folder"));
  app.add_option("--out", c.out, "run folder (default runs/<model>-<data>-<date>-<time>)")
      ->check([](const std::string& v) {
        return v.empty() ? std::string("expected a folder, got an empty name") : std::string();
      });
  // an empty --resume would start a new run with the default config (resume_dir "" = none)
  app.add_option("--resume", resume_dir, "continue the run in this folder from its last checkpoint")
      ->check(cli::nonempty("a run folder"));
  app.add_flag("--eval-only", eval_only_flag, "evaluate --init on the test split, train nothing");
  app.add_flag("--compile", compile,
               "run the model through graph::compile: traced once per batch shape and mode, "
               "fusion passes on the graph, the last layer on the [CLS] token only (narrow_cls), "
               "the plan replayed (docs/lab4.md); with --eval-only also "
               "every Linear weight packed once for the CPU's GEMM (freeze_weights)");
  app.add_option("--freeze", c.freeze, "regex: parameters whose path matches are not trained");
  app.add_option("--quant", c.quant,
                 "quantize config (TOML/JSON): before training (QAT), or with --eval-only (PTQ)")
      ->check(cli::existing_file("a quantize config (TOML or JSON)"));
  app.add_option("--prune", c.prune, "prune config (TOML/JSON): weight and activation masks")
      ->check(cli::existing_file("a prune config (TOML or JSON)"));
  app.add_option("--compress", c.compress, "quantize-then-prune config in one TOML/JSON file")
      ->check(cli::existing_file("a compress config (TOML or JSON)"));
  app.add_flag("--mxint8-weights", c.mxint8_weights,
               "store the plain Linear weights as packed MXINT8 (prints the bytes saved)");
  app.add_option("--int8-kernels", c.int8_kernels,
                 "on: quantized Linears with int8 codes (integer <= 8 bits, mxint8) evaluate in "
                 "integers; off: fake-quantized fp32 (A/B)")
      ->check(CLI::IsMember({"on", "off"}))
      ->capture_default_str();
  app.add_option("--lora-rank", c.lora_rank, "LoRA adapters of this rank (0 = none); only they and the head train")
      ->capture_default_str();
  app.add_option("--lora-alpha", c.lora_alpha, "LoRA scale alpha (the update is alpha/rank·B·A)")
      ->capture_default_str();
  app.add_option("--lora-dropout", c.lora_dropout, "dropout on the adapters' input")
      ->capture_default_str();
  app.add_option("--lora-targets", c.lora_targets, "regex: module paths whose Linears get adapters")
      ->capture_default_str();
  app.add_flag("--fuse-lora", c.fuse_lora, "fold the adapters into the weights before the final save");
  app.add_option("--log-every", c.log_every, "steps between log lines")->capture_default_str();
  app.add_option("--ckpt-every", c.ckpt_every, "steps between checkpoints (0 = epoch ends only)")
      ->capture_default_str();
  app.add_option("--eval-every", c.eval_every, "steps between extra evaluations (0 = epoch ends)");
  app.add_option("--eval-batch-size", c.eval_batch_size, "reviews per evaluation batch")
      ->capture_default_str();

  CLI::App* pred = app.add_subcommand("predict", "print the label and probability of texts");
  std::string pred_dir;
  std::vector<std::string> texts;
  std::string pred_file;
  bool pred_logits = false;
  pred->add_option("run_dir", pred_dir, "a run folder (or an HF folder with vocab.txt)")->required();
  pred->add_option("texts", texts, "review texts");
  pred->add_option("--file", pred_file, "a file of reviews, one per line")
      ->check(cli::existing_file("a file of reviews"));
  pred->add_flag("--logits", pred_logits, "also print every logit at full f32 precision");
  pred->footer("Examples:\n  mase-train predict runs/bert-tiny-imdb-20250101-120000 \"A wonderful film.\"\n"
               "  mase-train predict runs/bert-tiny-imdb-20250101-120000 --logits --file reviews.txt\n"
               "Also read: --threads and --vocab (mase-train's own flags, before or after predict).");
  pred->fallthrough();  // --threads / --vocab after the run folder reach mase-train's options

  cli::quiet_error = quiet_rank;  // under mpirun: one error line per job (train/data_parallel.h)
  if (auto status = cli::parse(app, "mase-train", argc, argv)) return *status;

  return cli::run("mase-train", [&]() -> int {
    if (pred->parsed()) {
      // a training flag (--lr, --max-len, ...) would be silently unused: predict reads no other
      const std::string flag = cli::flag_outside(app, {"--threads", "--vocab"});
      MASE_CHECK(flag.empty(), ConfigError, "[predict] ", flag, " has no effect with predict "
                 "(it reads --threads and --vocab; the model brings the rest; drop it)");
      return run_predict(pred_dir, texts, pred_file, pred_logits, c.vocab, c.threads);
    }
    // --compile: the session hands each model it builds to graph::compile (train/forward.h)
    std::vector<std::shared_ptr<graph::Compiled>> compiled;
    ForwardFactory forward;
    // with --eval-only no weight changes: the eval plans also pack every Linear weight once
    // (CompileOptions::freeze, graph/passes/freeze_weights.h)
    graph::CompileOptions compile_options;
    compile_options.freeze = eval_only_flag;
    if (compile)
      forward = [&compiled, compile_options](const std::shared_ptr<nn::BertForSequenceClassification>& m) {
        compiled.push_back(std::make_shared<graph::Compiled>(graph::compile_bert(m, compile_options)));
        return graph::compiled_forward(compiled.back());
      };
    auto print_compiled = [&] {
      for (const auto& cm : compiled) std::printf("%s\n", cm->summary().c_str());
    };

    // ---- flags that contradict each other: refused before anything is read or written ----
    auto given = [&](const char* flag) { return app.count(flag) > 0; };
    if (given("--resume")) {
      const std::string flag = cli::flag_outside(app, kResumeFlags);
      MASE_CHECK(flag.empty(), ConfigError, "--resume continues a run with its saved config; ",
                 flag, " cannot change it (start a new run with --init ", resume_dir, " instead)");
    }
    if (given("--eval-only")) {
      const std::string flag = cli::flag_outside(app, kEvalOnlyFlags);
      MASE_CHECK(flag.empty(), ConfigError, "[eval-only] ", flag, " has no effect with "
                 "--eval-only (nothing is trained or saved; drop it)");
    }
    // the LoRA settings mean nothing without adapters
    for (const char* f : {"--lora-alpha", "--lora-dropout", "--lora-targets"})
      MASE_CHECK(!given(f) || given("--lora-rank"), ConfigError, f, " sets the LoRA adapters of "
                 "--lora-rank R, which is not given (add --lora-rank, or drop ", f, ")");
    MASE_CHECK(!(given("--eval-only") && !given("--init")), ConfigError,
               "--eval-only needs a model to evaluate: add --init RUN_OR_MODEL_DIR");
    MASE_CHECK(!(given("--init") && given("--model")), ConfigError,
               "--init brings its own architecture (its config.json); drop --model");
    MASE_CHECK(!(given("--vocab-size") && (given("--vocab") || c.tokenizer == "wordpiece")),
               ConfigError, "--vocab-size sets the size of a sentencepiece model to train; it ",
               "contradicts --vocab / --tokenizer wordpiece (the vocabulary file decides)");
    if (given("--vocab")) {  // the file says which tokenizer it is (vocab.txt or a .model)
      const std::string kind = tokenizer_kind(c.vocab);
      MASE_CHECK(!given("--tokenizer") || c.tokenizer == kind, ConfigError, "--tokenizer ",
                 c.tokenizer, " contradicts --vocab ", c.vocab, " (a ", kind,
                 " file; drop --tokenizer: the file decides)");
      c.tokenizer = kind;
    }
    MASE_CHECK(bucketing == "on" || bucketing == "off", ConfigError,
               "expected --bucketing on or off, got '", bucketing, "'");
    c.bucketing = bucketing == "on";
    // a compiled step is specialised to its batch's shape: each new length costs a trace, so
    // --compile pads lengths to multiples of 16 (at most 16 shapes per mode at max_len 256;
    // docs/lab4.md "mase-train --compile"); eager keeps exact lengths, and its numbers
    if (compile && !given("--pad-multiple")) c.pad_multiple = 16;
    if (given("--epochs")) c.epochs = epochs;
    if (given("--lr")) c.lr = lr;
    if (given("--warmup")) c.warmup = warmup;
    if (given("--dropout")) c.dropout = dropout;
    if (given("--pooling")) c.pooling = pooling;
    if (given("--init")) c.model = c.init;  // recorded in the config: where the model came from
    c.validate();

    const DistBackend backend = eval_only_flag ? DistBackend::none : parse_dist(dist);
    std::unique_ptr<DataParallel> dp;
    if (backend != DistBackend::none) dp = DataParallel::start(backend, Device::parse(c.device));
    // ranks other than 0 compute and print nothing (an error of their own still shows)
    std::FILE* out = dp && !dp->root() ? std::fopen("/dev/null", "w") : stdout;
    if (!out) out = stdout;
    try {
      const int rc = train_or_resume(c, resume_dir, eval_only_flag, out, dp.get(), given, forward);
      if (out == stdout) print_compiled();
      return rc;
    } catch (const std::exception&) {
      if (dp && dp->collective_failure() && !dp->root()) return cli::kExitUsage;  // rank 0 says it
      if (dp && !dp->collective_failure()) dp->abandon();  // the others may wait in a collective
      throw;
    }
  });
}
