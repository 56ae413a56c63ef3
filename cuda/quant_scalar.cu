// cuda/quant_scalar.cu — the scalar formats on the GPU (twin of runtime/cpu/quant_scalar.cpp):
// integer, minifloat_ieee, minifloat_denorm, log, and the MX float elements unscaled.
//
// Each element runs the element function of runtime/kernels/quant_elem.h — the very lines the
// CPU loop runs — with parameters built once on the host. The kernel is a plain grid-stride
// map, four elements (one float4) per thread and turn where the pointers allow: every element
// is read once and written once, coalesced, so it should run near the copy bandwidth
// (mase-bench --suite gpu-quant pairs it with a device-to-device copy).
// Parameters the f32 bit tricks cannot hold (an integer wider than 25 bits, a minifloat or log
// bias putting 2^emin below f32's normal range) run the f64 element functions, as on the CPU.
#include "cuda/check.h"
#include "cuda/stream.h"
#include "runtime/kernels/quant_elem.h"
#include "runtime/kernels/quant_scalar.h"

namespace mase::cuda {
namespace {

using quant::Kind;

constexpr int kThreads = 256;

// Which element function a launch runs (a template parameter, so each kernel is straight code).
enum class Op { integer, mase_integer, minifloat, log };

// Q(v), the arithmetic in T (float, or double for the rare parameters above).
template <Op op, class T, class P>
__device__ __forceinline__ float one(float v, const P& p) {
  const T x = static_cast<T>(v);
  T y;
  if constexpr (op == Op::integer) y = quant::integer_one(x, p);
  else if constexpr (op == Op::mase_integer) y = quant::mase_integer_one(x, p);
  else if constexpr (op == Op::minifloat) y = quant::minifloat_one(x, p);
  else y = quant::log_one(x, p);
  return static_cast<float>(y);
}

// out[i] = Q(inp[i]), one element per thread and turn.
template <Op op, class T, class P>
__global__ void map_kernel(float* out, const float* inp, int64_t n, P p) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride)
    out[i] = one<op, T>(inp[i], p);
}

// The same on four elements per thread and turn, as one 16-byte load and store (both pointers
// 16-byte aligned): a warp moves 512 bytes per instruction instead of 128, as PyTorch's
// vectorised elementwise kernels and our MXINT8 kernels do — fewer instructions in flight for
// the same bytes. (The scalar map measured 0.69–0.73 of the copy on an H100, PyTorch's fused
// integer quantizer 0.87–0.88: docs/performance.md.)
template <Op op, class T, class P>
__global__ void map4_kernel(float4* out, const float4* inp, int64_t n4, P p) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n4; i += stride) {
    const float4 v = inp[i];
    out[i] = make_float4(one<op, T>(v.x, p), one<op, T>(v.y, p), one<op, T>(v.z, p),
                         one<op, T>(v.w, p));
  }
}

// Enough blocks to fill the GPU several times over; the grid-stride loop takes the rest.
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 ? b : 65536);
}

// Aligned pointers take the float4 map for n / 4 · 4 elements and the scalar map for the
// last n % 4; others (a view that starts mid-vector) the scalar map for all.
template <Op op, class T, class P>
void launch(float* out, const float* inp, int64_t n, const P& p) {
  const bool aligned = (reinterpret_cast<uintptr_t>(out) | reinterpret_cast<uintptr_t>(inp)) % 16 == 0;
  const int64_t n4 = aligned ? n / 4 : 0, done = 4 * n4;
  if (n4 > 0) {
    const dim3 grid(blocks_for(n4));
    map4_kernel<op, T><<<grid, kThreads, 0, stream()>>>(reinterpret_cast<float4*>(out),
                                                       reinterpret_cast<const float4*>(inp), n4, p);
  }
  if (done < n) {
    const dim3 grid(blocks_for(n - done));
    map_kernel<op, T><<<grid, kThreads, 0, stream()>>>(out + done, inp + done, n - done, p);
  }
  MASE_CUDA_CHECK(cudaGetLastError());
}

}  // namespace

void scalar_forward(float* out, const float* inp, int64_t n, const quant::FormatParams& f) {
  if (n == 0) return;
  switch (f.kind) {
    case Kind::integer: {
      // MASE computes in the tensor's dtype: f32 here, as the CPU does for an f32 tensor
      if (f.mase_compat)
        return launch<Op::mase_integer, float>(out, inp, n, quant::integer_params<float>(f.width, f.frac_width));
      // f32 holds every k·2^−f exactly up to 25 bits (|k| ≤ 2^24); wider grids use f64
      if (f.width <= 25) return launch<Op::integer, float>(out, inp, n, quant::integer_params<float>(f.width, f.frac_width));
      return launch<Op::integer, double>(out, inp, n, quant::integer_params<double>(f.width, f.frac_width));
    }
    case Kind::log: {
      const quant::LogSpec s = quant::log_spec(f.width, f.exponent_bias);
      if (quant::log_f32_ok(s)) return launch<Op::log, float>(out, inp, n, quant::log_params<float>(s));
      return launch<Op::log, double>(out, inp, n, quant::log_params<double>(s));
    }
    default: {  // minifloat_ieee, minifloat_denorm (and MX elements, unscaled)
      const quant::MinifloatSpec s = quant::minifloat_spec(f);
      if (quant::minifloat_f32_ok(s))
        return launch<Op::minifloat, float>(out, inp, n, quant::minifloat_params<float>(s));
      return launch<Op::minifloat, double>(out, inp, n, quant::minifloat_params<double>(s));
    }
  }
}

}  // namespace mase::cuda
