// train/graph_step.h — the training step as a CUDA graph (mase-train --cuda-graphs): each
// batch shape's step is captured once (runtime/cuda_graph.h) and every later step of that
// shape is one replay — one launch instead of ~1,000, and no host work per kernel.
//
// Per batch shape (B, T):
//   steps 1..warmup   train_step as usual (train/train_step.h): AdamW's state, gradients,
//                     cuBLAS's and the allocator's caches come into being first
//   next step         captured: the batch is copied into device buffers kept for this shape,
//                     then device_step_work (forward, backward, device clip, gated
//                     multi-tensor AdamW, zero_grad) is recorded into a graph with a private
//                     memory pool; then replayed once — that is this step
//   every later step  copy the batch into the shape's buffers, write the step's per-replay
//                     values on the device (AdamW's learning rate and bias corrections:
//                     AdamW::prepare_replay; the dropout generator's offset: Generator::
//                     device_offset_base), replay, read loss and norm (one host sync)
// A replay computes exactly what train_step would (the same kernels, the same dropout masks):
// tests/train/test_graph_step.cpp checks replay == uncaptured step.
// Shapes beyond max_graphs (bucketing gives many lengths: each graph holds its own memory)
// run uncaptured, and so does a shape whose capture failed (stats().capture_error says why;
// the step is then taken uncaptured: a failed capture runs nothing and changes no state). Falls back to train_step where a graph cannot apply: a CPU device, or the
// per-tensor / host-clip paths (MASE_ADAMW, MASE_CLIP).
//
// Read next: runtime/cuda_graph.h, runtime/kernels/graph_capture.h (what may be captured).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "runtime/cuda_graph.h"
#include "train/train_step.h"

namespace mase::train {

struct GraphStepStats {
  int64_t eager = 0, captures = 0, replays = 0;
  double capture_ms = 0;   // host time of captures (capture + instantiate), all shapes
  int64_t kernels = 0;     // kernel launches in the last captured step
  std::string capture_error;  // why the last failed capture failed ("" when none did)
};

class GraphStep {
 public:
  GraphStep(nn::BertForSequenceClassification& model, AdamW& opt, Device device, double clip,
            int64_t warmup = 2, int64_t max_graphs = 8);
  // One step on `batch` (on the CPU), as train_step: same result, same contract.
  StepResult step(const data::Batch& batch);
  const GraphStepStats& stats() const { return stats_; }
  // The model call of every step, captured or not (train/forward.h; empty = eager). A
  // compiled plan (mase-train --compile --cuda-graphs) compiles in a warm-up step, so the
  // capture records its replay: the plan's kernels, backward, clip and AdamW in one graph.
  void set_forward(Forward forward) { forward_ = std::move(forward); }

 private:
  struct Captured {
    int64_t seen = 0;                    // steps of this shape so far
    bool failed = false;                 // its capture failed: uncaptured from now on
    std::unique_ptr<CudaGraph> graph;
    data::Batch inputs;                  // the device buffers the graph reads
    Tensor philox_base;                  // 8 bytes: the dropout offset of the step (uint64)
    uint64_t philox_per_step = 0;        // counters one step draws
    std::vector<std::string> updates;    // AdamW::captured_updates()
  };
  void capture(Captured& c, const data::Batch& batch);
  StepResult replay(Captured& c, const data::Batch& batch);

  nn::BertForSequenceClassification& model_;
  AdamW& opt_;
  Device device_;
  double clip_;
  int64_t warmup_, max_graphs_;
  Tensor clip_state_;  // shared with the uncaptured steps: its address is in every graph
  Forward forward_;    // empty: the eager model
  std::map<std::pair<int64_t, int64_t>, Captured> shapes_;
  int64_t graphs_ = 0;
  GraphStepStats stats_;
};

}  // namespace mase::train
