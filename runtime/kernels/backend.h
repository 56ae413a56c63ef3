// runtime/kernels/backend.h — how the CUDA half of a kernel contract is declared.
//
// Every contract in runtime/kernels/ declares its CUDA kernels through MASE_CUDA_FN. In a
// build with CUDA (MASE_HAS_CUDA) that is a plain declaration, defined in the matching .cu file. In a
// build without CUDA it becomes an inline function that throws a DeviceError, so the rest of
// the code calls cuda::foo unconditionally and still links. Ops only reach a cuda:: kernel
// for a tensor on a GPU, and such a tensor cannot exist without CUDA (Tensor::to throws).
#pragma once
#include "runtime/error.h"

namespace mase::cuda {

[[noreturn]] inline void throw_not_built(const char* what) {
  throw DeviceError(cat("[", what, "] built without CUDA; reconfigure with -DMASE_CUDA=ON"));
}

#ifdef MASE_HAS_CUDA
constexpr bool built = true;
#else
constexpr bool built = false;
#endif

}  // namespace mase::cuda

#ifdef MASE_HAS_CUDA
#define MASE_CUDA_FN(ret, name, params) ret name params;
#else
#define MASE_CUDA_FN(ret, name, params) \
  [[noreturn]] inline ret name params { ::mase::cuda::throw_not_built(#name); }
#endif
