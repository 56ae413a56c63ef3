// tests/runtime/test_allocator_nothrow.cpp — freeing memory never throws: Storage's destructor
// calls deallocate, and a throw from a destructor is std::terminate (an out-of-memory error
// would become an abort instead of the one-line error the tools print).
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
