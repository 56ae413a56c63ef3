// runtime/allocator.cpp — the caching allocator (see allocator.h).
#include "runtime/allocator.h"

#include <algorithm>
#include <bit>
#include <map>
#include <cstdlib>
#include <mutex>
#include <new>
#include <thread>
#include <unordered_map>
#include <utility>
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

// A planned arena and the run in progress on it (see Arena in allocator.h). Every field is
// read and written under its device's allocator lock.
struct ArenaState {
  Device device;
  char* base = nullptr;
  size_t bytes = 0;
  std::vector<size_t> sizes;
  std::vector<int64_t> offsets;
  bool active = false, diverged = false;
  size_t next = 0;                               // the request the run makes next
  std::vector<std::pair<size_t, size_t>> live;   // [offset, end) of served blocks still alive
  bool orphaned = false;                         // the Arena is gone: free when `live` empties
  int64_t runs = 0, diverged_runs = 0;
};

namespace {

thread_local ArenaState* tl_run = nullptr;  // the arena run active on this thread

size_t round64(size_t n) { return (n + 63) / 64 * 64; }
constexpr size_t kSlackMin = size_t{1} << 20;  // larger_cached_locked: 1 MiB and up

class CachingAllocator {
 public:
  explicit CachingAllocator(Device d) : device_(d) {}

  void* allocate(size_t nbytes) {
    std::lock_guard lock(mu_);
    void* p = nullptr;
    if (ArenaState* a = tl_run; a && a->device == device_) p = serve_locked(*a, nbytes);
    if (!p) p = allocate_locked(nbytes);
    try {
      note_alloc_locked(p, nbytes);
    } catch (...) {  // the recording could not grow: the request fails whole
      deallocate_locked(p, nbytes);
      throw;
    }
    return p;
  }

  void* allocate_locked(size_t nbytes) {
    size_t sz = size_class(nbytes);
    // a pool in use (CUDA graph capture) serves from its own lists; see allocator.h
    auto& list = active_pool_ != 0 ? pools_[active_pool_][sz] : free_[sz];
    void* p = nullptr;
    if (!list.empty()) {
      p = list.back();
      list.pop_back();
    } else if (void* q = larger_cached_locked(sz)) {  // sz becomes the block's own class
      p = q;
    } else {
      p = os_alloc(sz);
      if (!p) {  // out of memory: give back the shared cache (a pool's blocks stay its own)
        release_all_locked();
        p = os_alloc(sz);
        if (!p) throw std::bad_alloc();
      }
      if (active_pool_ != 0) {  // the pool's for good
        try {
          insert_fault_locked();
          owner_[p] = active_pool_;
        } catch (...) {  // no room to note its owner: the block goes back, the request fails
          os_free_noexcept(p);
          throw;
        }
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
    std::lock_guard lock(mu_);
    deallocate_locked(p, nbytes);
  }
  void deallocate_locked(void* p, size_t nbytes) noexcept {
    size_t sz = size_class(nbytes);
    if (sz >= kSlackMin && !bigger_.empty()) {
      if (auto it = bigger_.find(p); it != bigger_.end()) {
        sz = it->second;
        bigger_.erase(it);
      }
    }
    if (recording_) {
      if (auto it = rec_live_.find(p); it != rec_live_.end()) {
        rec_[it->second].died = clock_++;
        rec_live_.erase(it);
      }
    }
    if (give_back_to_arena_locked(p)) return;
    stats_.in_use_bytes -= sz;
    try {
      if (!owner_.empty()) {  // a pool's block goes back to its pool (see allocator.h)
        auto it = owner_.find(p);
        if (it != owner_.end()) {
          auto pool = pools_.find(it->second);
          if (pool != pools_.end()) {
            insert_fault_locked();
            pool->second[sz].push_back(p);
            return;
          }
          owner_.erase(it);  // its pool was released: the block joins the shared cache
        }
      }
      insert_fault_locked();
      free_[sz].push_back(p);
    } catch (...) {
      // No room in the cache: the block goes back to the OS, and with it its owner entry, if
      // it was a pool's — kept, a later block at the same address (from the OS again, for
      // anyone) would be taken for the pool's when freed.
      owner_.erase(p);
      os_free_noexcept(p);
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
        os_free_noexcept(p);
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
  size_t pool_owned_blocks() {
    std::lock_guard lock(mu_);
    return owner_.size();
  }
  void inject_faults(const AllocatorFaults& f) {
    std::lock_guard lock(mu_);
    faults_ = f;
  }

  // ---- recording ----
  void start_recording() {
    std::lock_guard lock(mu_);
    MASE_CHECK(!recording_, ConfigError,
               "[allocator] expected one allocation recording per device, got a second one");
    recording_ = true;
    rec_thread_ = std::this_thread::get_id();
    rec_.clear();
    rec_live_.clear();
    clock_ = 0;
  }
  std::vector<AllocationEvent> stop_recording() {
    std::lock_guard lock(mu_);
    recording_ = false;
    rec_live_.clear();
    return std::move(rec_);
  }

  // ---- arenas ----
  void add_arena(const std::shared_ptr<ArenaState>& a) {
    std::lock_guard lock(mu_);
    if (a->bytes > 0) {  // (an empty arena is not registered: it serves nothing)
      a->base = static_cast<char*>(os_alloc(a->bytes));
      if (!a->base) {
        release_all_locked();
        a->base = static_cast<char*>(os_alloc(a->bytes));
        if (!a->base) throw std::bad_alloc();
      }
      ++stats_.os_allocs;
      stats_.os_bytes += a->bytes;
      stats_.peak_os_bytes = std::max(stats_.peak_os_bytes, stats_.os_bytes);
      stats_.in_use_bytes += a->bytes;  // reserved for its plan: no other request can use it
      stats_.peak_in_use_bytes = std::max(stats_.peak_in_use_bytes, stats_.in_use_bytes);
      arenas_[a->base] = a;
    }
  }
  void drop_arena(const std::shared_ptr<ArenaState>& a) noexcept {
    std::lock_guard lock(mu_);
    a->orphaned = true;
    if (a->live.empty()) free_arena_locked(a.get());
  }
  void begin_run(ArenaState& a) {
    std::lock_guard lock(mu_);
    a.active = true;
    a.next = 0;
    // Blocks of an earlier run may still be alive (a CUDA graph's outputs are kept between
    // its launches, planned busy at every step): serve_locked checks each request's range
    // against them, so the run diverges only where it would really overlap one.
    a.diverged = false;
  }
  void end_run(ArenaState& a) noexcept {
    std::lock_guard lock(mu_);
    a.diverged |= a.next != a.sizes.size();
    a.active = false;
    ++a.runs;
    a.diverged_runs += a.diverged;
  }
  std::mutex& mutex() { return mu_; }

 private:
  // All or nothing: if it throws, the recording is as it was.
  void note_alloc_locked(void* p, size_t nbytes) {
    if (!recording_ || std::this_thread::get_id() != rec_thread_) return;
    insert_fault_locked();
    rec_.push_back({round64(nbytes), clock_, -1});
    try {
      rec_live_[p] = rec_.size() - 1;
    } catch (...) {
      rec_.pop_back();
      throw;
    }
    ++clock_;
  }

  // A failure injected by a test (inject_allocator_faults): this insertion throws.
  void insert_fault_locked() {
    if (faults_.bookkeeping > 0) {
      --faults_.bookkeeping;
      throw std::bad_alloc();
    }
  }

  // Request `next` of the run, from the arena if it is the planned one (see allocator.h).
  // nullptr: the caching allocator serves it (planned outside the arena, zero bytes, or the
  // run diverged).
  void* serve_locked(ArenaState& a, size_t nbytes) {
    if (a.diverged) return nullptr;
    const size_t k = a.next++, sz = round64(nbytes);
    if (k >= a.sizes.size() || a.sizes[k] != sz) {
      a.diverged = true;
      return nullptr;
    }
    if (a.offsets[k] < 0) return nullptr;  // planned outside the arena
    if (sz == 0) return nullptr;  // no bytes to give: a distinct block, as outside a run
    const size_t lo = static_cast<size_t>(a.offsets[k]), hi = lo + sz;
    for (const auto& [l, h] : a.live)
      if (lo < h && l < hi) {  // a block of this run still alive there: never overwrite it
        a.diverged = true;
        return nullptr;
      }
    a.live.push_back({lo, hi});
    return a.base + lo;
  }

  bool give_back_to_arena_locked(void* p) noexcept {
    char* c = static_cast<char*>(p);
    auto it = arenas_.upper_bound(c);  // the first arena starting after c
    if (it == arenas_.begin()) return false;
    ArenaState* a = std::prev(it)->second.get();
    if (c >= a->base + a->bytes) return false;
    const size_t off = static_cast<size_t>(c - a->base);
    auto r = std::find_if(a->live.begin(), a->live.end(),
                          [&](const auto& b) { return b.first == off; });
    if (r != a->live.end()) a->live.erase(r);
    if (a->orphaned && a->live.empty()) free_arena_locked(a);
    return true;
  }

  void free_arena_locked(ArenaState* a) noexcept {
    if (!a->base) return;  // an empty arena holds nothing
    char* const base = std::exchange(a->base, nullptr);
    const size_t bytes = a->bytes;
    // the map may hold the last reference to *a: keep it alive until we are done with it
    // (ASan caught the read of a->base after the erase had freed the state)
    std::shared_ptr<ArenaState> keep;
    if (auto it = arenas_.find(base); it != arenas_.end()) {
      keep = std::move(it->second);
      arenas_.erase(it);
    }
    os_free_noexcept(base);
    ++stats_.os_frees;
    stats_.os_bytes -= bytes;
    stats_.in_use_bytes -= bytes;
  }

  // A large request (>= kSlackMin) whose class has no cached block takes a cached block of
  // one of the next classes up, at most 1.5x its own, instead of fresh memory from the OS.
  // Why: batches of varying length (bucketing) ask for sizes step after step that the last
  // steps did not, so an exact-class cache keeps missing, grows, and is trimmed (train/
  // trainer.cpp) — and every block from the OS is pages the kernel must fault in and zero.
  // Measured on a 2-core Zen 4, IMDb with bucketing: bert-small, 40 steps, 1.04-1.07x faster
  // (page faults 2.7 M -> 0.75 M, peak RSS 4.5 -> 3.0 GB); bert-mini, 60 steps, as fast as
  // before (faults 1.0 M -> 0.6 M, RSS 2.65 -> 2.0 GB). docs/performance.md has the runs.
  // The block keeps its own class (bigger_): freed, it goes back to that list. Not in a pool
  // or a recording (their plans replay exact sizes), and CPU only (not yet measured on a GPU).
  void* larger_cached_locked(size_t& sz) {
    if (sz < kSlackMin || active_pool_ != 0 || recording_ || !device_.is_cpu()) return nullptr;
    for (size_t c = size_class(sz + 1); c <= sz + sz / 2; c = size_class(c + 1)) {
      auto it = free_.find(c);
      if (it == free_.end() || it->second.empty()) continue;
      void* p = it->second.back();
      insert_fault_locked();
      bigger_.emplace(p, c);  // first: if it throws, the block is still listed
      it->second.pop_back();
      sz = c;
      return p;
    }
    return nullptr;
  }

  void* os_alloc(size_t sz) {
    if (faults_.os_allocs > 0) {  // a test's injected out-of-memory
      --faults_.os_allocs;
      return nullptr;
    }
    if (device_.is_cpu()) return std::aligned_alloc(64, sz);  // sz is a multiple of 64
    return cuda::malloc_device(sz, device_.index);
  }
  void os_free(void* p) {
    if (device_.is_cpu()) std::free(p);
    else cuda::free_device(p, device_.index);
  }
  void os_free_noexcept(void* p) noexcept {
    try {
      os_free(p);
    } catch (...) {  // a dead context: the block is lost, not the process
    }
  }
  // Every cached block leaves the lists, even if the driver refuses one (a dead context: it
  // is lost): a block left listed after a throw half-way would be freed twice or handed out.
  void release_all_locked() {
    for (auto& [sz, list] : free_) {
      for (void* p : list) {
        os_free_noexcept(p);
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
  std::unordered_map<void*, size_t> bigger_;     // blocks serving a smaller class: their own
  std::unordered_map<uint64_t, FreeLists> pools_;  // private pools' free blocks
  std::unordered_map<void*, uint64_t> owner_;    // every block a pool obtained -> its pool
  uint64_t active_pool_ = 0, last_pool_ = 0;
  AllocatorStats stats_;
  bool recording_ = false;
  std::thread::id rec_thread_;
  std::vector<AllocationEvent> rec_;
  std::unordered_map<void*, size_t> rec_live_;  // recorded blocks still alive -> their event
  int64_t clock_ = 0;
  std::map<char*, std::shared_ptr<ArenaState>> arenas_;  // by base: their blocks when freed
  AllocatorFaults faults_;  // failures a test asked for (all 0 otherwise)
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
size_t pool_owned_blocks(Device d) { return allocator_for(d).pool_owned_blocks(); }
void inject_allocator_faults(Device d, AllocatorFaults faults) {
  allocator_for(d).inject_faults(faults);
}

AllocationRecorder::AllocationRecorder(Device d) : device_(d) {
  allocator_for(d).start_recording();
}
AllocationRecorder::~AllocationRecorder() {
  if (!stopped_) (void)allocator_for(device_).stop_recording();
}
std::vector<AllocationEvent> AllocationRecorder::stop() {
  MASE_CHECK(!stopped_, ConfigError, "[allocator] the recording was already stopped");
  stopped_ = true;
  return allocator_for(device_).stop_recording();
}

Arena::Arena(Device device, std::vector<size_t> sizes, std::vector<int64_t> offsets,
             size_t bytes)
    : state_(std::make_shared<ArenaState>()) {
  MASE_CHECK(sizes.size() == offsets.size(), ShapeError, "[arena] expected one offset per "
             "request, got ", offsets.size(), " offsets for ", sizes.size(), " requests");
  for (size_t k = 0; k < sizes.size(); ++k)
    MASE_CHECK(offsets[k] < 0 || static_cast<size_t>(offsets[k]) + sizes[k] <= bytes,
               ShapeError, "[arena] expected request ", k, " inside the arena of ", bytes,
               " bytes, got offset ", offsets[k], " + ", sizes[k]);
  ArenaState& a = *state_;
  a.device = device;
  a.bytes = round64(bytes);  // os_alloc's aligned_alloc takes multiples of 64
  a.sizes = std::move(sizes);
  a.offsets = std::move(offsets);
  allocator_for(device).add_arena(state_);
}
Arena::~Arena() { allocator_for(state_->device).drop_arena(state_); }

Arena::Run::Run(Arena& arena) : arena_(arena) {
  MASE_CHECK(tl_run == nullptr, ConfigError,
             "[arena] expected one arena run at a time on a thread, got a second one");
  allocator_for(arena.state_->device).begin_run(*arena.state_);
  tl_run = arena.state_.get();
}
Arena::Run::~Run() {
  tl_run = nullptr;
  allocator_for(arena_.state_->device).end_run(*arena_.state_);
}
void Arena::Run::skip_rest() {
  std::lock_guard lock(allocator_for(arena_.state_->device).mutex());
  arena_.state_->next = arena_.state_->sizes.size();
}
bool Arena::Run::diverged() const {
  std::lock_guard lock(allocator_for(arena_.state_->device).mutex());
  return arena_.state_->diverged;
}

void* Arena::base() const { return state_->base; }
size_t Arena::bytes() const { return state_->bytes; }
Device Arena::device() const { return state_->device; }
int64_t Arena::runs() const {
  std::lock_guard lock(allocator_for(state_->device).mutex());
  return state_->runs;
}
int64_t Arena::diverged_runs() const {
  std::lock_guard lock(allocator_for(state_->device).mutex());
  return state_->diverged_runs;
}
int64_t Arena::live_blocks() const {
  std::lock_guard lock(allocator_for(state_->device).mutex());
  return static_cast<int64_t>(state_->live.size());
}

}  // namespace mase
