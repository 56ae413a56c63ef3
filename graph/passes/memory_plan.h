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
// An ANALYSIS today: the ops allocate their own outputs (autograd/ops.h has no "write into
// this buffer" form), so a compiled graph does not yet run out of the arena; the caching
// allocator (runtime/allocator.h) reuses freed blocks by size class instead. What the plan
// gives is the number an arena would need, beside what eager measured.
// Read next: graph/compile.h.
#pragma once
#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "graph/graph.h"

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
  // "memory_plan: 41 buffers, arena 1.20 MB (greedy by size), live peak 1.10 MB, sum 3.40 MB"
  std::string str() const;
};

MemoryPlan plan_memory(const Graph& g, const RecordedValues& values);

// True when a and b are alive at the same step.
bool overlap_in_time(const PlannedBuffer& a, const PlannedBuffer& b);

std::string megabytes(size_t bytes);  // "1.20 MB"

}  // namespace mase::graph
