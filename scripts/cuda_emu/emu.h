// scripts/cuda_emu/emu.h — a host emulation of the CUDA features mase's softmax and attention
// kernels use, so that their .cu sources run on a CPU (prep.py rewrites the few lines C++
// cannot parse). Slow and approximate, but it runs the kernels' own index arithmetic, barriers,
// shuffles, fragments and asynchronous copies, which is where kernels written without a GPU
// go wrong. Read scripts/cuda_emu/run.sh first.
//
//   blocks       one at a time (1-, 2- or 3-d grids and blocks); each CUDA thread of the block
//                is a std::thread
//   __syncthreads  a std::barrier of the block's threads; a thread that returns drops out
//   __shfl_xor_sync  the 32 lanes of a warp exchange through a slot array between two warp
//                barriers (so every lane must reach it, as on the GPU with a full mask)
//   __shared__   `static` (one block runs at a time); dynamic shared memory is one buffer
//                filled with 0xFF bytes (NaN as floats) before each launch, so a read of
//                shared memory nobody wrote shows up as NaN in the results
//   wmma         a fragment holds its whole tile in every lane; loads and stores check the
//                32-byte alignment the hardware requires, mma_sync checks that its operands
//                were rounded to TF32
//   cp.async     copies are queued per thread and land only when __pipeline_wait_prior
//                releases their group: a kernel that reads before waiting reads stale data
//   atomicAdd    under one global lock
//   bf16         __nv_bfloat16 (2 bytes of raw bits) and __float2bfloat16_rn: round to nearest
//                even as cvt.rn.bf16.f32 does, every NaN to the canonical 0x7FFF (what
//                cuda_bf16.h's own non-sm_80 path returns)
//   the device   3 SMs of 2 blocks each, as cudaDeviceGetAttribute and the occupancy query
//                report it (emu::sm_count, emu::blocks_per_sm)
// Not emulated: timing, occupancy, bank conflicts, the memory model beyond barriers.
#pragma once
#include <algorithm>
#include <array>
#include <barrier>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <vector>

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  dim3(unsigned a = 1, unsigned b = 1, unsigned c = 1) : x(a), y(b), z(c) {}
};
struct alignas(16) float4 { float x, y, z, w; };
struct alignas(8) float2 { float x, y; };
inline float4 make_float4(float a, float b, float c, float d) { return {a, b, c, d}; }
typedef int cudaError_t;
typedef void* cudaStream_t;
constexpr int cudaSuccess = 0;
constexpr int cudaFuncAttributeMaxDynamicSharedMemorySize = 8;
template <class F>
inline int cudaFuncSetAttribute(F, int, int) { return 0; }
inline int cudaGetLastError() { return 0; }
// The device's size, as the kernels' launchers ask for it: a small GPU (emu::sm_count SMs,
// each holding emu::blocks_per_sm blocks), so that launchers which size their grids to the
// GPU take their multi-group paths on the emulation's small problems.
namespace emu {
inline int sm_count = 3, blocks_per_sm = 2;
}  // namespace emu
enum cudaDeviceAttr { cudaDevAttrMultiProcessorCount = 16 };
inline int cudaGetDevice(int* d) { return *d = 0, 0; }
inline int cudaDeviceGetAttribute(int* v, cudaDeviceAttr, int) { return *v = emu::sm_count, 0; }
template <class F>
inline int cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* n, F, int, size_t) {
  return *n = emu::blocks_per_sm, 0;
}
inline const char* cudaGetErrorString(int) { return "emu"; }
#define __global__
#define __device__
#define __host__
#define __forceinline__
#define __launch_bounds__(...)
#define __shared__ static
#define __align__(n) alignas(n)
inline float __expf(float x) { return std::exp(x); }

namespace emu {
inline thread_local dim3 tIdx, bIdx;
inline dim3 bDim, gDim;
inline std::barrier<>* block_bar = nullptr;
inline std::vector<std::unique_ptr<std::barrier<>>> warp_bars;
inline std::vector<float> shfl_slots;
inline std::vector<unsigned char> dyn_smem;
inline thread_local int lane_id, warp_id;

inline void syncthreads() { block_bar->arrive_and_wait(); }
inline float shfl_xor(float v, int off) {
  shfl_slots[warp_id * 32 + lane_id] = v;
  warp_bars[warp_id]->arrive_and_wait();
  const float r = shfl_slots[warp_id * 32 + (lane_id ^ off)];
  warp_bars[warp_id]->arrive_and_wait();
  return r;
}
// Runs body() as every thread of every block of the grid (blocks in x, y, z order; a thread's
// linear index t = x + bx·(y + by·z), warps of 32 consecutive t, as on the GPU).
inline void launch(dim3 grid, dim3 block, size_t smem, const std::function<void()>& body) {
  bDim = block;
  gDim = grid;
  const unsigned n = block.x * block.y * block.z;
  if (n % 32 != 0) throw std::runtime_error("emu: block not a multiple of 32 threads");
  for (unsigned bl = 0; bl < grid.x * grid.y * grid.z; ++bl) {
    const dim3 b(bl % grid.x, bl / grid.x % grid.y, bl / (grid.x * grid.y));
    dyn_smem.assign(smem + 64, 0xFF);
    std::barrier<> bar(n);
    block_bar = &bar;
    warp_bars.clear();
    for (unsigned w = 0; w < n / 32; ++w) warp_bars.push_back(std::make_unique<std::barrier<>>(32));
    shfl_slots.assign(n, 0.f);
    std::vector<std::thread> threads;
    for (unsigned t = 0; t < n; ++t)
      threads.emplace_back([&, t, b] {
        tIdx = dim3(t % block.x, t / block.x % block.y, t / (block.x * block.y));
        bIdx = b;
        lane_id = t % 32;
        warp_id = t / 32;
        body();
        warp_bars[warp_id]->arrive_and_drop();
        bar.arrive_and_drop();
      });
    for (auto& th : threads) th.join();
  }
}
}  // namespace emu

// atomicAdd: one lock for every address (correct, not fast). The order in which threads take
// it is the OS scheduler's, as the order of a GPU's atomics is the hardware's.
namespace emu {
inline std::mutex atomic_lock;
}  // namespace emu
inline float atomicAdd(float* p, float v) {
  std::lock_guard<std::mutex> g(emu::atomic_lock);
  const float old = *p;
  *p = old + v;
  return old;
}

#define threadIdx (emu::tIdx)
#define blockIdx (emu::bIdx)
#define blockDim (emu::bDim)
#define gridDim (emu::gDim)
#define __syncthreads() emu::syncthreads()
#define __shfl_xor_sync(mask, v, off) emu::shfl_xor((v), (off))
#define EMU_DYN_SMEM \
  (reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(emu::dyn_smem.data()) + 63) / 64 * 64))
#define MASE_CUDA_CHECK(call) \
  do {                        \
    (void)(call);             \
  } while (0)
namespace mase::cuda {
inline cudaStream_t stream() { return nullptr; }
inline void use_device(int) {}
}  // namespace mase::cuda

// ---- bf16: the type and the rounding of cuda_bf16.h ----
struct alignas(2) __nv_bfloat16 {
  unsigned short __x;
};
// Round to nearest, ties to even, stated on what is dropped: the low 16 bits of the fp32 above
// half of bf16's ulp round up, exactly half rounds to the even neighbour (a carry runs into the
// exponent, and from the largest finite values into inf); NaN is the canonical 0x7FFF.
inline __nv_bfloat16 __float2bfloat16_rn(float a) {
  uint32_t u;
  std::memcpy(&u, &a, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return {0x7fff};
  const uint32_t dropped = u & 0xffffu, kept = u >> 16;
  const bool up = dropped > 0x8000u || (dropped == 0x8000u && (kept & 1u));
  return {static_cast<unsigned short>(kept + (up ? 1u : 0u))};
}

// ---- wmma, TF32 m16n16k8 only ----
namespace nvcuda::wmma {
struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
namespace precision {
struct tf32 {};
}  // namespace precision
enum layout_t { mem_row_major, mem_col_major };
template <class Use, int M, int N, int K, class T = void, class L = void>
struct fragment {
  static constexpr int R = std::is_same_v<Use, matrix_b> ? K : M;
  static constexpr int C = std::is_same_v<Use, matrix_a> ? K : N;
  static constexpr int num_elements = R * C;
  float x[R * C];  // element (r, c) at x[r·C + c]
};
inline void check_aligned(const void* p, unsigned ld) {
  if (reinterpret_cast<uintptr_t>(p) % 32 != 0 || ld % 4 != 0)
    throw std::runtime_error("wmma: pointer not 32-byte aligned or ldm not a multiple of 16 bytes");
}
template <class Use, int M, int N, int K, class T, class L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L>& f, const float* p, unsigned ld) {
  check_aligned(p, ld);
  using F = fragment<Use, M, N, K, T, L>;
  for (int r = 0; r < F::R; ++r)
    for (int c = 0; c < F::C; ++c)
      f.x[r * F::C + c] = std::is_same_v<L, row_major> ? p[r * ld + c] : p[c * ld + r];
}
template <int M, int N, int K>
inline void store_matrix_sync(float* p, const fragment<accumulator, M, N, K, float>& f,
                              unsigned ld, layout_t l) {
  check_aligned(p, ld);
  for (int r = 0; r < M; ++r)
    for (int c = 0; c < N; ++c)
      (l == mem_row_major ? p[r * ld + c] : p[c * ld + r]) = f.x[r * N + c];
}
inline bool is_tf32(float v) {
  uint32_t u;
  std::memcpy(&u, &v, 4);
  return (u & 0x1FFF) == 0;
}
template <int M, int N, int K, class LA, class LB>
inline void mma_sync(fragment<accumulator, M, N, K, float>& d,
                     const fragment<matrix_a, M, N, K, precision::tf32, LA>& a,
                     const fragment<matrix_b, M, N, K, precision::tf32, LB>& b,
                     const fragment<accumulator, M, N, K, float>& c) {
  float t[M * N];
  for (int m = 0; m < M; ++m)
    for (int n = 0; n < N; ++n) {
      float s = c.x[m * N + n];
      for (int k = 0; k < K; ++k) {
        const float fa = a.x[m * K + k], fb = b.x[k * N + n];
        if (!is_tf32(fa) || !is_tf32(fb)) throw std::runtime_error("wmma: operand not TF32");
        s += fa * fb;
      }
      t[m * N + n] = s;
    }
  std::memcpy(d.x, t, sizeof t);
}
template <class F>
inline void fill_fragment(F& f, float v) {
  for (auto& e : f.x) e = v;
}
// cvt.rna.tf32.f32: round to nearest, ties away from zero, keeping 10 mantissa bits
inline float __float_to_tf32(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  if ((u & 0x7f800000u) != 0x7f800000u) u = (u + 0x1000u) & ~0x1FFFu;
  float r;
  std::memcpy(&r, &u, 4);
  return r;
}
}  // namespace nvcuda::wmma

// ---- cp.async through the pipeline primitives ----
namespace emu {
struct PendingCopy {
  void* dst;
  const void* src;
  size_t size, zfill;
};
inline thread_local std::vector<PendingCopy> open_copies;
inline thread_local std::vector<std::vector<PendingCopy>> groups;
}  // namespace emu
inline void __pipeline_memcpy_async(void* dst, const void* src, size_t size, size_t zfill = 0) {
  if (reinterpret_cast<uintptr_t>(dst) % size || reinterpret_cast<uintptr_t>(src) % size)
    throw std::runtime_error("cp.async: misaligned");
  emu::open_copies.push_back({dst, src, size, zfill});
}
inline void __pipeline_commit() {
  emu::groups.push_back(std::move(emu::open_copies));
  emu::open_copies.clear();
}
inline void __pipeline_wait_prior(size_t n) {
  while (emu::groups.size() > n) {
    for (const auto& c : emu::groups.front()) {
      std::memcpy(c.dst, c.src, c.size - c.zfill);
      std::memset(static_cast<char*>(c.dst) + (c.size - c.zfill), 0, c.zfill);
    }
    emu::groups.erase(emu::groups.begin());
  }
}
