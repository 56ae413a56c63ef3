// runtime/allocator.h — a caching allocator, one per device.
//
// Why: a training step creates and frees the same activation buffers every step. Asking the
// OS (malloc/mmap, cudaMalloc) each time costs page faults and syscalls; instead freed blocks
// go to a free list keyed by their size class and are handed out again. In steady state a
// step asks the OS for nothing — `allocator_stats().os_allocs` stops growing (tested).
//
// Size classes: sizes are rounded up to m·2^e with m in 8..15 (at most 12.5% waste), at least
// 512 bytes, so tensors whose sizes differ a little (dynamic padding) still share blocks. A
// request of 1 MiB or more whose class has no cached block takes a cached block of a larger
// class, up to 1.5x its own, before asking the OS (CPU, outside pools and recordings): varying
// batch lengths then reuse the longest batch's blocks instead of faulting in new pages.
//
// Planned arenas (the second half of this header): a piece of code that makes the same
// allocations every time it runs — a compiled plan (graph/compile.h) — can be recorded once
// (AllocationRecorder: each request's size, when it was made and when it came back), its
// blocks given offsets in one arena by a planner (graph/passes/memory_plan.h), and then run
// again inside an Arena::Run, which serves request k at arena + offset[k]: no free-list
// lookups, no size-class waste, no fragmentation, and the same addresses on every run (what
// CUDA-graph capture needs, runtime/cuda_graph.h).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "runtime/device.h"

namespace mase {

struct AllocatorStats {
  uint64_t os_allocs = 0;     // blocks ever obtained from the OS / driver
  uint64_t os_frees = 0;      // blocks given back (empty_cache, release_pool, a freed arena,
                              // or on allocation failure)
  size_t os_bytes = 0;        // bytes currently held from the OS (in use + cached)
  size_t peak_os_bytes = 0;
  size_t in_use_bytes = 0;    // bytes currently handed out to tensors
  size_t peak_in_use_bytes = 0;
};

// 64-byte aligned, never null; std::bad_alloc when the OS / driver has no memory even after
// the shared cache is given back. 0 bytes get a block of their own like any request (distinct
// from every other live pointer), inside an Arena::Run as well.
void* allocate(Device device, size_t nbytes);
void deallocate(Device device, void* ptr, size_t nbytes) noexcept;  // never throws
AllocatorStats allocator_stats(Device device = Device::cpu());
void reset_peak_stats(Device device = Device::cpu());
// give every block of the shared cache back (a private pool's: release_pool below)
void empty_cache(Device device = Device::cpu());
size_t size_class(size_t nbytes);                       // what a request is rounded up to

// ---- private pools (for CUDA graphs: runtime/cuda_graph.h) --------------------------------------
// While a pool is in use on a device, that device's allocations come from the pool's own free
// lists (new blocks from the OS when they are empty). A block obtained in a pool belongs to it
// for good: freed at any time, it returns to the pool, never to the shared cache — so a
// captured graph's temporaries are not handed to other code between replays, and each replay
// finds them where the capture did. release_pool gives the pool's free blocks back to the OS;
// its blocks still in use go to the shared cache when freed. The counters above include pools.
uint64_t create_pool(Device device);            // a new pool id (never 0)
void use_pool(Device device, uint64_t pool);    // 0: back to the shared cache
void release_pool(Device device, uint64_t pool) noexcept;
size_t pool_cached_bytes(Device device, uint64_t pool);  // free blocks the pool holds (tests)
size_t pool_owned_blocks(Device device);  // blocks some pool owns, in use or cached (tests)

// ---- failure injection (tests only) -------------------------------------------------------------
// The next `os_allocs` requests to the OS / driver on the device fail as if it were out of
// memory, and the next `bookkeeping` insertions into the allocator's own tables (a free list,
// a pool's owner map, a recording) throw std::bad_alloc: how the tests reach the failure paths.
// Each call replaces the counts left over; {} turns injection off.
struct AllocatorFaults {
  int os_allocs = 0;
  int bookkeeping = 0;
};
void inject_allocator_faults(Device device, AllocatorFaults faults);

// ---- recording a run's allocations and serving them again from a planned arena -------------

struct AllocationEvent {
  size_t bytes = 0;             // the request, rounded up to 64
  int64_t born = 0, died = -1;  // ticks of the recording's clock (one per allocate or free);
                                // died -1: still alive when the recording stopped
};

// Records the allocate() calls THIS thread makes on `device` (other threads' are not part of
// it) and when each of those blocks comes back, from any thread, until stop(). One recording
// per device at a time (ConfigError otherwise).
class AllocationRecorder {
 public:
  explicit AllocationRecorder(Device device);
  ~AllocationRecorder();  // stops, if stop() was not called
  AllocationRecorder(const AllocationRecorder&) = delete;
  AllocationRecorder& operator=(const AllocationRecorder&) = delete;
  std::vector<AllocationEvent> stop();

 private:
  Device device_;
  bool stopped_ = false;
};

struct ArenaState;  // allocator.cpp

// One block of `bytes` on `device` and the plan of a run: request k is `sizes[k]` bytes at
// `offsets[k]` (-1: served by the caching allocator as usual, e.g. a value that outlives the
// run). The planner must give blocks alive at the same time disjoint ranges.
// While an Arena::Run lives, this thread's requests on the device are matched against the
// plan in order. The run stays on the plan only while it makes the recorded requests: a
// request beyond the plan, of another size, or whose range would overlap a block still alive
// (a lifetime that differs from the recording's, or a block kept from an earlier run where
// the plan did not keep its range free) makes it DIVERGE: that request and every
// later one of the run go to the caching allocator, and nothing is ever overwritten.
// Freeing a block served from the arena is a no-op. A zero-byte request takes its place in the
// plan but is served by the caching allocator, as outside a run: at base + offset it would
// share its address with a block alive there (whose free could then be taken for its own),
// and an empty arena has no base. Statistics: the arena's bytes count as held from the OS and
// as in use (reserved: no other request can have them) while it exists.
class Arena {
 public:
  Arena(Device device, std::vector<size_t> sizes, std::vector<int64_t> offsets, size_t bytes);
  ~Arena();  // the block is freed when the last tensor served from it dies
  Arena(const Arena&) = delete;
  Arena& operator=(const Arena&) = delete;

  class Run {
   public:
    explicit Run(Arena& arena);  // ConfigError if a run of any arena is active on this thread
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;
    bool diverged() const;
    // The rest of the plan's requests are made elsewhere (by a CUDA-graph launch that replays
    // them at their captured addresses): the run is complete, not short.
    void skip_rest();

   private:
    Arena& arena_;
  };

  void* base() const;
  size_t bytes() const;
  Device device() const;
  int64_t runs() const;           // runs made
  int64_t diverged_runs() const;  // of which diverged (served partly by the caching allocator)
  // blocks of the arena still alive: 0 between runs, unless a tensor from a run is kept
  int64_t live_blocks() const;

 private:
  std::shared_ptr<ArenaState> state_;
};

}  // namespace mase
