// cuda/check.h — MASE_CUDA_CHECK: turn a failed CUDA call into a DeviceError with file:line.
// Included by .cu files only.
#pragma once
#include <cuda_runtime.h>

#include "runtime/error.h"

#define MASE_CUDA_CHECK(call)                                                          \
  do {                                                                                 \
    cudaError_t err_ = (call);                                                         \
    if (err_ != cudaSuccess)                                                           \
      throw ::mase::DeviceError(::mase::cat("[cuda] ", #call, " failed: ",             \
                                            cudaGetErrorString(err_), " (", __FILE__,  \
                                            ":", __LINE__, ")"));                      \
  } while (0)
