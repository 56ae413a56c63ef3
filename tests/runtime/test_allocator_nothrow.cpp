// tests/runtime/test_allocator_nothrow.cpp — the shared cache's blocks: freeing never throws
// (Storage's destructor calls deallocate, and a throw from a destructor is std::terminate: an
// out-of-memory error would become an abort instead of the one-line error the tools print),
// a freed block is handed out again, and a large request may take a larger cached block.
#include "helpers.h"
#include "runtime/allocator.h"

using namespace mase;

TEST_CASE("allocator: deallocate is noexcept and recycles the block") {
  const Device cpu = Device::cpu();
  CHECK(noexcept(deallocate(cpu, nullptr, 0)));
  void* p = allocate(Device::cpu(), 1000);
  const size_t in_use = allocator_stats().in_use_bytes;
  deallocate(Device::cpu(), p, 1000);
  CHECK(allocator_stats().in_use_bytes == in_use - size_class(1000));
  CHECK(allocate(Device::cpu(), 1000) == p);  // cached, handed out again
  deallocate(Device::cpu(), p, 1000);
}

// Large blocks: a request whose own class has nothing cached takes a cached block of a larger
// class up to 1.5x (runtime/allocator.h); freed, the block goes back to its own class.
TEST_CASE("allocator: a large request reuses a cached block up to 1.5x its class") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  const size_t big = 24u << 20, small = 18u << 20, tiny = 15u << 20;  // 1.33x and 1.6x apart
  REQUIRE(size_class(big) == big);
  REQUIRE(size_class(small) == small);
  void* p = allocate(cpu, big);
  deallocate(cpu, p, big);  // cached in class 24 MiB
  const AllocatorStats before = allocator_stats();
  void* q = allocate(cpu, small);  // class 18 MiB is empty: takes the 24 MiB block
  CHECK(q == p);
  CHECK(allocator_stats().os_allocs == before.os_allocs);
  CHECK(allocator_stats().in_use_bytes == before.in_use_bytes + big);  // it holds what it has
  deallocate(cpu, q, small);  // back to the 24 MiB class, not to the 18 MiB one
  CHECK(allocator_stats().in_use_bytes == before.in_use_bytes);
  void* r = allocate(cpu, big);
  CHECK(r == p);
  deallocate(cpu, r, big);
  void* t = allocate(cpu, tiny);  // 1.6x smaller: too much waste, a block of its own
  CHECK(t != p);
  CHECK(allocator_stats().os_allocs == before.os_allocs + 1);
  deallocate(cpu, t, tiny);
  empty_cache(cpu);
  CHECK(allocator_stats().os_bytes == allocator_stats().in_use_bytes);  // every block returned
}

TEST_CASE("allocator: small requests and pools keep exact classes") {
  const Device cpu = Device::cpu();
  empty_cache(cpu);
  void* p = allocate(cpu, 768u << 10);  // under 1 MiB: exact classes only
  deallocate(cpu, p, 768u << 10);
  void* q = allocate(cpu, 640u << 10);
  CHECK(q != p);
  deallocate(cpu, q, 640u << 10);
  void* b = allocate(cpu, 24u << 20);
  deallocate(cpu, b, 24u << 20);
  const uint64_t pool = create_pool(cpu);
  use_pool(cpu, pool);
  void* in_pool = allocate(cpu, 18u << 20);  // a pool's blocks are its own: not the cached one
  CHECK(in_pool != b);
  deallocate(cpu, in_pool, 18u << 20);
  use_pool(cpu, 0);
  release_pool(cpu, pool);
  empty_cache(cpu);
}
