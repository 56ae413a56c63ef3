// train/train_config.h — TrainConfig: everything a training run depends on, in one struct.
//
// One field per mase-train flag (tools/mase_train.cpp), with the same name (dashes become
// underscores: --max-len -> max_len). A run folder stores it as train_config.json and final.json
// repeats it, so a result can always be traced back to the exact recipe; --resume reads it back
// to continue the run with nothing changed.
//
// Some fields have no fixed default: lr, warmup, dropout, pooling and epochs depend on whether the
// model starts from random weights or from a checkpoint (--init), and lr on the model's size.
// They are std::optional here; resolve_recipe() fills them (the recipe is at the end of
// train_config.cpp, measured in docs/training.md) and the saved config holds the values used.
//
// Read next: train/run_dir.h (where the config is saved), train/trainer.h (the loop).
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <optional>
#include <string>

namespace mase::train {

struct TrainConfig {
  // ---- model ----------------------------------------------------------------------------
  std::string model = "bert-small";  // a preset (bert-tiny … bert-base) or a config.json path
  std::string init;                  // start from this HF model folder or run folder ("" = random)
  std::optional<std::string> pooling;  // "cls" or "mean" (recipe: cls from scratch, HF's;
                                       // with --init unset = the checkpoint's)
  std::optional<double> dropout;       // hidden and attention dropout (recipe: 0.1 from scratch)
  std::string freeze;                  // regex: matching parameter paths are not trained
  // Architecture overrides of the preset (0 = the preset's): what Lab 2's search varies.
  int64_t num_layers = 0, num_heads = 0, hidden_size = 0, intermediate_size = 0;

  // ---- data -----------------------------------------------------------------------------
  std::string data = "imdb";  // the only dataset so far
  std::string data_dir;       // "" = $MASE_DATA_DIR or ~/.cache/mase (data/fetch.h)
  std::string cache_dir;      // "" = $MASE_CACHE_DIR/imdb, else ~/.cache/mase/imdb (tokenizer
                              // models, token-id caches; never the data folder)
  std::string tokenizer = "sentencepiece";  // or "wordpiece"
  std::string vocab;          // a vocab.txt / .model to use instead of the default one
  int64_t vocab_size = 16000;  // sentencepiece pieces, when one is trained
  int64_t max_len = 256;       // tokens per review, [CLS] and [SEP] included
  int64_t train_subset = 0;    // > 0: a label-balanced seeded subset of this many reviews
  int64_t test_subset = 0;     // > 0: the same for the test split (the same subset each time)
  bool bucketing = true;       // batch reviews of similar lengths (data/batch.h)
  // each batch padded to a multiple of this many tokens (data/batch.h: fewer distinct shapes
  // for graph::compile and CUDA graphs; mase-train sets 16 with --compile unless told)
  int64_t pad_multiple = 1;

  // ---- optimisation ---------------------------------------------------------------------
  int64_t batch_size = 32;
  std::optional<int64_t> epochs;   // recipe: 1 from scratch, 3 from a checkpoint (--init)
  int64_t max_steps = 0;           // > 0: exactly this many steps (epochs follow from it)
  std::optional<double> lr;        // peak learning rate (recipe: by model size)
  std::optional<double> warmup;    // < 1: a fraction of the steps; >= 1: a number of steps
  std::string schedule = "linear";  // after warm-up: linear, cosine or constant
  double weight_decay = 0.01;       // AdamW's; never on biases and LayerNorm weights
  double beta1 = 0.9, beta2 = 0.999, eps = 1e-8;
  double clip = 1.0;                // max gradient norm (0 = no clipping)
  uint64_t seed = 0;                // weights, dropout and data order
  int threads = 0;                  // 0 = all cores
  std::string device = "cpu";       // "cpu", "cuda" or "cuda:N"
  // GEMM arithmetic (runtime/gemm_precision.h): "fp32"; "tf32" (GPU tensor cores); "bf16":
  // every GEMM (Linears, attention products, forward and backward) with bf16 operands and fp32
  // accumulation — weights, optimizer state, LayerNorm/softmax statistics and the loss stay
  // fp32. CPU: runtime/parallel.h's set_cpu_gemm_precision; GPU: runtime/gpu_math.h.
  std::string precision = "fp32";
  bool cuda_graphs = false;         // GPU: capture each batch shape's step, replay it (train/graph_step.h)
  bool deterministic = false;       // GPU: deterministic kernels only (runtime/gpu_math.h)
  int64_t profile = 0;              // > 0: profile that many steps after 3 warm-up steps
                                    // (runtime/profiler.h), the table into <run>/profile.md

  // ---- compression (Lab 1, quant/passes.h): applied to the model before training (QAT) or,
  // with --eval-only, before evaluating it (PTQ). Files are TOML or JSON.
  std::string quant;            // a quantize config: {"by": ..., "default": ..., ...}
  std::string prune;            // a prune config: {"weight": {...}, "activation": {...}}
  std::string compress;         // both in one file: {"quantize": {...}, "prune": {...}}
  bool mxint8_weights = false;  // then store the remaining plain Linear weights as MXINT8
  // "on": quantized Linears whose formats have int8 codes (integer ≤ 8 bits, mxint8) evaluate
  // in integers (quant/integer_linear.h; with --eval-only their fp32 weights are dropped);
  // "off": fake-quantized in fp32, as before (for A/B comparisons)
  std::string int8_kernels = "on";

  // ---- LoRA (Lab 0, models/lora.h): adapters on the Linears matching lora_targets; only they
  // and the classifier head train. fuse_lora folds them into plain Linears before the final save.
  int64_t lora_rank = 0;  // 0 = no LoRA
  double lora_alpha = 16.0;
  double lora_dropout = 0.0;
  std::string lora_targets = R"(^bert\.encoder\.)";
  bool fuse_lora = false;

  // ---- the run --------------------------------------------------------------------------
  std::string out;              // the run folder ("" = runs/<model>-<data>-<timestamp>)
  int64_t log_every = 50;       // steps between log lines (and train_log.jsonl lines)
  int64_t ckpt_every = 500;     // steps between checkpoints (0 = only at the end of epochs)
  int64_t eval_every = 0;       // steps between extra test evaluations (0 = each epoch only)
  int64_t eval_batch_size = 64;

  // ConfigError naming the first bad field and its flag ("[train] expected --batch-size >= 1,
  // got 0"). Optional fields are checked only when set.
  void validate() const;
  // Every field; unset optionals are null. from_json: unknown keys and wrong types are
  // ConfigErrors naming `source`; missing keys keep the defaults above.
  nlohmann::json to_json() const;
  static TrainConfig from_json(const nlohmann::json& j, const std::string& source);
  // The model's short name for run folder names: the preset, or the config.json's file stem.
  std::string model_name() const;
};

// Fills the unset optionals (lr, warmup, dropout, pooling, epochs) from the recipe: the values that
// docs/training.md measured for training from scratch, or standard fine-tuning values when
// the model starts from a checkpoint (--init; pooling and dropout then stay unset: the
// checkpoint's config.json decides).
TrainConfig resolve_recipe(TrainConfig c);

// Warm-up in steps for a run of `total_steps`: round(warmup · total) when warmup < 1.
int64_t warmup_steps(const TrainConfig& c, int64_t total_steps);

// The optimizer steps of a run with `batches_per_epoch` batches an epoch: max_steps when > 0,
// else epochs × batches. ConfigError when the recipe is not resolved (lr, warmup or epochs
// unset: resolve_recipe fills them, and a run folder's train_config.json holds them, unless it
// was edited) or when the product does not fit in 64 bits.
int64_t total_steps(const TrainConfig& c, int64_t batches_per_epoch);

}  // namespace mase::train
