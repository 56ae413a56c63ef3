// models/checkpoint.h — model directories in HuggingFace's layout, both ways.
//
//   <dir>/config.json         BertConfig in HF's form (models/bert_config.h)
//   <dir>/model.safetensors   every parameter under its HF key (models/safetensors.h)
//
// save_pretrained writes what BertForSequenceClassification.from_pretrained(dir) reads in
// transformers (checked by tests/fixtures/check_hf_load.py); from_pretrained reads that, our own
// run directories, and HF BERT directories (config.json + model.safetensors; a tokenizer's
// vocab.txt beside them is data/'s business; pytorch_model.bin is not read).
//
// Loading is strict — a missing, unexpected or mis-shaped key is an error listing all of them
// (Module::load_state_dict) — except for the differences HF itself tolerates between BERT
// checkpoints, which load_pretrained_weights normalises and reports:
//   * TF-era names: "LayerNorm.gamma"/"LayerNorm.beta" are "LayerNorm.weight"/".bias";
//   * a bare BertModel ("embeddings.…", no "bert." prefix) is the "bert." subtree;
//   * buffers some versions saved (bert.embeddings.position_ids / token_type_ids) and the
//     pre-training heads (cls.predictions.…, cls.seq_relationship.…) are ignored;
//   * a checkpoint without the classifier (or the pooler, e.g. BertForMaskedLM) keeps this
//     model's freshly initialised one: a pretrained start for fine-tuning.
// Read next: models/bert.h.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/bert.h"

namespace mase::nn {

// What load_pretrained_weights did besides the plain copy (print it, as HF warns).
struct LoadReport {
  std::vector<std::string> ignored;      // checkpoint keys not used (heads, buffers)
  std::vector<std::string> initialized;  // model keys absent from the checkpoint: kept fresh
  std::vector<std::string> renamed;      // "old -> new" key renames
  std::vector<std::string> non_finite;   // keys holding NaN or inf (also warned about on stderr)
};

// config.json <-> BertConfig. IoError for a missing/unreadable file or invalid JSON; ConfigError
// (naming the field) for values this runtime does not support.
BertConfig load_config(const std::string& path);
void save_config(const BertConfig& config, const std::string& path);

// Writes <dir>/config.json and <dir>/model.safetensors (each atomically; creates <dir>).
void save_pretrained(const BertForSequenceClassification& model, const std::string& dir);

// Builds the model from <dir>/config.json and loads <dir>/model.safetensors into it.
std::shared_ptr<BertForSequenceClassification> from_pretrained(const std::string& dir,
                                                               LoadReport* report = nullptr);

// Loads a safetensors file into an existing model with the normalisation described above.
void load_pretrained_weights(BertForSequenceClassification& model, const std::string& path,
                             LoadReport* report = nullptr);
// The same on tensors already in memory (HF keys -> tensors).
void load_pretrained_weights(BertForSequenceClassification& model,
                             std::map<std::string, Tensor> state, LoadReport* report = nullptr);

}  // namespace mase::nn
