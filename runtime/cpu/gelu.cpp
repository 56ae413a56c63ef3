// runtime/cpu/gelu.cpp — exact GELU and fused bias + GELU, parallel over chunks of elements or
// rows (see gelu.h and autograd/ops/gelu.cpp).
//
// f32 uses gelu_f32 / gelu_grad_f32 of fast_math.h: branch-free arithmetic that the loops
// below compile to AVX2 (8 elements an instruction), ~1 ns an element on one core, where the
// libm erfc and exp calls it replaced (scalar: glibc's vector versions need -ffast-math) took
// ~20 ns and made GELU the slowest kernel of a BERT step. f64 exists for gradient checks and
// keeps libm: Φ(x) = ½·erfc(−x/√2), which unlike ½(1 + erf(x/√2)) keeps the tail for x ≪ 0.
// The fused backward adds dbias = Σ_rows dinp while the row is in cache (rowwise.h), where
// the unfused graph reads the whole (rows, cols) gradient again in a separate sum.
//
// GELU is compute-bound (an exp, a division and a polynomial per element; with the earlier
// two exps ~0.25 of the memcpy bandwidth on AVX2), so the f32 loops exist twice: as the
// build's x86-64-v3 compiles them (AVX2, 8 floats an instruction) and inside functions marked __attribute__((target("avx512..."))),
// which the compiler vectorises 16 wide, called only where cpu_features() found AVX-512.
// Only the marked functions are compiled for AVX-512 — fast_math.h's functions are
// always_inline and are inlined into them — so no shared out-of-line code can carry AVX-512
// instructions to an AVX2 machine (the hazard runtime/cpu/int8_tile.h describes). Both compute
// each element with the same IEEE operations in the same order (explicit fma, no fast-math),
// so they give the same bits (tests/runtime/test_gelu_isa.cpp).
#include "runtime/kernels/gelu.h"

#include <cmath>
#include <type_traits>

#include "runtime/cpu/bf16_amx_tile.h"  // gelu_f32_serial, the AMX GEMM's GELU
#include "runtime/cpu/fast_math.h"
#include "runtime/cpu_features.h"
#include "runtime/cpu/rowwise.h"

namespace mase::cpu {
namespace {

constexpr double kInvSqrt2 = 0.70710678118654752440;     // 1/√2
constexpr double kInvSqrt2Pi = 0.39894228040143267794;   // 1/√(2π)

template <class T>
MASE_VEC_INLINE T gelu_of(T x) {  // fast_math.h: must inline to vectorise
  if constexpr (std::is_same_v<T, float>) return gelu_f32(x);
  else return x * T(0.5) * std::erfc(-x * T(kInvSqrt2));
}

template <class T>
MASE_VEC_INLINE T gelu_grad_of(T x) {  // Φ(x) + x·φ(x)
  if constexpr (std::is_same_v<T, float>) {
    return gelu_grad_f32(x);
  } else {
    const T cdf = T(0.5) * std::erfc(-x * T(kInvSqrt2));
    const T pdf = T(kInvSqrt2Pi) * std::exp(T(-0.5) * x * x);
    return cdf + x * pdf;
  }
}

// ---- the f32 loops, for the build's ISA and for AVX-512 ----
// y[i] = gelu(x[i] + b[i]) (b null: no bias), and dx[i] = dy[i]·gelu'(x[i] + b[i]) with
// acc[i] += dx[i] (acc null: no sum)
MASE_VEC_INLINE void gelu_loop(float* __restrict y, const float* __restrict x,
                               const float* __restrict b, int64_t n) {
  if (b) {
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_f32(x[i] + b[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = gelu_f32(x[i]);
  }
}
MASE_VEC_INLINE void gelu_grad_loop(float* __restrict dx, double* __restrict acc,
                                    const float* __restrict dy, const float* __restrict x,
                                    const float* __restrict b, int64_t n) {
  if (acc) {
    for (int64_t i = 0; i < n; ++i) {
      const float d = dy[i] * gelu_grad_f32(x[i] + b[i]);
      dx[i] = d;
      acc[i] += double(d);
    }
  } else {
    for (int64_t i = 0; i < n; ++i) dx[i] = dy[i] * gelu_grad_f32(x[i]);
  }
}
// The same sums in place, d = dy on entry and dx on return (bias_gelu_backward with dinp ==
// dout): one pointer where the loop above has two, since __restrict promises they never meet.
MASE_VEC_INLINE void gelu_grad_loop_inplace(float* __restrict d, double* __restrict acc,
                                            const float* __restrict x,
                                            const float* __restrict b, int64_t n) {
  for (int64_t i = 0; i < n; ++i) {
    const float v = d[i] * gelu_grad_f32(x[i] + b[i]);
    d[i] = v;
    acc[i] += double(v);
  }
}

#define MASE_AVX512 __attribute__((target("avx512f,avx512dq,avx512bw,avx512vl,prefer-vector-width=512")))
MASE_AVX512 void gelu_loop_avx512(float* y, const float* x, const float* b, int64_t n) {
  gelu_loop(y, x, b, n);
}
MASE_AVX512 void gelu_grad_loop_avx512(float* dx, double* acc, const float* dy, const float* x,
                                       const float* b, int64_t n) {
  if (dx == dy && acc) gelu_grad_loop_inplace(dx, acc, x, b, n);  // bias_gelu in place
  else gelu_grad_loop(dx, acc, dy, x, b, n);
}
#undef MASE_AVX512
void gelu_loop_base(float* y, const float* x, const float* b, int64_t n) { gelu_loop(y, x, b, n); }
void gelu_grad_loop_base(float* dx, double* acc, const float* dy, const float* x,
                         const float* b, int64_t n) {
  if (dx == dy && acc) gelu_grad_loop_inplace(dx, acc, x, b, n);  // bias_gelu in place
  else gelu_grad_loop(dx, acc, dy, x, b, n);
}

bool use_avx512() {
  static const bool on = cpu_features().avx512();
  return on;
}
void gelu_f32_span(float* y, const float* x, const float* b, int64_t n) {
  (use_avx512() ? gelu_loop_avx512 : gelu_loop_base)(y, x, b, n);
}
void gelu_grad_f32_span(float* dx, double* acc, const float* dy, const float* x, const float* b,
                        int64_t n) {
  (use_avx512() ? gelu_grad_loop_avx512 : gelu_grad_loop_base)(dx, acc, dy, x, b, n);
}

}  // namespace

void gelu_f32_serial(float* y, const float* x, int64_t n) { gelu_f32_span(y, x, nullptr, n); }

template <class T>
void gelu_forward(T* out, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float>) {
      gelu_f32_span(out + lo, x + lo, nullptr, hi - lo);
    } else {
      for (int64_t i = lo; i < hi; ++i) out[i] = gelu_of(x[i]);
    }
  });
}

template <class T>
void gelu_backward(T* dx, const T* dy, const T* x, int64_t n) {
  parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) {
    if constexpr (std::is_same_v<T, float>) {
      gelu_grad_f32_span(dx + lo, nullptr, dy + lo, x + lo, nullptr, hi - lo);
    } else {
      for (int64_t i = lo; i < hi; ++i) dx[i] = dy[i] * gelu_grad_of(x[i]);
    }
  });
}

template <class T>
void bias_gelu_forward(T* out, const T* inp, const T* bias, int64_t rows, int64_t cols) {
  for_each_row(rows, cols, [&](int64_t r) {
    const T* __restrict x = inp + r * cols;
    T* __restrict y = out + r * cols;
    if constexpr (std::is_same_v<T, float>) {
      gelu_f32_span(y, x, bias, cols);
    } else {
      for (int64_t c = 0; c < cols; ++c) y[c] = gelu_of(x[c] + bias[c]);
    }
  });
}

template <class T>
void bias_gelu_backward(T* dinp, T* dbias, const T* dout, const T* inp, const T* bias,
                        int64_t rows, int64_t cols) {
  rows_with_column_sums(
      rows, cols, cols,
      [&](int64_t r, double* __restrict acc) {
        const T* x = inp + r * cols;  // dx may be dy (in place): no __restrict on either
        const T* dy = dout + r * cols;
        T* dx = dinp + r * cols;
        if constexpr (std::is_same_v<T, float>) {
          gelu_grad_f32_span(dx, acc, dy, x, bias, cols);
          return;
        }
        for (int64_t c = 0; c < cols; ++c) {
          const T d = dy[c] * gelu_grad_of(x[c] + bias[c]);  // dinp = dout·gelu'(inp + bias)
          dx[c] = d;
          acc[c] += double(d);  // dbias = Σ_rows dinp
        }
      },
      [&](int64_t c, double total) { dbias[c] = static_cast<T>(total); });
}

template void gelu_forward<float>(float*, const float*, int64_t);
template void gelu_forward<double>(double*, const double*, int64_t);
template void gelu_backward<float>(float*, const float*, const float*, int64_t);
template void gelu_backward<double>(double*, const double*, const double*, int64_t);
template void bias_gelu_forward<float>(float*, const float*, const float*, int64_t, int64_t);
template void bias_gelu_forward<double>(double*, const double*, const double*, int64_t, int64_t);
template void bias_gelu_backward<float>(float*, float*, const float*, const float*, const float*,
                                        int64_t, int64_t);
template void bias_gelu_backward<double>(double*, double*, const double*, const double*,
                                         const double*, int64_t, int64_t);

}  // namespace mase::cpu
