// autograd/frozen.h — frozen weights: Linear weights packed once for the CPU's GEMM, for
// inference on a model whose weights no longer change.
//
// Why: a Linear's weight W (out, in) is read by every forward in the layout the model keeps
// it in, because training may change it between any two calls. Once it is known not to
// change — evaluation of a finished model — it can be rearranged ONCE into the blocked layout
// the GEMM kernel reads fastest (runtime/cpu/onednn_gemm.h, onednn_f32_pack), which every
// later forward then skips. This is what PyTorch's Inductor calls "freezing" for CPU
// inference (torch._inductor.config.freezing: weights become constants and are prepacked).
//
// How: a FrozenWeights table maps each weight (by its data pointer, shape and strides) to its
// packed copy. linear() consults the table installed on this thread by a FrozenScope, and only
// when no graph is being recorded (NoGradGuard): a weight in the table runs on its packed
// copy, everything else as before. Nothing outside the scope sees the table, so eager code on
// the same model is unaffected. graph::compile's freeze_weights pass (graph/passes/
// freeze_weights.h) fills one per Compiled and installs it around its eval plans' runs.
//
// The contract (as for torch.jit.freeze): the weights must not change while the table is in
// use. After training on, or loading into, the model, build a new one (Compiled::clear()).
// The packed copy is a second copy of each weight (bert-small: 51 MB more; 26 MB in bf16).
//
// Which layout: the one the GEMM that linear() runs the weight on reads. In fp32, oneDNN's
// blocked layout; under --precision bf16 on a CPU with AMX-BF16, our AMX tiles of pairs of k
// (runtime/kernels/bf16.h, amx_bf16_pack); under bf16 on AVX512-BF16 without AMX (AMD Zen
// 4/5, or --amx off), oneDNN's blocked layout in bf16 (onednn_bf16_pack) — the rounding to
// bf16 done once, too, in both. Where bf16 is emulated (rounded copies into an fp32 GEMM at
// every call) nothing is packed: an fp32 copy would change the arithmetic. The precision is
// read when the weight is added, and the lookups return only a copy of the precision running
// now: a table built under one precision and used under the other has nothing for linear(),
// which runs as eager code does.
// Read next: graph/passes/freeze_weights.h, runtime/cpu/onednn_gemm.h.
#pragma once
#include <memory>
#include <unordered_map>

#include "runtime/tensor.h"

namespace mase {
namespace cpu {
struct OnednnWeights;
struct AmxBf16Weights;
}

class FrozenWeights {
 public:
  // Packs `weight` (CPU f32, (out, in), rows contiguous) for the run's precision; false
  // when it cannot be (another dtype, device or layout; no oneDNN in this build; bf16 with
  // neither AMX nor oneDNN's bf16): linear() then runs it as before.
  bool add(const Tensor& weight);
  // The packed copy of `weight` on oneDNN (fp32, or bf16) or in AMX tiles (bf16), or null when
  // the table does not hold it in that layout for the precision running now.
  const cpu::OnednnWeights* find(const Tensor& weight) const;
  const cpu::AmxBf16Weights* find_amx(const Tensor& weight) const;
  size_t size() const { return table_.size(); }
  size_t amx_size() const;   // how many are in the AMX layout
  size_t bf16_size() const;  // how many are in oneDNN's layout in bf16
  size_t bytes() const;      // the packed copies

 private:
  struct Entry {
    Tensor weight;  // keeps the storage alive, so its address cannot be reused for another
    std::shared_ptr<const cpu::OnednnWeights> packed;  // one of the two
    std::shared_ptr<const cpu::AmxBf16Weights> amx;
  };
  const Entry* entry(const Tensor& weight) const;
  std::unordered_map<const void*, Entry> table_;
};

// Installs a table for linear() on this thread while it lives (scopes nest; null: none).
class FrozenScope {
 public:
  explicit FrozenScope(const FrozenWeights* table);
  ~FrozenScope();
  FrozenScope(const FrozenScope&) = delete;
  FrozenScope& operator=(const FrozenScope&) = delete;

 private:
  const FrozenWeights* prev_;
};
// The table installed on this thread (null: none).
const FrozenWeights* frozen_weights();

}  // namespace mase
