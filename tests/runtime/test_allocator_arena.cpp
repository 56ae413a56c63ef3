// tests/runtime/test_allocator_arena.cpp — recording a run's allocations and serving them again
// from a planned arena (runtime/allocator.h): the recording's sizes and lifetimes by hand, the
// planned offsets served in order, and every way a run can differ from its recording (another
// size, one request more, a block kept alive) falling back to the caching allocator without
// overwriting anything; the arena's bytes in the statistics and given back when its last block
// dies.
#include "helpers.h"
#include "runtime/allocator.h"

using namespace mase;

namespace test_allocator_arena {

namespace {

const Device cpu = Device::cpu();

// A run: a (100 B), b (1000 B); free a; c (64 B); free b, c. Sizes round up to 64.
void run_abc(void** keep_b = nullptr) {
  void* a = allocate(cpu, 100);
  void* b = allocate(cpu, 1000);
  deallocate(cpu, a, 100);
  void* c = allocate(cpu, 64);
  if (keep_b) *keep_b = b;
  else deallocate(cpu, b, 1000);
  deallocate(cpu, c, 64);
}

}  // namespace

TEST_CASE("arena: a recording lists each request's size and lifetime") {
  AllocationRecorder rec(cpu);
  run_abc();
  const std::vector<AllocationEvent> ev = rec.stop();
  REQUIRE(ev.size() == 3);
  // clock: a born 0, b born 1, a dies 2, c born 3, b dies 4, c dies 5
  CHECK(ev[0].bytes == 128);
  CHECK(ev[0].born == 0);
  CHECK(ev[0].died == 2);
  CHECK(ev[1].bytes == 1024);
  CHECK(ev[1].born == 1);
  CHECK(ev[1].died == 4);
  CHECK(ev[2].bytes == 64);
  CHECK(ev[2].born == 3);
  CHECK(ev[2].died == 5);
  CHECK_THROWS_AS(rec.stop(), ConfigError);
  AllocationRecorder again(cpu);  // the first one stopped: a new one may start
  CHECK_THROWS_AS(AllocationRecorder{cpu}, ConfigError);
}

TEST_CASE("arena: a run is served at the planned offsets and freeing is a no-op") {
  // b at 0, a and c share offset 1024 (a is dead when c is requested)
  Arena arena(cpu, {128, 1024, 64}, {1024, 0, 1024}, 1152);
  const size_t held = allocator_stats().os_bytes, in_use = allocator_stats().in_use_bytes;
  char* base = static_cast<char*>(arena.base());
  REQUIRE(base != nullptr);
  {
    Arena::Run run(arena);
    void* a = allocate(cpu, 100);
    void* b = allocate(cpu, 1000);
    CHECK(a == base + 1024);
    CHECK(b == base);
    deallocate(cpu, a, 100);
    void* c = allocate(cpu, 64);
    CHECK(c == base + 1024);
    CHECK(arena.live_blocks() == 2);
    deallocate(cpu, b, 1000);
    deallocate(cpu, c, 64);
    CHECK_FALSE(run.diverged());
    CHECK_THROWS_AS(Arena::Run{arena}, ConfigError);  // one run at a time on a thread
  }
  CHECK(arena.runs() == 1);
  CHECK(arena.diverged_runs() == 0);
  CHECK(arena.live_blocks() == 0);
  CHECK(allocator_stats().os_bytes == held);  // nothing asked of the OS during the run
  CHECK(allocator_stats().in_use_bytes == in_use);
  CHECK_THROWS_AS(Arena(cpu, {64}, {0, 64}, 128), ShapeError);
  CHECK_THROWS_AS(Arena(cpu, {128}, {64}, 128), ShapeError);  // past the end
}

TEST_CASE("arena: a run that differs from its recording falls back and overwrites nothing") {
  Arena arena(cpu, {128, 1024, 64}, {1024, 0, 1024}, 1152);
  char* base = static_cast<char*>(arena.base());
  SUBCASE("another size") {
    Arena::Run run(arena);
    void* a = allocate(cpu, 100);
    void* b = allocate(cpu, 2000);  // not the recorded 1024: from the caching allocator
    CHECK(a == base + 1024);
    CHECK((b < base || b >= base + 1152));
    void* c = allocate(cpu, 64);  // and every later request of the run as well
    CHECK((c < base || c >= base + 1152));
    CHECK(run.diverged());
    for (auto [p, n] : {std::pair{a, 100}, {b, 2000}, {c, 64}}) deallocate(cpu, p, n);
  }
  SUBCASE("a block alive where the next one was planned") {
    Arena::Run run(arena);
    void* a = allocate(cpu, 100);
    void* b = allocate(cpu, 1000);
    void* c = allocate(cpu, 64);  // a was not freed: c's planned range is a's
    CHECK(c != a);
    CHECK((c < base || c >= base + 1152));
    CHECK(run.diverged());
    for (auto [p, n] : {std::pair{a, 100}, {b, 1000}, {c, 64}}) deallocate(cpu, p, n);
  }
  SUBCASE("a block kept from the run before") {
    void* kept = nullptr;
    {
      Arena::Run run(arena);
      run_abc(&kept);  // b outlives the run
      CHECK_FALSE(run.diverged());
    }
    CHECK(kept == base);
    CHECK(arena.live_blocks() == 1);
    {
      Arena::Run run(arena);  // b is still alive at [0, 1024)
      void* a = allocate(cpu, 100);
      CHECK(a == base + 1024);  // a's range is free: served
      CHECK_FALSE(run.diverged());
      void* b = allocate(cpu, 1000);  // planned at 0, over the kept b: from the caching allocator
      CHECK((b < base || b >= base + 1152));
      CHECK(run.diverged());
      deallocate(cpu, a, 100);
      deallocate(cpu, b, 1000);
    }
    deallocate(cpu, kept, 1000);
    CHECK(arena.live_blocks() == 0);
  }
  CHECK(arena.diverged_runs() >= 1);
}

TEST_CASE("arena: its bytes are held and in use while it lives, freed after its last block") {
  const AllocatorStats s0 = allocator_stats();
  void* kept = nullptr;
  {
    Arena arena(cpu, {128, 1024, 64}, {1024, 0, 1024}, 1152);
    CHECK(allocator_stats().os_bytes == s0.os_bytes + 1152);
    CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes + 1152);
    Arena::Run run(arena);
    run_abc(&kept);
  }  // the Arena is gone, but b still lives in its block
  CHECK(allocator_stats().os_bytes == s0.os_bytes + 1152);
  static_cast<char*>(kept)[999] = 1;  // still valid memory
  deallocate(cpu, kept, 1000);
  CHECK(allocator_stats().os_bytes == s0.os_bytes);
  CHECK(allocator_stats().in_use_bytes == s0.in_use_bytes);
}

TEST_CASE("arena: a zero-byte request gets a distinct block, never an arena address") {
  SUBCASE("an empty arena (every request zero bytes)") {
    Arena arena(cpu, {0, 0}, {0, 0}, 0);
    CHECK(arena.base() == nullptr);
    {
      Arena::Run run(arena);
      void* p = allocate(cpu, 0);
      void* q = allocate(cpu, 0);
      CHECK(p != nullptr);
      CHECK(q != nullptr);
      CHECK(p != q);
      CHECK(arena.live_blocks() == 0);  // nothing of the arena's is handed out
      deallocate(cpu, p, 0);
      deallocate(cpu, q, 0);
      CHECK_FALSE(run.diverged());  // the plan's two requests, made as recorded
    }
    CHECK(arena.live_blocks() == 0);
    CHECK(arena.diverged_runs() == 0);
  }
  SUBCASE("beside a block at the same planned offset, kept longer than recorded") {
    // recorded: a (1024 B) and z (0 B) at offset 0, z freed, a freed, then c (1024 B) at 0
    Arena arena(cpu, {1024, 0, 1024}, {0, 0, 0}, 1024);
    char* base = static_cast<char*>(arena.base());
    Arena::Run run(arena);
    void* a = allocate(cpu, 1024);
    void* z = allocate(cpu, 0);
    CHECK(a == base);
    CHECK(z != a);
    CHECK(arena.live_blocks() == 1);
    deallocate(cpu, z, 0);  // frees z, not a's place in the arena
    CHECK(arena.live_blocks() == 1);
    void* c = allocate(cpu, 1024);  // this run keeps a: c must not be served over it
    CHECK(c != a);
    CHECK(run.diverged());
    deallocate(cpu, c, 1024);
    deallocate(cpu, a, 1024);
  }
}

}  // namespace test_allocator_arena
