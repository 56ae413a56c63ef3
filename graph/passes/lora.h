// graph/passes/lora.h — insert LoRA adapters into a model, and fuse them back (transforms).
//
// insert_lora replaces every Linear whose module path matches `targets` (a regular
// expression searched in the path; default: every Linear inside bert.encoder — query, key,
// value, attention.output.dense, intermediate.dense, output.dense of each layer) by a
// LoraLinear (models/lora.h) holding the same W and b, with A (r × in) Kaiming-uniform and
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
// The LoraConfig is read, never modified. Neither pass needs a graph: trace afterwards (a
// LoraLinear is a leaf, so it shows as one call_module node), or keep running a graph traced
// before — its call_module nodes look modules up by path when they run.
// Read next: graph/passes/dropout.h for the graph passes; tools/mase_graph.cpp for their use.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "models/lora.h"

namespace mase::graph {

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
InsertLoraReport insert_lora(nn::Module& model, const LoraConfig& config);

struct FuseLoraReport {
  std::vector<std::string> fused;  // module paths
  std::string str() const;
};
FuseLoraReport fuse_lora(nn::Module& model);

}  // namespace mase::graph
