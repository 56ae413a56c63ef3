// cuda/stream.cu — one non-blocking stream per device (see stream.h for why).
#include <array>
#include <mutex>

#include "cuda/check.h"
#include "cuda/stream.h"

namespace mase::cuda {

cudaStream_t stream() {
  constexpr int kMaxDevices = 64;
  static std::array<cudaStream_t, kMaxDevices> streams{};
  static std::once_flag once[kMaxDevices];
  int device = 0;
  MASE_CUDA_CHECK(cudaGetDevice(&device));
  if (device < 0 || device >= kMaxDevices)
    throw DeviceError(cat("[cuda] expected a device index below ", kMaxDevices, ", got ", device));
  std::call_once(once[device], [&] {
    MASE_CUDA_CHECK(cudaStreamCreateWithFlags(&streams[device], cudaStreamNonBlocking));
  });
  return streams[device];
}

void use_device(int device) {
  int current = -1;
  MASE_CUDA_CHECK(cudaGetDevice(&current));
  if (current != device) MASE_CUDA_CHECK(cudaSetDevice(device));
}

}  // namespace mase::cuda
