// models/lora.h — LoraLinear: a Linear plus a trainable low-rank update (LoRA).
//
// Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models". A frozen Linear
// y = x·Wᵀ + b gains a rank-r path whose product B·A is the learned change of W:
//
//   y = x·Wᵀ + b + (alpha / r) · dropout(x)·Aᵀ·Bᵀ          A (r, in), B (out, r)
//
// A starts Kaiming-uniform (a = √5, as PEFT: U(±1/√in)) and B at zero, so B·A = 0 and the
// model's output is unchanged on insertion; training moves A and B only (r·(in + out)
// parameters instead of in·out). W and b keep their tensors (shared with the Linear that was
// replaced, so their checkpoint keys stay …query.weight / …query.bias) and are frozen.
// `dropout` applies to the input of the low-rank path only (PEFT's lora_dropout), in training.
// fused() folds the update back: W' = W + (alpha / r)·B·A, a plain Linear with the same bias.
//
// Parameters: weight, bias (frozen), lora_A, lora_B (trainable). A LoraLinear is a leaf: a
// traced graph shows it as one call_module node.
//
// The transforms, across a model (Lab 0's LoRA passes; they need no graph):
// insert_lora replaces every Linear whose module path matches `targets` (a regular
// expression searched in the path; default: every Linear inside bert.encoder — query, key,
// value, attention.output.dense, intermediate.dense, output.dense of each layer) by a
// LoraLinear holding the same W and b, with A (r × in) Kaiming-uniform and
// B (out × r) zero: the model's output is unchanged, bit for bit. Every argument is honoured:
// the update is scaled by alpha / rank and its input goes through dropout(p) in training.
//
// Then it sets what trains (our choice, stated once here): ONLY the adapters' lora_A and
// lora_B, and the parameters matching `trainable` (default: the classifier head,
// ^classifier\. — a fresh head must learn the task; PEFT's modules_to_save). Everything else
// is frozen: embeddings, LayerNorms, the pooler, and each replaced Linear's W and b.
// For bert-tiny, rank 8: 8 · (128 + 128) · 4 + 8 · (128 + 512) · 2 = 18,432 per layer,
// 36,864 for both, + 258 for the head = 37,122 trainable of 4,423,042.
//
// fuse_lora replaces every LoraLinear by a plain Linear with W' = W + (alpha / r)·B·A and the
// same bias tensor: same eval outputs up to float rounding, no extra cost at inference, and
// the checkpoint keys of a model without LoRA. W' is frozen when W was.
// The LoraConfig is read, never modified. Trace afterwards (a LoraLinear is a leaf, so it shows
// as one call_module node), or keep running a graph traced before: its call_module nodes look
// modules up by path when they run.
// Read next: models/parameters.h (the trainable-parameter report), graph/passes/dropout.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/layers.h"

namespace mase::nn {

class LoraLinear : public Module {
 public:
  // Wraps `base`'s weight and bias (the same tensors, now frozen) with fresh A and B.
  // ConfigError unless rank >= 1, alpha > 0 and 0 <= dropout < 1.
  LoraLinear(const Linear& base, int64_t rank, double alpha, double dropout);
  // With fresh tensors of these sizes (for the module registry; a reload then loads them).
  LoraLinear(int64_t in_features, int64_t out_features, bool bias, int64_t rank, double alpha,
             double dropout);

  std::string type_name() const override { return "LoraLinear"; }
  std::string extra_repr() const override;
  nlohmann::json to_json() const override;
  Tensor forward(const Tensor& x) override;  // x (..., in) -> (..., out)

  double scaling() const { return alpha / static_cast<double>(rank); }
  // A plain Linear with W' = W + scaling·B·A and the same bias tensor; W' requires grad when W
  // did. The eval output equals this module's up to float rounding.
  std::shared_ptr<Linear> fused() const;

  int64_t in_features, out_features, rank;
  double alpha, dropout;
  Tensor weight, bias;    // (out, in), (out) or undefined: frozen
  Tensor lora_A, lora_B;  // (r, in) Kaiming-uniform, (out, r) zero: trainable

 private:
  void init_lora();  // registers and initialises lora_A, lora_B
};

// ---- the transforms ------------------------------------------------------------------------

struct LoraConfig {
  int64_t rank = 8;
  double alpha = 16.0;
  double dropout = 0.0;
  std::string targets = R"(^bert\.encoder\.)";  // module paths whose Linears get adapters
  std::string trainable = R"(^classifier\.)";   // parameter paths that also stay trainable
};

struct InsertLoraReport {
  std::vector<std::string> replaced;  // module paths, in tree order
  int64_t lora_parameters = 0;        // elements of all A and B
  int64_t trainable = 0, total = 0;   // parameter elements after insertion
  std::string str() const;
};
InsertLoraReport insert_lora(Module& model, const LoraConfig& config);

struct FuseLoraReport {
  std::vector<std::string> fused;  // module paths
  std::string str() const;
};
FuseLoraReport fuse_lora(Module& model);

// What trains under LoRA, as insert_lora sets it: lora_A, lora_B and the parameters whose path
// matches `trainable`; every other parameter is frozen. For a model whose LoraLinears were
// rebuilt from a saved folder (quant/checkpoint.h), e.g. to resume a LoRA run.
void set_lora_trainable(Module& model, const std::string& trainable = R"(^classifier\.)");

}  // namespace mase::nn
