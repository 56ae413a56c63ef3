// tests/runtime/test_allocator_faults.cpp — the caching allocator's failure paths, reached
// with its test hook (inject_allocator_faults, runtime/allocator.h): out of memory gives back
// the shared cache and retries once; a table that cannot grow fails the request whole or sends
// a freed block back to the OS. Afterwards the statistics and a pool's owner entries still
// say exactly what is held, and the allocator works on.
#include <new>

#include "helpers.h"
#include "runtime/allocator.h"

using namespace mase;

namespace test_allocator_faults {

namespace {

const Device cpu = Device::cpu();

// Turns injection off when a case ends, whatever it left.
struct NoFaultsAfter {
  ~NoFaultsAfter() { inject_allocator_faults(cpu, {}); }
};

}  // namespace

TEST_CASE("allocator faults: out of memory gives back the shared cache and retries once") {
  NoFaultsAfter guard;
  empty_cache(cpu);
  void* cached[3];
  for (void*& p : cached) p = allocate(cpu, 4096);
  for (void* p : cached) deallocate(cpu, p, 4096);  // three blocks in the shared cache
  const AllocatorStats s0 = allocator_stats(cpu);

  inject_allocator_faults(cpu, {.os_allocs = 1});
  void* p = allocate(cpu, 100000);  // a size not cached: the OS fails once, then serves
  REQUIRE(p != nullptr);
  const AllocatorStats s1 = allocator_stats(cpu);
  CHECK(s1.os_frees == s0.os_frees + 3);  // the cache went back first
  CHECK(s1.os_allocs == s0.os_allocs + 1);
  CHECK(s1.os_bytes == s0.os_bytes - 3 * size_class(4096) + size_class(100000));
  CHECK(s1.in_use_bytes == s0.in_use_bytes + size_class(100000));

  inject_allocator_faults(cpu, {.os_allocs = 2});  // and again after the retry: bad_alloc
  CHECK_THROWS_AS(allocate(cpu, 200000), std::bad_alloc);
  const AllocatorStats s2 = allocator_stats(cpu);
  CHECK(s2.os_bytes == s1.os_bytes);  // nothing counted for the failed request
  CHECK(s2.in_use_bytes == s1.in_use_bytes);
  CHECK(s2.os_allocs == s1.os_allocs);

  void* q = allocate(cpu, 4096);  // the allocator works on: a fresh block (the cache is empty)
  CHECK(allocator_stats(cpu).os_allocs == s2.os_allocs + 1);
  deallocate(cpu, q, 4096);
  deallocate(cpu, p, 100000);
}

TEST_CASE("allocator faults: a pool block sent back to the OS loses its owner entry") {
  NoFaultsAfter guard;
  empty_cache(cpu);
  const size_t owned0 = pool_owned_blocks(cpu);
  const uint64_t pool = create_pool(cpu);
  use_pool(cpu, pool);
  void* a = allocate(cpu, 8192);
  use_pool(cpu, 0);
  CHECK(pool_owned_blocks(cpu) == owned0 + 1);
  const AllocatorStats s0 = allocator_stats(cpu);

  inject_allocator_faults(cpu, {.bookkeeping = 1});  // the pool's free list cannot grow
  deallocate(cpu, a, 8192);                           // so a goes back to the OS ...
  const AllocatorStats s1 = allocator_stats(cpu);
  CHECK(s1.os_frees == s0.os_frees + 1);
  CHECK(s1.os_bytes == s0.os_bytes - size_class(8192));
  CHECK(s1.in_use_bytes == s0.in_use_bytes - size_class(8192));
  CHECK(pool_cached_bytes(cpu, pool) == 0);
  CHECK(pool_owned_blocks(cpu) == owned0);  // ... and is the pool's no more

  // A block the OS hands out at that address again, outside the pool, is nobody's: freed, it
  // joins the shared cache, not the pool (with a stale entry it went to the pool). Whether the
  // OS reuses the address is its choice; the owner count above is checked either way.
  void* b = allocate(cpu, 8192);
  deallocate(cpu, b, 8192);
  CHECK(pool_cached_bytes(cpu, pool) == 0);
  CHECK(pool_owned_blocks(cpu) == owned0);
  release_pool(cpu, pool);
}

TEST_CASE("allocator faults: a pool that cannot note a new block's owner fails the request") {
  NoFaultsAfter guard;
  empty_cache(cpu);
  const size_t owned0 = pool_owned_blocks(cpu);
  const uint64_t pool = create_pool(cpu);
  use_pool(cpu, pool);
  const AllocatorStats s0 = allocator_stats(cpu);
  inject_allocator_faults(cpu, {.bookkeeping = 1});
  CHECK_THROWS_AS(allocate(cpu, 8192), std::bad_alloc);  // the block went back to the OS
  const AllocatorStats s1 = allocator_stats(cpu);
  CHECK(s1.os_bytes == s0.os_bytes);
  CHECK(s1.in_use_bytes == s0.in_use_bytes);
  CHECK(pool_owned_blocks(cpu) == owned0);
  void* a = allocate(cpu, 8192);  // works again, noted as the pool's
  CHECK(pool_owned_blocks(cpu) == owned0 + 1);
  use_pool(cpu, 0);
  deallocate(cpu, a, 8192);
  CHECK(pool_cached_bytes(cpu, pool) == size_class(8192));
  release_pool(cpu, pool);
  CHECK(pool_owned_blocks(cpu) == owned0);
}

TEST_CASE("allocator faults: out of memory inside a pool keeps the pool's cached blocks") {
  NoFaultsAfter guard;
  empty_cache(cpu);
  const size_t owned0 = pool_owned_blocks(cpu);
  const uint64_t pool = create_pool(cpu);
  use_pool(cpu, pool);
  deallocate(cpu, allocate(cpu, 4096), 4096);  // cached in the pool
  inject_allocator_faults(cpu, {.os_allocs = 2});
  CHECK_THROWS_AS(allocate(cpu, 50000), std::bad_alloc);
  CHECK(pool_cached_bytes(cpu, pool) == size_class(4096));  // the pool's blocks stay its own
  CHECK(pool_owned_blocks(cpu) == owned0 + 1);              // no entry for a block never had
  use_pool(cpu, 0);
  release_pool(cpu, pool);
  CHECK(pool_owned_blocks(cpu) == owned0);
}

TEST_CASE("allocator faults: a recording that cannot grow fails the request whole") {
  NoFaultsAfter guard;
  const AllocatorStats s0 = allocator_stats(cpu);
  AllocationRecorder rec(cpu);
  void* a = allocate(cpu, 100);
  inject_allocator_faults(cpu, {.bookkeeping = 1});
  CHECK_THROWS_AS(allocate(cpu, 200), std::bad_alloc);
  CHECK(allocator_stats(cpu).in_use_bytes == s0.in_use_bytes + size_class(100));
  void* b = allocate(cpu, 300);
  deallocate(cpu, b, 300);
  deallocate(cpu, a, 100);
  const std::vector<AllocationEvent> ev = rec.stop();
  REQUIRE(ev.size() == 2);  // a and b; the failed request left nothing behind
  CHECK(ev[0].bytes == 128);
  CHECK(ev[1].bytes == 320);
  CHECK(ev[1].died == ev[1].born + 1);
  CHECK(ev[0].died == ev[1].died + 1);
  CHECK(allocator_stats(cpu).in_use_bytes == s0.in_use_bytes);
}

TEST_CASE("allocator faults: a larger cached block that cannot be noted stays cached") {
  NoFaultsAfter guard;
  empty_cache(cpu);
  void* big = allocate(cpu, 24u << 20);
  deallocate(cpu, big, 24u << 20);  // cached in class 24 MiB
  const AllocatorStats s0 = allocator_stats(cpu);
  inject_allocator_faults(cpu, {.bookkeeping = 1});  // noting that it serves 18 MiB fails
  CHECK_THROWS_AS(allocate(cpu, 18u << 20), std::bad_alloc);
  inject_allocator_faults(cpu, {});
  CHECK(allocator_stats(cpu).in_use_bytes == s0.in_use_bytes);
  void* again = allocate(cpu, 24u << 20);  // still listed: handed out, nothing from the OS
  CHECK(again == big);
  CHECK(allocator_stats(cpu).os_allocs == s0.os_allocs);
  deallocate(cpu, again, 24u << 20);
  empty_cache(cpu);
}

}  // namespace test_allocator_faults
