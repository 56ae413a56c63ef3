// runtime/allocator.cpp — the caching allocator (see allocator.h).
#include "runtime/allocator.h"

#include <bit>
#include <cstdlib>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "cuda/memory.h"
#include "runtime/error.h"

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
    // a pool in use (CUDA graph capture) serves from its own lists; see allocator.h
    auto& list = active_pool_ != 0 ? pools_[active_pool_][sz] : free_[sz];
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
      if (active_pool_ != 0) owner_[p] = active_pool_;  // the pool's for good
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
      if (!owner_.empty()) {  // a pool's block goes back to its pool (see allocator.h)
        auto it = owner_.find(p);
        if (it != owner_.end()) {
          auto pool = pools_.find(it->second);
          if (pool != pools_.end()) {
            pool->second[sz].push_back(p);
            return;
          }
          owner_.erase(it);  // its pool was released: the block joins the shared cache
        }
      }
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

  // ---- private pools ----
  uint64_t create_pool() {
    std::lock_guard lock(mu_);
    const uint64_t id = ++last_pool_;
    pools_[id];
    return id;
  }
  void use_pool(uint64_t id) {
    std::lock_guard lock(mu_);
    MASE_CHECK(id == 0 || pools_.count(id), Error, "[allocator] no pool ", id);
    active_pool_ = id;
  }
  void release_pool(uint64_t id) noexcept {
    std::lock_guard lock(mu_);
    auto pool = pools_.find(id);
    if (pool == pools_.end()) return;
    for (auto& [sz, list] : pool->second)
      for (void* p : list) {
        owner_.erase(p);
        try {
          os_free(p);
        } catch (...) {  // a dead context: the block is lost, not the process
        }
        ++stats_.os_frees;
        stats_.os_bytes -= sz;
      }
    pools_.erase(pool);
    if (active_pool_ == id) active_pool_ = 0;
  }
  size_t pool_cached_bytes(uint64_t id) {
    std::lock_guard lock(mu_);
    size_t n = 0;
    auto pool = pools_.find(id);
    if (pool != pools_.end())
      for (auto& [sz, list] : pool->second) n += sz * list.size();
    return n;
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
  using FreeLists = std::unordered_map<size_t, std::vector<void*>>;  // size class -> blocks
  FreeLists free_;                               // the shared cache
  std::unordered_map<uint64_t, FreeLists> pools_;  // private pools' free blocks
  std::unordered_map<void*, uint64_t> owner_;    // every block a pool obtained -> its pool
  uint64_t active_pool_ = 0, last_pool_ = 0;
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
uint64_t create_pool(Device d) { return allocator_for(d).create_pool(); }
void use_pool(Device d, uint64_t pool) { allocator_for(d).use_pool(pool); }
void release_pool(Device d, uint64_t pool) noexcept {
  try {
    allocator_for(d).release_pool(pool);
  } catch (...) {
  }
}
size_t pool_cached_bytes(Device d, uint64_t pool) { return allocator_for(d).pool_cached_bytes(pool); }

}  // namespace mase
