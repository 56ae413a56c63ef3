// runtime/storage.cpp — see storage.h.
#include "runtime/storage.h"

#include "runtime/allocator.h"

namespace mase {

Storage::Storage(size_t nbytes, Device device)
    : data_(allocate(device, nbytes)), nbytes_(nbytes), device_(device) {}

Storage::Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner)
    : data_(data), nbytes_(nbytes), device_(device), owner_(std::move(owner)), borrowed_(true) {}

Storage::~Storage() {
  if (!borrowed_) deallocate(device_, data_, nbytes_);
}

}  // namespace mase
