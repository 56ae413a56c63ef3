// runtime/device.cpp — which devices this build and this machine can use (see device.h).
#include "runtime/device.h"

#include "cuda/memory.h"

namespace mase {

bool cuda_built() { return cuda::built; }
int cuda_device_count() { return cuda::device_count(); }

void require_device(Device device) {
  if (device.is_cpu()) return;
  MASE_CHECK(cuda::built, DeviceError,
             "[to] built without CUDA; reconfigure with -DMASE_CUDA=ON (or use cpu)");
  const int n = cuda::device_count();
  MASE_CHECK(device.index < n, DeviceError, "[to] expected CUDA device ", device, ", got ",
             n == 0 ? std::string("no GPU (no device or no driver found)") : cat(n, " device(s)"),
             " (use --device cpu)");
}

}  // namespace mase
