// runtime/allocator.cpp — the caching allocator (see allocator.h).
#include "runtime/allocator.h"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "cuda/memory.h"

namespace mase {

size_t size_class(size_t n) {
  if (n <= 512) return 512;
  // keep the top 4 significant bits of n-1, round the rest up: m·2^e with m in 8..15
  int e = std::bit_width(n - 1) - 4;
  size_t step = size_t{1} << e;
  return (n + step - 1) / step * step;
}

namespace {

class CachingAllocator {
 public:
  explicit CachingAllocator(Device d) : device_(d) {}

  void* allocate(size_t nbytes) {
    size_t sz = size_class(nbytes);
    std::lock_guard lock(mu_);
    auto& list = free_[sz];
    void* p = nullptr;
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
    } else {
      p = os_alloc(sz);
      if (!p) {  // out of memory: give back what is cached and try once more
        release_all_locked();
        p = os_alloc(sz);
        if (!p) throw std::bad_alloc();
      }
      ++stats_.os_allocs;
      stats_.os_bytes += sz;
      if (stats_.os_bytes > stats_.peak_os_bytes) stats_.peak_os_bytes = stats_.os_bytes;
    }
    stats_.in_use_bytes += sz;
    if (stats_.in_use_bytes > stats_.peak_in_use_bytes) stats_.peak_in_use_bytes = stats_.in_use_bytes;
    return p;
  }

  // Called from Storage's destructor: never throws. When the cache cannot grow (out of
  // memory in push_back) the block goes straight back to the OS instead; a CUDA free that
  // fails (a dead context) leaks the block rather than terminate the process.
  void deallocate(void* p, size_t nbytes) noexcept {
    size_t sz = size_class(nbytes);
    std::lock_guard lock(mu_);
    stats_.in_use_bytes -= sz;
    try {
      free_[sz].push_back(p);
    } catch (...) {
      try {
        os_free(p);
      } catch (...) {
      }
      ++stats_.os_frees;
      stats_.os_bytes -= sz;
    }
  }

  AllocatorStats stats() {
    std::lock_guard lock(mu_);
    return stats_;
  }
  void reset_peak() {
    std::lock_guard lock(mu_);
    stats_.peak_in_use_bytes = stats_.in_use_bytes;
    stats_.peak_os_bytes = stats_.os_bytes;
  }
  void release_all() {
    std::lock_guard lock(mu_);
    release_all_locked();
  }

 private:
  void* os_alloc(size_t sz) {
    if (device_.is_cpu()) return std::aligned_alloc(64, sz);  // sz is a multiple of 64
    return cuda::malloc_device(sz, device_.index);
  }
  void os_free(void* p) {
    if (device_.is_cpu()) std::free(p);
    else cuda::free_device(p, device_.index);
  }
  void release_all_locked() {
    for (auto& [sz, list] : free_) {
      for (void* p : list) {
        os_free(p);
        ++stats_.os_frees;
        stats_.os_bytes -= sz;
      }
      list.clear();
    }
  }

  Device device_;
  std::mutex mu_;
  std::unordered_map<size_t, std::vector<void*>> free_;  // size class -> cached blocks
  AllocatorStats stats_;
};

// One allocator per device, created on first use and never destroyed: tensors in static
// objects may be freed after main() returns, so the allocators must outlive them.
CachingAllocator& allocator_for(Device d) {
  static std::mutex mu;
  static auto* cpu = new CachingAllocator(Device::cpu());
  static auto* gpus = new std::vector<CachingAllocator*>();
  if (d.is_cpu()) return *cpu;
  std::lock_guard lock(mu);
  if (gpus->size() <= static_cast<size_t>(d.index)) gpus->resize(d.index + 1, nullptr);
  auto& a = (*gpus)[d.index];
  if (!a) a = new CachingAllocator(d);
  return *a;
}

}  // namespace

void* allocate(Device d, size_t nbytes) { return allocator_for(d).allocate(nbytes); }
void deallocate(Device d, void* p, size_t nbytes) noexcept {
  try {
    allocator_for(d).deallocate(p, nbytes);
  } catch (...) {  // allocator_for's first use on a new GPU index could not allocate: leak
  }
}
AllocatorStats allocator_stats(Device d) { return allocator_for(d).stats(); }
void reset_peak_stats(Device d) { allocator_for(d).reset_peak(); }
void empty_cache(Device d) { allocator_for(d).release_all(); }

}  // namespace mase
