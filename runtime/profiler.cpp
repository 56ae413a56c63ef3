// runtime/profiler.cpp — stamps, their attribution to phases and op classes, and the table
// (see profiler.h for the method).
#include "runtime/profiler.h"

#include <chrono>
#include <cmath>
#include <cstdio>

#include "cuda/memory.h"
#include "runtime/error.h"
#include "runtime/kernels/gpu_timing.h"

namespace mase::profile {

namespace detail {
thread_local Profiler* t_active = nullptr;
thread_local int t_depth = 0;
}  // namespace detail

// ---- op classes -------------------------------------------------------------------------------

const char* class_name(OpClass c) {
  static const char* names[kNumClasses] = {"GEMM",  "attention", "softmax", "LayerNorm",
                                           "elementwise", "reduce", "embedding", "loss",
                                           "view/copy", "quant", "outside ops", "other"};
  return names[static_cast<size_t>(c)];
}

OpClass classify(std::string_view op) {
  auto has = [&](std::string_view s) { return op.find(s) != std::string_view::npos; };
  if (has("matmul") || has("linear")) return OpClass::gemm;
  if (has("sdpa") || has("attention")) return OpClass::attention;
  if (has("layer_norm")) return OpClass::layernorm;  // before "softmax"/"add": add_layer_norm
  if (has("softmax")) return OpClass::softmax;
  if (has("cross_entropy")) return OpClass::loss;
  if (has("embedding")) return OpClass::embedding;
  if (has("quantize") || has("mxint") || has("prune") || has("sign") || has("gamma"))
    return OpClass::quant;
  for (std::string_view r : {"sum", "mean", "amax", "max", "min"})
    if (op == r) return OpClass::reduce;
  for (std::string_view v : {"view", "reshape", "transpose", "permute", "expand", "select",
                             "slice", "squeeze", "unsqueeze", "contiguous", "concat", "to_dtype"})
    if (op == v) return OpClass::view;
  for (std::string_view e : {"add", "sub", "mul", "div", "gelu", "dropout", "where", "exp", "log",
                             "tanh", "relu", "sqrt", "neg", "abs", "pow", "ones_like",
                             "zeros_like", "arange_like", "rsub", "clamp", "sigmoid"})
    if (has(e)) return OpClass::elementwise;
  return OpClass::other;
}

// ---- timelines ----------------------------------------------------------------------------------

namespace {

int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

class HostTimeline final : public Timeline {
 public:
  void stamp(size_t i) override {
    if (t_.size() <= i) t_.resize(i + 1);
    t_[i] = now_ns();
  }
  double ms_between(size_t a, size_t b) override { return double(t_.at(b) - t_.at(a)) * 1e-6; }

 private:
  std::vector<int64_t> t_;
};

class GpuTimeline final : public Timeline {
 public:
  ~GpuTimeline() override {
    for (void* e : events_) {
      try {
        cuda::event_destroy(e);
      } catch (...) {  // a dead context at exit: nothing left to free
      }
    }
  }
  void stamp(size_t i) override {
    while (events_.size() <= i) events_.push_back(cuda::event_create());  // reused next step
    cuda::event_record(events_[i]);
  }
  double ms_between(size_t a, size_t b) override {
    return cuda::event_elapsed_ms(events_.at(a), events_.at(b));
  }
  bool hold(double ms) override {
    cuda::gpu_hold(ms);
    return true;
  }

 private:
  std::vector<void*> events_;
};

}  // namespace

std::unique_ptr<Timeline> host_timeline() { return std::make_unique<HostTimeline>(); }
std::unique_ptr<Timeline> gpu_timeline() {
  if (!cuda::built) cuda::throw_not_built("profile::gpu_timeline");
  return std::make_unique<GpuTimeline>();
}

// ---- the profiler -----------------------------------------------------------------------------

Profiler::Profiler(std::unique_ptr<Timeline> timeline) : timeline_(std::move(timeline)) {}

Profiler::~Profiler() {
  if (detail::t_active == this) detail::t_active = nullptr;
}

void Profiler::take(int16_t cls, bool backward) {
  MASE_CHECK(stamps_.size() < (size_t{1} << 24), Error, "[profile] too many stamps in one step");
  timeline_->stamp(stamps_.size());
  stamps_.push_back({phase_, cls, backward});
}

void Profiler::begin_step(double hold_ms) {
  MASE_CHECK(detail::t_active == nullptr || detail::t_active == this, Error,
             "[profile] another profiler's step is in progress on this thread");
  phase_names_.clear();
  stamps_.clear();
  phase_ = -1;
  in_step_ = true;
  held_ = false;
  hold_ms_ = 0;
  detail::t_active = this;
  detail::t_depth = 0;
  host_begin_ns_ = now_ns();
  syncs_at_begin_ = cuda::host_sync_count();
  if (hold_ms > 0) {
    take(-1, false);  // stamp 0: before the hold
    held_ = timeline_->hold(hold_ms);
    hold_ms_ = hold_ms;
  }
}

void Profiler::phase(std::string_view name) {
  MASE_CHECK(in_step_, Error, "[profile] phase('", name, "') outside begin_step/end_step");
  int16_t index = -1;
  for (size_t i = 0; i < phase_names_.size(); ++i)
    if (phase_names_[i] == name) index = static_cast<int16_t>(i);
  if (index < 0) {
    phase_names_.emplace_back(name);
    index = static_cast<int16_t>(phase_names_.size() - 1);
  }
  take(-1, false);  // ends the previous phase (or the hold): its last stretch is "outside ops"
  phase_ = index;
}

void Profiler::op_done(std::string_view op, bool backward) {
  if (!in_step_ || phase_ < 0) return;
  take(static_cast<int16_t>(classify(op)), backward);
}

StepProfile Profiler::end_step() {
  MASE_CHECK(in_step_, Error, "[profile] end_step without begin_step");
  StepProfile p;
  p.host_ms = double(now_ns() - host_begin_ns_) * 1e-6;
  p.host_syncs = cuda::host_sync_count() - syncs_at_begin_;  // before the timeline's own waits
  take(-1, false);
  in_step_ = false;
  detail::t_active = nullptr;
  detail::t_depth = 0;
  p.stamps = static_cast<int64_t>(stamps_.size());
  for (const std::string& n : phase_names_) p.phases.push_back({n, 0.0});
  // stamps before the first phase() (the hold) are not part of the step's figures
  size_t first = 0;
  while (first < stamps_.size() && stamps_[first].phase < 0) ++first;
  if (first == 0 || first >= stamps_.size()) return p;  // no phase was started
  if (held_) p.held_ms = hold_ms_;
  p.span_ms = timeline_->ms_between(first - 1, stamps_.size() - 1);
  for (size_t i = first; i < stamps_.size(); ++i) {
    // the stretch (i-1, i] belongs to the phase in force when stamp i was taken: a phase
    // boundary's stamp still carries the phase it ends
    const Stamp& s = stamps_[i];
    const double ms = timeline_->ms_between(i - 1, i);
    p.phases[s.phase].ms += ms;
    const size_t cls = s.cls >= 0 ? size_t(s.cls) : size_t(OpClass::outside);
    const int bwd = s.backward ? 1 : 0;
    p.class_ms[cls][bwd] += ms;
    if (s.cls >= 0) ++p.class_count[cls][bwd];
  }
  return p;
}

double StepProfile::phase_ms(std::string_view name) const {
  for (const PhaseTime& ph : phases)
    if (ph.name == name) return ph.ms;
  return 0;
}

// ---- the table ---------------------------------------------------------------------------------

namespace {

void add_into(StepProfile& sum, const StepProfile& p) {
  for (const PhaseTime& ph : p.phases) {
    bool found = false;
    for (PhaseTime& s : sum.phases)
      if (s.name == ph.name) {
        s.ms += ph.ms;
        found = true;
      }
    if (!found) sum.phases.push_back(ph);
  }
  for (size_t c = 0; c < kNumClasses; ++c)
    for (int b = 0; b < 2; ++b) {
      sum.class_ms[c][b] += p.class_ms[c][b];
      sum.class_count[c][b] += p.class_count[c][b];
    }
  sum.span_ms += p.span_ms;
  sum.host_ms += p.host_ms;
  sum.held_ms += p.held_ms;
  sum.host_syncs += p.host_syncs;
  sum.stamps += p.stamps;
}

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

}  // namespace

void ProfileSummary::add(const StepProfile& p) {
  add_into(sum, p);
  ++steps;
}

void ProfileSummary::add_held(const StepProfile& p) {
  add_into(held_sum, p);
  ++held_steps;
}

std::string ProfileSummary::table() const {
  const double n = steps > 0 ? double(steps) : 1.0;
  const double nh = held_steps > 0 ? double(held_steps) : 1.0;
  std::string s = "#### " + title + "\n\n";
  const std::string& dev = device;  // "GPU" or "CPU", named in the rows
  const bool gpu = dev == "GPU";
  const double span = sum.span_ms / n, busy = held_steps > 0 ? held_sum.span_ms / nh : NAN;
  s += "| per step | ms |\n|---|---:|\n";
  if (wall_steps > 0) s += "| **step, unprofiled (host wall, synced)** | **" +
                           fmt("%.2f", wall_ms_sum / double(wall_steps)) + "** |\n";
  for (const PhaseTime& ph : sum.phases) s += "| " + ph.name + " (" + dev + ") | " + fmt("%.2f", ph.ms / n) + " |\n";
  s += "| step span (" + dev + ", profiled) | " + fmt("%.2f", span) + " |\n";
  if (held_steps > 0) {
    s += "| GPU busy (held step) | " + fmt("%.2f", busy) + " |\n";
    s += "| GPU idle = span − busy (host-bound gaps) | " + fmt("%.2f", span - busy) + " |\n";
  }
  s += "| host time to issue the step (profiled) | " + fmt("%.2f", sum.host_ms / n) + " |\n";
  s += "\n| per step | count |\n|---|---:|\n";
  if (gpu) s += "| host syncs | " + fmt("%.1f", double(sum.host_syncs) / n) + " |\n";
  s += std::string(gpu ? "| cudaMalloc" : "| malloc") + " (allocator's OS allocations) | " + fmt("%.1f", double(os_allocs) / n) + " |\n";
  if (gpu) s += "| kernel launches | " + (launches >= 0 ? fmt("%.0f", double(launches)) : std::string("n/a")) + " |\n";
  s += "| op stamps | " + fmt("%.0f", double(sum.stamps) / n) + " |\n";
  // op classes from the held steps when there are some (busy time, no host gaps)
  const StepProfile& src = held_steps > 0 ? held_sum : sum;
  const double d = held_steps > 0 ? nh : n;
  s += held_steps > 0 ? "\n| op class (" + dev + " busy, held step) | forward ms | backward ms | ops fwd/bwd |\n"
                      : "\n| op class (" + dev + ") | forward ms | backward ms | ops fwd/bwd |\n";
  s += "|---|---:|---:|---:|\n";
  for (size_t c = 0; c < kNumClasses; ++c) {
    if (src.class_ms[c][0] == 0 && src.class_ms[c][1] == 0 && src.class_count[c][0] == 0 &&
        src.class_count[c][1] == 0)
      continue;
    s += std::string("| ") + class_name(static_cast<OpClass>(c)) + " | " +
         fmt("%.2f", src.class_ms[c][0] / d) + " | " + fmt("%.2f", src.class_ms[c][1] / d) + " | " +
         fmt("%.0f", double(src.class_count[c][0]) / d) + "/" +
         fmt("%.0f", double(src.class_count[c][1]) / d) + " |\n";
  }
  return s;
}

}  // namespace mase::profile
