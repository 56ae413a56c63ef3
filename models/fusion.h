// models/fusion.h — the switch for the fused fast paths of BERT's modules.
//
// BERT's forward has a reference form — each leaf module called through its operator(), one op
// per module (models/bert_encoder.cpp) — and fused forms that do the same maths in fewer
// passes over memory (bias + GELU in autograd/ops/gelu.cpp; bias + dropout + residual +
// LayerNorm in autograd/ops/layer_norm.cpp). A fused path is taken only when all three hold:
//   * fusion_enabled() — a thread-local switch, on by default (FusionGuard below);
//   * no ModuleObserver is installed: graph/ tracing records one call_module node per leaf
//     module call, which a fused path would skip, so tracing turns fusions off by being there;
//   * the children involved are exactly the plain types (a typeid check: a QuantizedLinear is
//     a Linear, but not a plain one): after a pass swaps a child (QuantizedLinear, LoRA,
//     Identity for a removed dropout) that module takes the reference path and calls it.
// Fused and reference paths compute the same numbers up to float rounding (and draw the same
// dropout masks), tested in tests/models/test_fusion.cpp.
//
// Read next: autograd/ops/gelu.cpp and layer_norm.cpp (the fused ops), models/bert_encoder.cpp
// (where they are used).
#pragma once

namespace mase::nn {

bool fusion_enabled();          // this thread's switch (true unless turned off)
void set_fusion_enabled(bool on);

// RAII: fusions `on` (or off) while it lives, then the previous setting again.
struct FusionGuard {
  explicit FusionGuard(bool on);
  ~FusionGuard();
  FusionGuard(const FusionGuard&) = delete;
  FusionGuard& operator=(const FusionGuard&) = delete;

 private:
  bool prev_;
};

// fusion_enabled() and no module observer (tracing) installed on this thread.
bool use_fused_path();

}  // namespace mase::nn
