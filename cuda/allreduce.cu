// cuda/allreduce.cu — NCCL's all-reduce of gradients in device memory (twin of
// runtime/cpu/allreduce.cpp, which does it with MPI over host memory; contract:
// runtime/kernels/allreduce.h). Compiled with NCCL's header where the CUDA toolkit has it
// (MASE_HAS_NCCL, cuda/CMakeLists.txt); otherwise each call throws a DeviceError saying so.
// libnccl.so.2 is opened with dlopen at the first call, not linked: every binary that links
// the CUDA kernels would otherwise need NCCL's 220 MB library at start-up, GPU work or not.
#include "cuda/check.h"
#include "cuda/memory.h"
#include "cuda/stream.h"
#include "runtime/kernels/allreduce.h"

#ifdef MASE_HAS_NCCL
#include <dlfcn.h>
#include <nccl.h>

#include <cstring>

namespace mase::cuda {
namespace {

// NCCL's entry points, found in libnccl.so.2 at the first use.
struct Nccl {
  decltype(&ncclGetUniqueId) get_unique_id;
  decltype(&ncclCommInitRank) comm_init_rank;
  decltype(&ncclCommDestroy) comm_destroy;
  decltype(&ncclAllReduce) all_reduce;
  decltype(&ncclGroupStart) group_start;
  decltype(&ncclGroupEnd) group_end;
  decltype(&ncclGetErrorString) error_string;
};

const Nccl& nccl() {
  static const Nccl api = [] {
    void* lib = dlopen("libnccl.so.2", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen("libnccl.so", RTLD_NOW | RTLD_LOCAL);
    MASE_CHECK(lib != nullptr, DeviceError, "[nccl] expected libnccl.so.2, got: ", dlerror(),
               " (install NCCL, or add the CUDA toolkit's lib folder to LD_LIBRARY_PATH)");
    auto sym = [lib](const char* name) {
      void* f = dlsym(lib, name);
      MASE_CHECK(f != nullptr, DeviceError, "[nccl] libnccl.so.2 has no ", name,
                 " (expected NCCL >= 2.10)");
      return f;
    };
    Nccl a;
    a.get_unique_id = reinterpret_cast<decltype(a.get_unique_id)>(sym("ncclGetUniqueId"));
    a.comm_init_rank = reinterpret_cast<decltype(a.comm_init_rank)>(sym("ncclCommInitRank"));
    a.comm_destroy = reinterpret_cast<decltype(a.comm_destroy)>(sym("ncclCommDestroy"));
    a.all_reduce = reinterpret_cast<decltype(a.all_reduce)>(sym("ncclAllReduce"));
    a.group_start = reinterpret_cast<decltype(a.group_start)>(sym("ncclGroupStart"));
    a.group_end = reinterpret_cast<decltype(a.group_end)>(sym("ncclGroupEnd"));
    a.error_string = reinterpret_cast<decltype(a.error_string)>(sym("ncclGetErrorString"));
    return a;
  }();
  return api;
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess)
    throw DeviceError(cat("[nccl] ", what, " failed: ", nccl().error_string(r)));
}

ncclComm_t g_comm = nullptr;
int g_world = 1;

__global__ void scale_kernel(float* x, int64_t n, float s) {
  for (int64_t i = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x)
    x[i] *= s;
}

}  // namespace

bool nccl_built() { return true; }

void nccl_unique_id(char* id) {
  static_assert(sizeof(ncclUniqueId) == kNcclIdBytes, "NCCL's id size changed");
  ncclUniqueId u;
  check_nccl(nccl().get_unique_id(&u), "ncclGetUniqueId");
  std::memcpy(id, &u, sizeof u);
}

void nccl_start(const char* id, int rank, int world) {
  MASE_CHECK(g_comm == nullptr, DeviceError, "[nccl] expected one communicator per process, ",
             "got a second nccl_start");
  ncclUniqueId u;
  std::memcpy(&u, id, sizeof u);
  check_nccl(nccl().comm_init_rank(&g_comm, world, u, rank), "ncclCommInitRank");
  g_world = world;
}

void nccl_stop() {
  if (g_comm) nccl().comm_destroy(g_comm);
  g_comm = nullptr;
}

void nccl_allreduce_sum(float* const* bufs, const int64_t* sizes, int count, float scale) {
  MASE_CHECK(g_comm != nullptr, DeviceError, "[nccl] all-reduce before nccl_start");
  // The kernels of the step run on mase's own stream (cuda/stream.h), which is created
  // non-blocking: it does NOT order itself with the legacy default stream (0). NCCL's kernels
  // must run on that same stream, in order after the backward kernels that wrote the gradients
  // (on stream 0 they could read gradients still being written), and before the optimizer's.
  cudaStream_t stream = mase::cuda::stream();
  const bool average = scale * static_cast<float>(g_world) == 1.0f;
  check_nccl(nccl().group_start(), "ncclGroupStart");
  for (int i = 0; i < count; ++i)
    check_nccl(nccl().all_reduce(bufs[i], bufs[i], static_cast<size_t>(sizes[i]), ncclFloat,
                                 average ? ncclAvg : ncclSum, g_comm, stream),
               "ncclAllReduce");
  check_nccl(nccl().group_end(), "ncclGroupEnd");
  if (!average && scale != 1.0f)
    for (int i = 0; i < count; ++i)
      scale_kernel<<<256, 256, 0, stream>>>(bufs[i], sizes[i], scale);
  MASE_CUDA_CHECK(cudaGetLastError());
  count_host_sync();  // cuda/memory.h: the step profiler counts the host's waits
  MASE_CUDA_CHECK(cudaStreamSynchronize(stream));
}

}  // namespace mase::cuda

#else  // the toolkit has no NCCL

namespace mase::cuda {

namespace {
[[noreturn]] void no_nccl(const char* what) {
  throw DeviceError(cat("[", what, "] built without NCCL (the CUDA toolkit's nccl.h and "
                        "libnccl were not found when configuring; install NCCL, reconfigure)"));
}
}  // namespace

bool nccl_built() { return false; }
void nccl_unique_id(char*) { no_nccl("nccl_unique_id"); }
void nccl_start(const char*, int, int) { no_nccl("nccl_start"); }
void nccl_stop() {}
void nccl_allreduce_sum(float* const*, const int64_t*, int, float) { no_nccl("nccl_allreduce"); }

}  // namespace mase::cuda

#endif
