// graph/passes/memory_plan.h — memory planning: buffer lifetimes from the node order, one
// arena, an offset for every intermediate value, and the arena's size (the planned peak).
//
// Lifetimes. Nodes run in order; value i is born at its node's step and dies after its last
// user's step (Graph::run frees it there too). A view (view, transpose, a Dropout in eval that
// returns its input, …) owns no bytes: it shares its input's storage, which then lives until
// the view's last user. Values the graph returns live to the end. Inputs and parameters are
// not planned (they exist before and after the run).
// Sizes and aliasing come from one real run (record_values: the storage each value owns, and
// whether it is an argument's storage), so the plan is exact for what the ops return; the
// temporaries an op allocates INSIDE itself (sdpa's scores, GEMM packing) are not nodes and are
// not in the plan.
//
// Offsets: "greedy by size" (Pisarchyk & Lee 2020, "Efficient Memory Management for Deep
// Neural Net Inference"; TFLite's arena planner): buffers in decreasing size, each at the
// lowest offset (64-byte aligned) where it overlaps no placed buffer alive at the same time.
// Large buffers first because they are the hard ones to place; small ones fill the gaps left
// between them. The result is compared with two bounds: the sum of all intermediate bytes
// (no reuse at all) and the live peak (the most bytes alive at one step: no arena can be
// smaller).
//
// Two plans, one algorithm:
//  * plan_memory: per graph VALUE (node outputs), from the node order: the analysis printed by
//    `mase-graph compile` (buffers, lower bound, arena), readable against the graph;
//  * plan_allocations: per ALLOCATION of a recorded run (runtime/allocator.h,
//    AllocationRecorder), which also sees what ops allocate inside themselves (sdpa's row
//    statistics, packed copies, reduction scratch). This is the plan graph::Compiled RUNS
//    (without autograd: eval, NoGradGuard): its replays happen inside an Arena::Run that
//    serves each request at its offset. The ops are unchanged — they still "allocate" their
//    outputs; the allocator answers from the arena. Blocks that outlive the run (outputs,
//    activations autograd saves for backward) stay with the caching allocator, so a tensor
//    kept after a run is never overwritten.
// Read next: graph/compile.h.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"
#include "runtime/allocator.h"

namespace mase::graph {

// What one run showed about a node's value.
struct RecordedValue {
  size_t bytes = 0;              // its storage's bytes when it owns one; 0 for a view
  const Node* alias = nullptr;   // the argument whose storage it shares (a view), or null
};
using RecordedValues = std::unordered_map<const Node*, RecordedValue>;

// A hook for Graph::run / Plan::run that fills `out` (keeps no tensor alive).
NodeHook record_values(RecordedValues& out);

struct PlannedBuffer {
  const Node* node = nullptr;
  size_t bytes = 0;                 // rounded up to 64
  int64_t first = 0, last = 0;      // steps (node positions) it is alive, both inclusive
  size_t offset = 0;                // in the arena
};

struct MemoryPlan {
  std::vector<PlannedBuffer> buffers;  // in graph order
  size_t arena_bytes = 0;              // the planned peak
  size_t total_bytes = 0;              // sum of every buffer (no reuse)
  size_t live_peak_bytes = 0;          // most bytes alive at one step (a lower bound)
  // "memory_plan: 41 buffers, arena 1.20 MB (greedy by size), live peak 1.10 MB (lower
  // bound), sum 3.40 MB (no reuse)"
  std::string str() const;
};

MemoryPlan plan_memory(const Graph& g, const RecordedValues& values);

// Greedy by size (above): sets each buffer's offset; returns the arena's size.
size_t place_greedy_by_size(std::vector<PlannedBuffer>& buffers);

// The arena of a recorded run: request k at offsets[k] (-1: it outlives the run, and the
// caching allocator serves it). Lifetimes are the recording's clock ticks.
struct AllocationPlan {
  std::vector<size_t> sizes;
  std::vector<int64_t> offsets;
  size_t arena_bytes = 0, live_peak_bytes = 0, total_bytes = 0;  // of the requests inside
  size_t outside_bytes = 0;                                       // of those outliving the run
  // "arena: 310 allocations per run, 296 from one arena of 4.72 MB (live peak 4.72 MB, sum
  // 30.1 MB), 14 outlive the run (0.01 MB: outputs, saved for backward)"
  std::string str() const;
};
// all_inside: the blocks that outlive the run get offsets too, busy at every step (a CUDA-graph
// capture, graph/cuda_graph_plan.h, takes nothing from the driver and keeps its outputs).
AllocationPlan plan_allocations(const std::vector<AllocationEvent>& events,
                                bool all_inside = false);

// True when a and b are alive at the same step.
bool overlap_in_time(const PlannedBuffer& a, const PlannedBuffer& b);

std::string megabytes(size_t bytes);  // "1.20 MB"

}  // namespace mase::graph
