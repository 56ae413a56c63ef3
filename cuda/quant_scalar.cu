// cuda/quant_scalar.cu — the scalar formats on the GPU (twin of runtime/cpu/quant_scalar.cpp):
// integer, minifloat_ieee, minifloat_denorm, log, and the MX float elements unscaled.
//
// One thread per element, each running the element function of runtime/kernels/quant_elem.h
// — the very lines the CPU loop runs — with parameters built once on the host. The kernel is
// a plain grid-stride map: every element is read once and written once, coalesced, so it runs
// at the copy bandwidth (mase-bench --suite gpu-quant pairs it with a device-to-device copy).
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

// out[i] = Q(inp[i]), the arithmetic in T (float, or double for the rare parameters above).
template <Op op, class T, class P>
__global__ void map_kernel(float* out, const float* inp, int64_t n, P p) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n; i += stride) {
    const T x = static_cast<T>(inp[i]);
    T y;
    if constexpr (op == Op::integer) y = quant::integer_one(x, p);
    else if constexpr (op == Op::mase_integer) y = quant::mase_integer_one(x, p);
    else if constexpr (op == Op::minifloat) y = quant::minifloat_one(x, p);
    else y = quant::log_one(x, p);
    out[i] = static_cast<float>(y);
  }
}

// Enough blocks to fill the GPU several times over; the grid-stride loop takes the rest.
unsigned blocks_for(int64_t n) {
  const int64_t b = (n + kThreads - 1) / kThreads;
  return static_cast<unsigned>(b < 65536 ? b : 65536);
}

template <Op op, class T, class P>
void launch(float* out, const float* inp, int64_t n, const P& p) {
  map_kernel<op, T><<<blocks_for(n), kThreads, 0, stream()>>>(out, inp, n, p);
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
