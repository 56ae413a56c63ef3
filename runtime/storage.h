// runtime/storage.h — a block of memory on one device, shared by every view of it.
//
// Tensors hold a std::shared_ptr<Storage>: a transpose or a slice is a new Tensor pointing
// at the same Storage with other shape/strides/offset. The memory comes from the caching
// allocator and goes back to it when the last view dies; or it is borrowed from an owner
// that is kept alive as long as the Storage (only the tests do this: a std::vector's memory
// viewed as a tensor, tests/helpers.h's fake_cuda).
#pragma once
#include <cstddef>
#include <memory>

#include "runtime/device.h"

namespace mase {

class Storage {
 public:
  Storage(size_t nbytes, Device device);  // from the caching allocator (uninitialised)
  // Borrowed memory: `owner` keeps `data` alive (it may be null: the caller keeps it alive);
  // nothing is freed by the Storage itself.
  Storage(void* data, size_t nbytes, Device device, std::shared_ptr<void> owner);
  ~Storage();
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  void* data() const { return data_; }
  size_t nbytes() const { return nbytes_; }
  Device device() const { return device_; }

 private:
  void* data_ = nullptr;
  size_t nbytes_ = 0;
  Device device_;
  std::shared_ptr<void> owner_;  // borrowed memory: what keeps it alive
  bool borrowed_ = false;         // not the allocator's: never handed back to it
};

}  // namespace mase
