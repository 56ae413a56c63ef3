// graph/passes/memory_plan.cpp — lifetimes, greedy-by-size offsets (see memory_plan.h).
#include "graph/passes/memory_plan.h"

#include <algorithm>
#include <cstdio>
#include <numeric>

namespace mase::graph {

NodeHook record_values(RecordedValues& out) {
  return [&out](const Node& n, const Tensors& args, const Tensor& v) {
    if (!v.defined()) return;
    RecordedValue r;
    for (size_t k = 0; k < args.size(); ++k)
      if (args[k].defined() && args[k].storage() == v.storage()) r.alias = n.args[k];
    if (!r.alias) r.bytes = v.storage()->nbytes();
    out[&n] = r;
  };
}

bool overlap_in_time(const PlannedBuffer& a, const PlannedBuffer& b) {
  return a.first <= b.last && b.first <= a.last;
}

std::string megabytes(size_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.2f MB", static_cast<double>(bytes) / 1e6);
  return s;
}

size_t place_greedy_by_size(std::vector<PlannedBuffer>& buffers) {
  // biggest first, each at the lowest offset free during its lifetime
  std::vector<size_t> order(buffers.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return buffers[a].bytes > buffers[b].bytes; });
  std::vector<const PlannedBuffer*> placed;
  size_t arena = 0;
  for (size_t i : order) {
    PlannedBuffer& buf = buffers[i];
    std::vector<const PlannedBuffer*> busy;
    for (const PlannedBuffer* p : placed)
      if (overlap_in_time(*p, buf)) busy.push_back(p);
    std::sort(busy.begin(), busy.end(),
              [](const PlannedBuffer* a, const PlannedBuffer* b) { return a->offset < b->offset; });
    size_t offset = 0;
    for (const PlannedBuffer* p : busy) {
      if (p->offset >= offset + buf.bytes) break;  // the gap below p fits
      offset = std::max(offset, p->offset + p->bytes);
    }
    buf.offset = offset;
    placed.push_back(&buf);
    arena = std::max(arena, offset + buf.bytes);
  }
  return arena;
}

AllocationPlan plan_allocations(const std::vector<AllocationEvent>& events, bool all_inside) {
  AllocationPlan plan;
  std::vector<PlannedBuffer> inside;  // the requests freed within the run
  std::vector<size_t> index;
  for (size_t k = 0; k < events.size(); ++k) {
    const AllocationEvent& e = events[k];
    plan.sizes.push_back(e.bytes);
    plan.offsets.push_back(-1);
    if (e.died < 0 && !all_inside) {  // outlives the run: an output, or saved for backward
      plan.outside_bytes += e.bytes;
      continue;
    }
    // a block is busy from its request to its free, both inclusive; one that outlives the run
    // (all_inside) is busy always: it is kept between runs, so nothing may share its bytes
    if (e.died < 0) inside.push_back({nullptr, e.bytes, 0, INT64_MAX / 2, 0});
    else inside.push_back({nullptr, e.bytes, e.born, e.died, 0});
    index.push_back(k);
    plan.total_bytes += e.bytes;
  }
  plan.arena_bytes = place_greedy_by_size(inside);
  for (size_t i = 0; i < inside.size(); ++i)
    plan.offsets[index[i]] = static_cast<int64_t>(inside[i].offset);
  // the live peak: sweep the requests and frees in time order
  std::vector<std::pair<int64_t, int64_t>> deltas;
  for (const PlannedBuffer& b : inside) {
    deltas.push_back({b.first, static_cast<int64_t>(b.bytes)});
    deltas.push_back({b.last + 1, -static_cast<int64_t>(b.bytes)});
  }
  std::sort(deltas.begin(), deltas.end());
  int64_t live = 0;
  for (const auto& [t, d] : deltas) {
    live += d;
    plan.live_peak_bytes =
        std::max(plan.live_peak_bytes, static_cast<size_t>(std::max<int64_t>(live, 0)));
  }
  return plan;
}

std::string AllocationPlan::str() const {
  int64_t in_arena = 0;
  for (int64_t o : offsets) in_arena += o >= 0;
  return cat("arena: ", sizes.size(), " allocations per run, ", in_arena, " from one arena of ",
             megabytes(arena_bytes), " (live peak ", megabytes(live_peak_bytes), ", sum ",
             megabytes(total_bytes), "), ", static_cast<int64_t>(sizes.size()) - in_arena,
             " outlive the run (", megabytes(outside_bytes), ": outputs, saved for backward)\n");
}

MemoryPlan plan_memory(const Graph& g, const RecordedValues& values) {
  const std::vector<Node*> nodes = g.nodes();
  std::unordered_map<const Node*, int64_t> pos;
  for (size_t i = 0; i < nodes.size(); ++i) pos[nodes[i]] = static_cast<int64_t>(i);
  // the node owning a value's storage: follow views back to their base
  auto owner = [&](const Node* n) {
    for (auto it = values.find(n); it != values.end() && it->second.alias;
         it = values.find(it->second.alias))
      n = it->second.alias;
    return n;
  };
  std::unordered_map<const Node*, size_t> index;  // owner -> its buffer
  MemoryPlan plan;
  for (const Node* n : nodes) {
    const bool computed = n->op == OpKind::call_function || n->op == OpKind::call_method ||
                          n->op == OpKind::call_module;
    auto it = values.find(n);
    if (computed && it != values.end() && !it->second.alias && it->second.bytes > 0) {
      index[n] = plan.buffers.size();
      plan.buffers.push_back({n, (it->second.bytes + 63) / 64 * 64, pos[n], pos[n], 0});
    }
    for (const Node* a : n->args)  // a read extends the life of the storage behind it
      if (auto b = index.find(a ? owner(a) : nullptr); b != index.end())
        plan.buffers[b->second].last = pos[n];
  }
  plan.arena_bytes = place_greedy_by_size(plan.buffers);
  for (const PlannedBuffer& b : plan.buffers) plan.total_bytes += b.bytes;
  for (int64_t t = 0; t < static_cast<int64_t>(nodes.size()); ++t) {
    size_t live = 0;
    for (const PlannedBuffer& b : plan.buffers)
      if (b.first <= t && t <= b.last) live += b.bytes;
    plan.live_peak_bytes = std::max(plan.live_peak_bytes, live);
  }
  return plan;
}

std::string MemoryPlan::str() const {
  return cat("memory_plan: ", buffers.size(), " buffers, arena ", megabytes(arena_bytes),
             " (greedy by size), live peak ", megabytes(live_peak_bytes), " (lower bound), sum ",
             megabytes(total_bytes), " (no reuse)\n");
}

}  // namespace mase::graph
