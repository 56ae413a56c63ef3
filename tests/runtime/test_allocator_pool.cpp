// tests/runtime/test_allocator_pool.cpp — the caching allocator's private pools (the memory of a
// CUDA graph, runtime/cuda_graph.h): blocks obtained in a pool stay the pool's, whoever frees
// them and when; release_pool hands them back. The pool logic is the same on every device, so
// it is tested here on the CPU allocator.
#include "helpers.h"
#include "runtime/allocator.h"

using namespace mase;

TEST_CASE("allocator pools: a pool's blocks never reach the shared cache") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  const uint64_t pool = create_pool(cpu);
  CHECK(pool != 0);
  CHECK(create_pool(cpu) != pool);  // ids are unique

  use_pool(cpu, pool);
  void* a = allocate(cpu, 4096);  // from the OS, for the pool
  void* b = allocate(cpu, 4096);
  deallocate(cpu, a, 4096);        // freed inside: back to the pool
  void* c = allocate(cpu, 4096);  // ... and handed out again inside
  CHECK(c == a);
  use_pool(cpu, 0);

  deallocate(cpu, b, 4096);  // freed after the capture: still the pool's
  CHECK(pool_cached_bytes(cpu, pool) == size_class(4096));
  const uint64_t os_before = allocator_stats(cpu).os_allocs;
  void* d = allocate(cpu, 4096);  // outside the pool: not b, a fresh block from the OS
  CHECK(d != b);
  CHECK(allocator_stats(cpu).os_allocs == os_before + 1);

  use_pool(cpu, pool);
  void* e = allocate(cpu, 4096);  // the pool again: b, no new block
  CHECK(e == b);
  CHECK(allocator_stats(cpu).os_allocs == os_before + 1);
  use_pool(cpu, 0);

  deallocate(cpu, c, 4096);
  deallocate(cpu, e, 4096);
  const AllocatorStats s0 = allocator_stats(cpu);
  release_pool(cpu, pool);  // its two cached blocks go back to the OS
  const AllocatorStats s1 = allocator_stats(cpu);
  CHECK(s1.os_frees == s0.os_frees + 2);
  CHECK(s1.os_bytes == s0.os_bytes - 2 * size_class(4096));
  CHECK(pool_cached_bytes(cpu, pool) == 0);
  deallocate(cpu, d, 4096);
}

TEST_CASE("allocator pools: a block in use when its pool is released joins the shared cache") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  const uint64_t pool = create_pool(cpu);
  use_pool(cpu, pool);
  void* a = allocate(cpu, 100000);
  use_pool(cpu, 0);
  release_pool(cpu, pool);        // a is still in use: it stays allocated
  deallocate(cpu, a, 100000);     // now freed into the shared cache
  void* b = allocate(cpu, 100000);
  CHECK(b == a);
  deallocate(cpu, b, 100000);
  CHECK_THROWS_AS(use_pool(cpu, pool), Error);  // a released pool cannot be used again
  use_pool(cpu, 0);
}
