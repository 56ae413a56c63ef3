// runtime/allocator.h — a caching allocator, one per device.
//
// Why: a training step creates and frees the same activation buffers every step. Asking the
// OS (malloc/mmap, cudaMalloc) each time costs page faults and syscalls; instead freed blocks
// go to a free list keyed by their size class and are handed out again. In steady state a
// step asks the OS for nothing — `allocator_stats().os_allocs` stops growing (tested).
//
// Size classes: sizes are rounded up to m·2^e with m in 8..15 (at most 12.5% waste), at least
// 512 bytes, so tensors whose sizes differ a little (dynamic padding) still share blocks.
#pragma once
#include <cstddef>
#include <cstdint>

#include "runtime/device.h"

namespace mase {

struct AllocatorStats {
  uint64_t os_allocs = 0;     // blocks ever obtained from the OS / driver
  uint64_t os_frees = 0;      // blocks given back (empty_cache, or on allocation failure)
  size_t os_bytes = 0;        // bytes currently held from the OS (in use + cached)
  size_t peak_os_bytes = 0;
  size_t in_use_bytes = 0;    // bytes currently handed out to tensors
  size_t peak_in_use_bytes = 0;
};

void* allocate(Device device, size_t nbytes);          // 64-byte aligned, never null
void deallocate(Device device, void* ptr, size_t nbytes) noexcept;  // never throws
AllocatorStats allocator_stats(Device device = Device::cpu());
void reset_peak_stats(Device device = Device::cpu());
void empty_cache(Device device = Device::cpu());        // give every cached block back
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

}  // namespace mase
