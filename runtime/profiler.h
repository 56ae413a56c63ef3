// runtime/profiler.h — the step profiler: where the time of one training step goes, per phase
// (data copy, forward, backward, clip, optimizer) and per op class (GEMM, attention, softmax,
// LayerNorm, elementwise, ...), on the GPU or on the CPU.
//
// How it measures: a Timeline takes *stamps*. On the GPU a stamp is a CUDA event recorded on
// the stream (runtime/kernels/gpu_timing.h); the GPU fills in its time when it gets there, so
// the difference of two stamps is the GPU time of whatever was issued between them. On the
// CPU a stamp is the host clock (CPU ops run synchronously). The autograd engine stamps once
// after every op it records (forward) and after every node it differentiates (backward), so
// the time between two stamps belongs to the op of the later stamp:
//
//     phase "forward"    [linear] [add] [layer_norm] ... [cross_entropy]
//     stamps:           ^s0      ^s1   ^s2          ^s3 ...
//     time(add) = t(s2) − t(s1)
//
// Work issued outside any op (a raw copy, the optimizer's kernels) is charged to the phase
// it falls in, as "outside ops". Ops that run inside another op — the body of a composite op
// such as sdpa's reference, the ops a backward function calls — are not stamped on their own:
// their time is the enclosing op's (a nesting depth, see Nested below).
//
// Idle time: a stamp difference includes any time the GPU waited for the host to launch the
// next kernel. To separate that out, a profiled step can start with a *hold*: a kernel that
// keeps the GPU busy for long enough that the host enqueues the whole step behind it; after
// the hold the GPU runs the queued work back to back, so those stamps measure busy time only.
// A normal step's span minus a held step's busy time is the GPU's idle time: host-bound gaps.
// (Should the launch queue fill before the host is done, the GPU idles again at times, so the
// busy figure is an upper bound.)
//
// Cost when off: each hook is one load of a thread-local pointer and a branch.
//
// Typical use (bench/bench_gpu_step.cpp):
//   profile::Profiler prof(profile::gpu_timeline());
//   prof.begin_step();          prof.phase("data");  ...copy the batch...
//   prof.phase("forward");      ...loss = model(batch)...
//   prof.phase("backward");     backward(loss);      ...
//   profile::StepProfile p = prof.end_step();   // waits for the GPU, then reads the stamps
//
// Read next: autograd/engine.cpp (the hooks), bench/bench_gpu_step.cpp (the table).
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace mase::profile {

// ---- op classes -------------------------------------------------------------------------------
enum class OpClass : uint8_t {
  gemm,         // matmul, linear
  attention,    // sdpa (fused or its composition)
  softmax,      // softmax, log_softmax
  layernorm,    // layer_norm, dropout_add_layer_norm
  elementwise,  // add, mul, gelu, bias_gelu, dropout, where, ...
  reduce,       // sum, mean, amax
  embedding,    // embedding lookups
  loss,         // cross_entropy
  view,         // transpose, view, reshape, contiguous, ... (a copy when not a view)
  quant,        // quantizers
  outside,      // work issued outside any op (raw copies, optimizer and clip kernels)
  other,
};
constexpr size_t kNumClasses = static_cast<size_t>(OpClass::other) + 1;
const char* class_name(OpClass c);
OpClass classify(std::string_view op);  // by the name the op records ("linear" -> gemm)

// ---- timelines ----------------------------------------------------------------------------------
class Timeline {
 public:
  virtual ~Timeline() = default;
  // Take stamp i (0, 1, 2, ... in order; a step reuses the indices of the previous one).
  virtual void stamp(size_t i) = 0;
  // Milliseconds from stamp a to stamp b, once the step is over (a GPU timeline waits here).
  virtual double ms_between(size_t a, size_t b) = 0;
  // Keep the device busy for about `ms` (see "Idle time" above); false where it cannot.
  virtual bool hold(double ms) { (void)ms; return false; }
};
std::unique_ptr<Timeline> host_timeline();  // std::chrono::steady_clock
std::unique_ptr<Timeline> gpu_timeline();   // CUDA events; DeviceError in a build without CUDA

// ---- one step's figures -----------------------------------------------------------------------
struct PhaseTime {
  std::string name;
  double ms = 0;
};

struct StepProfile {
  std::vector<PhaseTime> phases;  // in the order they ran (a hold is not a phase)
  // per op class: [0] forward, [1] backward (+ work outside ops in any phase: class outside)
  std::array<std::array<double, 2>, kNumClasses> class_ms{};
  std::array<std::array<int64_t, 2>, kNumClasses> class_count{};
  double span_ms = 0;    // timeline from the first phase's start to the end (hold excluded)
  double host_ms = 0;    // host wall time from begin_step to end_step's call (before waiting)
  double held_ms = 0;    // the hold that started the step (0: none)
  uint64_t host_syncs = 0;  // host waits for the GPU inside the step (cuda/memory.h counts)
  int64_t stamps = 0;

  double phase_ms(std::string_view name) const;  // 0 when no such phase
  double class_total(OpClass c) const { return class_ms[size_t(c)][0] + class_ms[size_t(c)][1]; }
};

// ---- the profiler -----------------------------------------------------------------------------
class Profiler {
 public:
  explicit Profiler(std::unique_ptr<Timeline> timeline);
  ~Profiler();
  Profiler(const Profiler&) = delete;
  Profiler& operator=(const Profiler&) = delete;

  // Starts a step on this thread (its ops are stamped until end_step). hold_ms > 0: first
  // keep the device busy that long, so the step's stamps measure busy time (see above).
  void begin_step(double hold_ms = 0);
  // Ends the current phase (if any) and starts `name`; a name may repeat (times add up).
  void phase(std::string_view name);
  // Ends the step: waits for the timeline and returns the figures. Stops stamping.
  StepProfile end_step();

  // The hooks' entry (through op_done below): an op or a backward node has been issued.
  void op_done(std::string_view op, bool backward);

 private:
  struct Stamp {
    int16_t phase;   // index into phase_names_
    int16_t cls;     // OpClass, or -1 at a phase boundary
    bool backward;
  };
  void take(int16_t cls, bool backward);

  std::unique_ptr<Timeline> timeline_;
  std::vector<std::string> phase_names_;
  std::vector<Stamp> stamps_;
  int16_t phase_ = -1;
  bool in_step_ = false;
  bool held_ = false;
  double hold_ms_ = 0;
  uint64_t syncs_at_begin_ = 0;
  int64_t host_begin_ns_ = 0;
};

// ---- hooks (called by autograd/engine.cpp) -------------------------------------------------------
namespace detail {
extern thread_local Profiler* t_active;  // the profiler of this thread's step in progress
extern thread_local int t_depth;         // > 0 inside a composite body or a backward function
}  // namespace detail

inline bool active() { return detail::t_active != nullptr; }
// An op finished issuing its work (forward: backward = false; a backward node: true).
inline void op_done(std::string_view op, bool backward) {
  if (detail::t_active && detail::t_depth == 0) detail::t_active->op_done(op, backward);
}
// The step's code names its phases (train/train_step.cpp): a no-op unless a step is profiled.
inline void mark_phase(std::string_view name) {
  if (detail::t_active) detail::t_active->phase(name);
}
// Ops issued while a Nested lives are part of the enclosing op: not stamped on their own.
struct Nested {
  Nested() { ++detail::t_depth; }
  ~Nested() { --detail::t_depth; }
  Nested(const Nested&) = delete;
  Nested& operator=(const Nested&) = delete;
};

// ---- the table ---------------------------------------------------------------------------------
// Sums of several steps' profiles, printed as docs/performance.md's table.
struct ProfileSummary {
  std::string title;            // "bert-small fp32, B 32, T 256"
  std::string device = "GPU";   // the timeline's device, named in the table: "GPU" or "CPU"
  int64_t steps = 0;
  StepProfile sum;              // element-wise sums of the profiled (not held) steps
  StepProfile held_sum;         // sums of the held steps (busy time)
  int64_t held_steps = 0;
  double wall_ms_sum = 0;       // steps timed without the profiler (no stamps): the real figure
  int64_t wall_steps = 0;
  uint64_t os_allocs = 0;       // cudaMalloc / malloc calls during the profiled steps
  int64_t launches = -1;        // kernels per step where known (a captured graph's nodes)

  void add(const StepProfile& p);
  void add_held(const StepProfile& p);
  std::string table() const;    // markdown
};

}  // namespace mase::profile
