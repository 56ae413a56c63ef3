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
// traced graph shows it as one call_module node. The passes that insert and fuse it across a
// model (and choose what else stays trainable) are in graph/passes/lora.h.
// Read next: graph/passes/lora.h.
#pragma once
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
  Tensor weight, bias;     // (out, in), (out) or undefined: frozen
  Tensor lora_A, lora_B;   // (r, in) Kaiming-uniform, (out, r) zero: trainable

 private:
  void init_lora();  // registers and initialises lora_A, lora_B
};

}  // namespace mase::nn
