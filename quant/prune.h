// quant/prune.h — pruning specs and masks: which weights and activations become zero.
//
// A PruneSpec is one entry of the prune pass's config (../shared/specs/passes.md, "prune"):
//   {"sparsity": 0.5, "method": "l1-norm" | "random", "scope": "local" | "global", "seed": 0}
// Sparsity is exact: k = round(s·n) elements are pruned, with round half to even (Python's
// round, which torch.nn.utils.prune uses too), e.g. s = 0.5 of n = 5 prunes round(2.5) = 2.
//   l1-norm  the k smallest |x|, ties broken by position (global: tensor order, then flat
//            index);
//   random   k elements chosen uniformly, reproducibly from a Philox stream (seed);
//   local    k per tensor (weights) or per row (activations: each token vector);
//   global   k of all pruned weights together / of the whole activation tensor.
// Masks are "keep" masks: u8, 1 = kept, 0 = pruned (torch's weight_mask convention), the
// tensor's shape. The selection kernels: runtime/kernels/prune.h.
//
// Weight masks are computed once (weight_keep_masks) and then fixed; activation masks are
// recomputed from each input (activation_keep_mask): a fresh random set per forward for
// "random". QuantizedLinear (quant/quantized_linear.h) applies both; passes.h builds them.
#pragma once
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>
#include <vector>

#include "runtime/random.h"

namespace mase::quant {

enum class PruneMethod { random, l1_norm };
enum class PruneScope { local, global };

struct PruneSpec {
  double sparsity = 0.0;  // in [0, 1]
  PruneMethod method = PruneMethod::l1_norm;
  PruneScope scope = PruneScope::local;
  uint64_t seed = 0;  // the Philox stream of "random"

  std::string str() const;         // "l1-norm local 0.5"
  nlohmann::json to_json() const;  // the config form above
};

// Reads the config form. sparsity is required; method defaults to l1-norm, scope to local,
// seed to 0. ConfigError "[prune] <where>: ..." for sparsity outside [0, 1] (or NaN), an
// unknown method or scope, an unknown key or a value of the wrong type.
PruneSpec parse_prune_spec(const nlohmann::json& cfg, std::string_view where);

// k = round(s·n), ties to even.
int64_t prune_count(double sparsity, int64_t n);

// Keep masks for these weights (f32, any device; the masks are on the same device):
// local = each tensor pruned to round(s·n_i); global = round(s·Σn_i) over all of them as one
// sequence in the given order.
std::vector<Tensor> weight_keep_masks(const std::vector<Tensor>& weights, const PruneSpec& spec);

// The keep mask of an activation x (..., features), f32 or f64 on the CPU or f32 on a GPU (the
// mask on x's device, equal to the CPU's): local = round(s·
// features) pruned in each row, global = round(s·numel) over the whole tensor. "random" draws
// from `gen` (advancing it by numel(x) values), so each call gives a fresh set.
Tensor activation_keep_mask(const Tensor& x, const PruneSpec& spec, Generator& gen);

// Number of zeros in a keep mask.
int64_t count_pruned(const Tensor& keep);

}  // namespace mase::quant
