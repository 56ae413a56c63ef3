// scripts/cuda_emu/convert_check.cpp — the CUDA dtype conversions (cuda/copy.cu: convert, fill,
// iota, copy_strided) and the fp32 → bf16 rounding in front of the bf16 GEMMs (cuda/
// matmul_bf16.cu), run on the CPU through emu.h (see run.sh), against the CPU's own functions:
// the same bits are required, not closeness. Part `convert`:
//   convert  every (from, to) pair of the five dtypes, on each type's edges — the limits of
//            i8, u8 and i32, one below and one above them, and the floating neighbours of those
//            (nextafter in the source type), ±0, ±NaN, ±inf, fractions (truncation toward
//            zero), values beyond f32's range from f64, all 256 i8 / u8 values — and random
//            ones; sizes 1, 257 and the whole list (not multiples of 32). Against
//            convert_value (what cpu::convert stores) and, float → integer, against the rule
//            restated (truncate, saturate, NaN → 0). Nothing written past n.
//   fill     every dtype, each f64 edge value (converted on the host: convert_value)
//   iota, copy_strided  every dtype / item size 1, 4, 8 (a transposed source into a strided
//            destination; the gaps stay untouched)
//   bf16     the emulated __float2bfloat16_rn (emu.h: cvt.rn.bf16.f32's rounding) against
//            cpu::bf16_from_f32 on all 2^32 patterns; to_bf16_kernel on every 65,537th pattern
//            (all 65,536 low halves, all high halves) plus the edges (ties either side of even,
//            carries into the next exponent and from the largest finite values into inf,
//            subnormals, ±0, ±inf, NaNs) on a small grid (its grid-stride loop) and through its
//            launcher (`converted`) on an unaligned view
//   gemm     gemm_bf16 and gemm_batched_bf16 (one-level, two-level and irregular batches) on an
//            emulated cuBLAS (below: it multiplies what it is given, as column-major cuBLAS
//            would) against a row-major GEMM of the CPU-rounded operands: catches spans that
//            miss an element, offsets in the wrong unit, swapped operands. Part `gemm-fast`
//            (run.sh runs it with MASE_BF16_GEMM=fast): the same GEMMs on the fp32 path; the
//            emulated cuBLAS rounds to nearest even there, which only a GPU run can confirm.
// NaN: CUDA's conversions give a canonical NaN (bf16: 0x7FFF, as cuda_bf16.h's own non-sm_80
// path does; the hardware's is not checked here), the CPU keeps the sign and payload (bf16:
// quieted). Both are NaN, and the bf16 values only feed GEMMs: a NaN is accepted for a NaN, and
// the bf16 sweep counts the patterns whose NaN bits differ.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "check.h"
#include "emu.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"  // BatchGrid, which cuda/cublas.h brings

// ---- cuBLAS as cuda/cublas.h gives it to matmul_bf16.cu, emulated on the host ----
enum cudaDataType_t { CUDA_R_32F = 0, CUDA_R_16BF = 14 };
enum cublasComputeType_t { CUBLAS_COMPUTE_32F = 68, CUBLAS_COMPUTE_32F_FAST_16BF = 75 };
enum cublasOperation_t { CUBLAS_OP_N = 0, CUBLAS_OP_T = 1 };
enum cublasStatus_t { CUBLAS_STATUS_SUCCESS = 0, CUBLAS_STATUS_INVALID_VALUE = 7 };
enum cublasGemmAlgo_t { CUBLAS_GEMM_DEFAULT = -1 };
typedef struct EmuCublasContext* cublasHandle_t;

namespace emu_blas {
int calls = 0;  // GEMM calls made (a check that none ran would be vacuous)

// element (r, c) of op(X), X column-major with leading dimension ld, as fp32: bf16 widened;
// fp32 rounded to bf16 when the compute type says cuBLAS rounds it (FAST_16BF)
float element(const void* X, cudaDataType_t t, cublasComputeType_t compute, cublasOperation_t op,
              long long r, long long c, int ld) {
  const long long i = op == CUBLAS_OP_N ? r + c * ld : c + r * ld;
  if (t == CUDA_R_16BF) return mase::cpu::f32_from_bf16(static_cast<const uint16_t*>(X)[i]);
  const float v = static_cast<const float*>(X)[i];
  return compute == CUBLAS_COMPUTE_32F_FAST_16BF ? mase::cpu::bf16_round(v) : v;
}

// C (m × n, column-major) = alpha·op(A)·op(B) + beta·C, products summed in fp32 in k order;
// C is not read when beta is 0 (cuBLAS's rule)
cublasStatus_t gemm(cublasOperation_t ta, cublasOperation_t tb, int m, int n, int k, float alpha,
                    const void* A, cudaDataType_t at, int lda, const void* B, cudaDataType_t bt,
                    int ldb, float beta, float* C, int ldc, cublasComputeType_t compute) {
  const bool bf16_in = at == CUDA_R_16BF && bt == CUDA_R_16BF && compute == CUBLAS_COMPUTE_32F;
  const bool fast = at == CUDA_R_32F && bt == CUDA_R_32F && compute == CUBLAS_COMPUTE_32F_FAST_16BF;
  if (!bf16_in && !fast) return CUBLAS_STATUS_INVALID_VALUE;
  ++calls;
  for (int c = 0; c < n; ++c)
    for (int r = 0; r < m; ++r) {
      float s = 0;
      for (int p = 0; p < k; ++p)
        s += element(A, at, compute, ta, r, p, lda) * element(B, bt, compute, tb, p, c, ldb);
      float& out = C[r + static_cast<long long>(c) * ldc];
      out = beta == 0 ? alpha * s : alpha * s + beta * out;
    }
  return CUBLAS_STATUS_SUCCESS;
}

size_t bytes_of(cudaDataType_t t) { return t == CUDA_R_16BF ? 2 : 4; }
}  // namespace emu_blas

cublasStatus_t cublasGemmStridedBatchedEx(cublasHandle_t, cublasOperation_t ta,
                                          cublasOperation_t tb, int m, int n, int k,
                                          const void* alpha, const void* A, cudaDataType_t at,
                                          int lda, long long sa, const void* B,
                                          cudaDataType_t bt, int ldb, long long sb,
                                          const void* beta, void* C, cudaDataType_t ct, int ldc,
                                          long long sc, int count, cublasComputeType_t compute,
                                          cublasGemmAlgo_t) {
  if (ct != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < count; ++i) {
    const cublasStatus_t s = emu_blas::gemm(
        ta, tb, m, n, k, *static_cast<const float*>(alpha),
        static_cast<const char*>(A) + i * sa * emu_blas::bytes_of(at), at, lda,
        static_cast<const char*>(B) + i * sb * emu_blas::bytes_of(bt), bt, ldb,
        *static_cast<const float*>(beta), static_cast<float*>(C) + i * sc, ldc, compute);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasGemmBatchedEx(cublasHandle_t, cublasOperation_t ta, cublasOperation_t tb,
                                   int m, int n, int k, const void* alpha, const void* const A[],
                                   cudaDataType_t at, int lda, const void* const B[],
                                   cudaDataType_t bt, int ldb, const void* beta, void* const C[],
                                   cudaDataType_t ct, int ldc, int count,
                                   cublasComputeType_t compute, cublasGemmAlgo_t) {
  if (ct != CUDA_R_32F) return CUBLAS_STATUS_INVALID_VALUE;
  for (int i = 0; i < count; ++i) {
    const cublasStatus_t s =
        emu_blas::gemm(ta, tb, m, n, k, *static_cast<const float*>(alpha), A[i], at, lda, B[i], bt,
                       ldb, *static_cast<const float*>(beta), static_cast<float*>(C[i]), ldc,
                       compute);
    if (s != CUBLAS_STATUS_SUCCESS) return s;
  }
  return CUBLAS_STATUS_SUCCESS;
}

namespace mase::cuda {
enum ScratchSlot : int { kScratchPointers = 0, kScratchBf16A = 1, kScratchBf16B = 2 };
inline cublasHandle_t cublas_handle() { return nullptr; }
inline void cublas_check(cublasStatus_t s, const char* what) {
  if (s != CUBLAS_STATUS_SUCCESS) throw std::runtime_error(std::string("emulated cuBLAS: ") + what);
}
inline cublasOperation_t cublas_op(bool t) { return t ? CUBLAS_OP_T : CUBLAS_OP_N; }
// A fresh buffer at every call, `bytes` long and 256 more, all 0xFF (NaN as bf16 and as fp32):
// a GEMM that reads past what the conversion wrote reads NaN, and a conversion that writes past
// `bytes` shows in the tail (scratch_tail_intact).
std::vector<unsigned char> scratch[8];
size_t scratch_bytes[8];
inline void* device_scratch(int slot, size_t bytes) {
  scratch[slot].assign(bytes + 256, 0xFF);
  scratch_bytes[slot] = bytes;
  return scratch[slot].data();
}
bool scratch_tail_intact(int slot) {
  for (size_t i = scratch_bytes[slot]; i < scratch[slot].size(); ++i)
    if (scratch[slot][i] != 0xFF) return false;
  return true;
}
// cuda/cublas.cu's pointer arrays, by the formula cuda/cublas.h documents, on the host
inline const void** grid_pointers(const void* a, size_t elem_a, const void* b, size_t elem_b,
                                  void* c, size_t elem_c, const BatchGrid& g, int64_t batch) {
  auto** ptrs = static_cast<const void**>(
      device_scratch(kScratchPointers, static_cast<size_t>(3 * batch) * sizeof(void*)));
  const char* base[3] = {static_cast<const char*>(a), static_cast<const char*>(b),
                         static_cast<const char*>(c)};
  const size_t elem[3] = {elem_a, elem_b, elem_c};
  for (int k = 0; k < 3; ++k)
    for (int64_t i = 0; i < batch; ++i)
      ptrs[k * batch + i] =
          base[k] + int64_t(elem[k]) * (g.first[k] + (i / g.inner) * g.outer_stride[k] +
                                        (i % g.inner) * g.inner_stride[k]);
  return ptrs;
}
}  // namespace mase::cuda

// the kernels themselves, as prep.py rewrote them
#include "cuda/copy.cu"
#include "cuda/matmul_bf16.cu"

using namespace mase;

namespace {

template <class T>
uint64_t bits(T v) {
  uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}

template <class T>
bool same(T a, T b) {
  if constexpr (std::is_floating_point_v<T>)
    if (std::isnan(a) && std::isnan(b)) return true;  // the GPU's NaN is canonical, see top
  return bits(a) == bits(b);
}

template <class T>
void expect_same(const std::string& what, T got, T want, long idx) {
  if (same(got, want)) return;
  if (failures < 30)
    std::printf("FAIL %s [%ld]: got %.17g (bits %llx), want %.17g (bits %llx)\n", what.c_str(),
                idx, double(got), (unsigned long long)bits(got), double(want),
                (unsigned long long)bits(want));
  ++failures;
}

template <class T>
const char* type_name() {
  return std::is_same_v<T, float>    ? "f32"
         : std::is_same_v<T, double> ? "f64"
         : std::is_same_v<T, int32_t> ? "i32"
         : std::is_same_v<T, int8_t> ? "i8"
                                     : "u8";
}

constexpr double kInf = std::numeric_limits<double>::infinity();

// ±0, ±NaN (and NaNs with payloads), ±inf, fractions, the f32 / f64 extremes and subnormals
std::vector<double> base_edges() {
  std::vector<double> e = {0.0,   -0.0,  0.5,   -0.5,  0.9,    -0.9,   1.0,    -1.0,  1.5,
                           -1.5,  2.7,   -2.7,  7.99,  -7.99,  1e20,   -1e20,  1e30,  -1e30,
                           1e300, -1e300, kInf, -kInf, 5e-324, -5e-324, 1e-45, -1e-45,
                           std::numeric_limits<double>::max(), -std::numeric_limits<double>::max(),
                           double(std::numeric_limits<float>::max()),
                           -double(std::numeric_limits<float>::max()),
                           std::numeric_limits<double>::quiet_NaN(),
                           -std::numeric_limits<double>::quiet_NaN()};
  uint64_t payload = 0x7ff8000000012345ull;  // a quiet NaN with a payload
  double p;
  std::memcpy(&p, &payload, 8);
  e.push_back(p);
  // each integer type's limits: min, max, max + 1, min - 1, and halves around them
  for (double lo : {-128.0, 0.0, -2147483648.0}) e.push_back(lo);
  for (double hi : {127.0, 255.0, 2147483647.0}) e.push_back(hi);
  for (double v : {-128.0, 0.0, -2147483648.0})
    for (double d : {-1.0, -0.5, 0.5, -0.9}) e.push_back(v + d);
  for (double v : {127.0, 255.0, 2147483647.0})
    for (double d : {1.0, 0.5, 0.9, 1.5, 2.0}) e.push_back(v + d);
  e.push_back(127.9);
  e.push_back(-128.9);
  e.push_back(255.9);
  e.push_back(2147483520.0);   // the largest f32 below 2^31
  e.push_back(-2147483904.0);  // the f32 below -2^31
  e.push_back(300.0);
  e.push_back(-300.0);
  e.push_back(256.0);
  e.push_back(1.0 + 0x1p-24);  // an f32 tie from f64 (rounds to even, 1)
  e.push_back(1.0 + 0x3p-24);  // an f32 tie (rounds to even, up)
  e.push_back(16777217.0);     // 2^24 + 1: an f32 tie
  return e;
}

// From's values: the edges (floating: in From, beyond f32's range as ±inf, each with its From
// neighbours below and above), then random ones up to about `n`
template <class From>
std::vector<From> source_values(size_t n, unsigned seed) {
  std::vector<From> v;
  std::mt19937 rng(seed);
  if constexpr (std::is_floating_point_v<From>) {
    for (double d : base_edges()) {
      From x = std::isfinite(d) && std::abs(d) > double(std::numeric_limits<From>::max())
                   ? From(d > 0 ? kInf : -kInf)
                   : static_cast<From>(d);
      v.push_back(x);
      if (std::isfinite(x)) {
        v.push_back(std::nextafter(x, From(-kInf)));
        v.push_back(std::nextafter(x, From(kInf)));
      }
    }
    std::uniform_real_distribution<double> U(-1, 1);
    std::uniform_int_distribution<int> E(-4, 34);
    while (v.size() < n) v.push_back(static_cast<From>(std::ldexp(U(rng), E(rng))));
  } else if constexpr (sizeof(From) == 1) {
    for (int i = 0; i < 256; ++i) v.push_back(static_cast<From>(i));
    while (v.size() < n) v.push_back(static_cast<From>(rng()));
  } else {
    for (int64_t x : {0LL, 1LL, -1LL, 127LL, 128LL, -128LL, -129LL, 255LL, 256LL, 300LL, -300LL,
                      65535LL, 65536LL, 16777216LL, 16777217LL, 16777219LL, -16777217LL,
                      2147483583LL, 2147483584LL, 2147483647LL, 2147483646LL, -2147483648LL,
                      -2147483647LL})
      v.push_back(static_cast<From>(x));
    while (v.size() < n) v.push_back(static_cast<From>(rng()));
  }
  return v;
}

// The rule of runtime/kernels/copy.h restated, for floating → integer: truncate toward zero,
// saturate, NaN → 0.
template <class To, class From>
To restated(From x) {
  if (std::isnan(x)) return To(0);
  const double t = std::trunc(double(x));
  if (t <= double(std::numeric_limits<To>::min())) return std::numeric_limits<To>::min();
  if (t >= double(std::numeric_limits<To>::max())) return std::numeric_limits<To>::max();
  return static_cast<To>(t);
}

int conversions = 0;  // values checked, all parts together

template <class To, class From>
void check_convert(const std::vector<From>& all, size_t n) {
  const int before = failures;
  const std::string name = std::string("convert ") + type_name<From>() + " -> " + type_name<To>();
  std::vector<To> dst(n + 16);
  std::memset(dst.data(), 0xA5, dst.size() * sizeof(To));
  const std::vector<To> fresh = dst;
  cuda::convert(dst.data(), dtype_of<To>(), all.data(), dtype_of<From>(), int64_t(n), 0);
  for (size_t i = 0; i < n; ++i) {
    const To want = convert_value<To>(all[i]);
    expect_same(name, dst[i], want, long(i));
    if constexpr (std::is_floating_point_v<From> && std::is_integral_v<To>)
      expect_same(name + " (the rule restated)", want, restated<To>(all[i]), long(i));
  }
  for (size_t i = n; i < dst.size(); ++i) expect_same(name + " past n", dst[i], fresh[i], long(i));
  conversions += int(n);
  if (n > 257 || failures > before)
    std::printf("%-24s n %4zu (and 1, 257): %d mismatches (bitwise)\n", name.c_str(), n,
                failures - before);
}

template <class From>
void convert_from(unsigned seed) {
  const std::vector<From> v = source_values<From>(1100, seed);
  auto each = [&](auto to) {
    using To = decltype(to);
    check_convert<To>(v, 1);
    check_convert<To>(v, 257);
    check_convert<To>(v, v.size());
  };
  each(float{});
  each(double{});
  each(int32_t{});
  each(int8_t{});
  each(uint8_t{});
}

template <class T>
void check_fill_iota() {
  const int before = failures;
  const std::string name = type_name<T>();
  std::vector<T> dst(37 + 8);
  for (double v : base_edges()) {
    std::memset(dst.data(), 0xA5, dst.size() * sizeof(T));
    const std::vector<T> fresh = dst;
    cuda::fill(dst.data(), dtype_of<T>(), v, 37, 0);
    for (size_t i = 0; i < 37; ++i) expect_same("fill " + name, dst[i], convert_value<T>(v), long(i));
    for (size_t i = 37; i < dst.size(); ++i) expect_same("fill past n", dst[i], fresh[i], long(i));
    if constexpr (std::is_integral_v<T>) expect_same("fill rule", convert_value<T>(v), restated<T>(v), 0);
    ++conversions;
  }
  std::vector<T> io(300 + 8, T(7));
  cuda::iota(io.data(), dtype_of<T>(), 300, 0);
  for (int64_t i = 0; i < 300; ++i) expect_same("iota " + name, io[size_t(i)], static_cast<T>(i), long(i));
  for (size_t i = 300; i < io.size(); ++i) expect_same("iota past n", io[i], T(7), long(i));
  std::printf("fill %-3s (%zu values), iota (300): %d mismatches (bitwise)\n", name.c_str(),
              base_edges().size(), failures - before);
}

// a (3, 5, 7) transposed source (strides 1, 3, 15) into every other element of a destination
template <class T>
void check_copy_strided() {
  const int before = failures;
  const Shape shape{3, 5, 7};
  const Strides src_strides{1, 3, 15}, dst_strides{70, 14, 2};
  std::vector<T> src(105), dst(210, T(99)), want(210, T(99));
  for (size_t i = 0; i < src.size(); ++i) src[i] = static_cast<T>(i * 3 + 1);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t b = 0; b < 5; ++b)
      for (int64_t c = 0; c < 7; ++c)
        want[size_t(a * 70 + b * 14 + c * 2)] = src[size_t(a + b * 3 + c * 15)];
  cuda::copy_strided(dst.data(), dst_strides, src.data(), src_strides, shape, sizeof(T), 0);
  for (size_t i = 0; i < dst.size(); ++i) expect_same("copy_strided", dst[i], want[i], long(i));
  std::printf("copy_strided item size %zu: %d mismatches (bitwise)\n", sizeof(T), failures - before);
}

float from_bits(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

// bf16: the emulated intrinsic on every pattern, then the kernel on a sweep and the edges
void check_bf16() {
  int before = failures;
  uint64_t nan_differ = 0;
  for (uint64_t p = 0; p < (1ull << 32); ++p) {
    const float x = from_bits(uint32_t(p));
    const uint16_t cpu = cpu::bf16_from_f32(x), gpu = __float2bfloat16_rn(x).__x;
    if (cpu == gpu) continue;
    if (std::isnan(x) && std::isnan(cpu::f32_from_bf16(cpu)) && gpu == 0x7FFF) {
      ++nan_differ;
      continue;
    }
    expect_same("bf16 rounding (intrinsic)", cpu::f32_from_bf16(gpu), cpu::f32_from_bf16(cpu),
                long(p));
  }
  std::printf("bf16 __float2bfloat16_rn, all 2^32 patterns: %d mismatches; %llu NaN patterns "
              "whose bits differ (CUDA 0x7FFF, the CPU keeps sign and payload)\n",
              failures - before, (unsigned long long)nan_differ);

  before = failures;
  std::vector<float> x;
  for (uint64_t k = 0; k < 65536; ++k) x.push_back(from_bits(uint32_t(k * 65537)));
  for (uint32_t high : {0x0000u, 0x0001u, 0x0002u, 0x007Fu, 0x0080u, 0x0081u, 0x3F80u, 0x3F81u,
                        0x7F7Eu, 0x7F7Fu, 0x7F80u, 0x7F81u, 0x7FBFu, 0x7FC0u, 0x7FFFu})
    for (uint32_t sign : {0u, 0x8000u})
      for (uint32_t low : {0x0000u, 0x0001u, 0x7FFFu, 0x8000u, 0x8001u, 0xFFFFu})
        x.push_back(from_bits((high | sign) << 16 | low));
  const int64_t n = int64_t(x.size());
  std::vector<__nv_bfloat16> out(size_t(n) + 8, __nv_bfloat16{0x1234});
  const dim3 grid(7), block(256);  // 1,792 threads: each takes ~37 elements of the stride loop
  emu::launch(grid, block, 0, [&] { cuda::to_bf16_kernel(out.data(), x.data(), n); });
  auto expect = [&](const std::string& what, const __nv_bfloat16& got, float in, long i) {
    const uint16_t want = cpu::bf16_from_f32(in);
    if (std::isnan(in) ? got.__x == 0x7FFF : got.__x == want) return;
    expect_same(what, cpu::f32_from_bf16(got.__x), cpu::f32_from_bf16(want), i);
  };
  for (int64_t i = 0; i < n; ++i) expect("to_bf16_kernel", out[size_t(i)], x[size_t(i)], long(i));
  for (size_t i = size_t(n); i < out.size(); ++i)
    if (out[i].__x != 0x1234) expect_same("to_bf16_kernel past n", out[i].__x, uint16_t(0x1234), long(i));
  conversions += int(n);
  std::printf("bf16 to_bf16_kernel, %ld patterns (every 65,537th and the edges), grid 7 x 256: "
              "%d mismatches (bitwise; NaN -> 0x7FFF)\n", long(n), failures - before);

  before = failures;  // the launcher, on a view one float into the sweep
  const int64_t m = 2049;
  const __nv_bfloat16* got = cuda::converted(cuda::kScratchBf16A, x.data() + 40001, m);
  for (int64_t i = 0; i < m; ++i) expect("converted", got[i], x[size_t(40001 + i)], long(i));
  if (!cuda::scratch_tail_intact(cuda::kScratchBf16A))
    expect_close("converted wrote past its span", 1, 0, 0, 0, 0);
  conversions += int(m);
  std::printf("bf16 converted (the launcher), n %ld on an unaligned view: %d mismatches\n",
              long(m), failures - before);
}

// ---- the bf16 GEMMs, on the emulated cuBLAS ----

std::vector<float> gemm_values(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-2, 2);
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = U(rng);
  for (size_t i = 0; i < n; i += 7) v[i] = 1.0f + 0x1p-8f * float(1 + 2 * (i % 4));  // bf16 ties
  return v;
}

// C (M × N, row-major, ldc) = alpha·op(A)·op(B) + beta·C on the CPU's bf16 rounding, products in
// fp32 (exact) summed in k order, as the emulated cuBLAS sums
void reference_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                    int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc) {
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float s = 0;
      for (int64_t p = 0; p < K; ++p)
        s += cpu::bf16_round(ta ? A[p * lda + i] : A[i * lda + p]) *
             cpu::bf16_round(tb ? B[j * ldb + p] : B[p * ldb + j]);
      float& out = C[i * ldc + j];
      out = beta == 0 ? alpha * s : alpha * s + beta * out;
    }
}

void compare_all(const std::string& name, const std::vector<float>& got,
                 const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i) expect_same(name, got[i], want[i], long(i));
}

void check_gemm() {
  const int before = failures, calls = emu_blas::calls;
  const int64_t M = 5, N = 7, K = 9;
  for (bool ta : {false, true})
    for (bool tb : {false, true})
      for (float beta : {0.5f, 0.0f}) {
        const int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 2, ldc = N + 1;
        const std::vector<float> A = gemm_values(size_t((ta ? K : M) * lda), 1 + ta);
        const std::vector<float> B = gemm_values(size_t((tb ? N : K) * ldb), 3 + tb);
        std::vector<float> C = gemm_values(size_t(M * ldc), 5);
        if (beta == 0) C.assign(C.size(), std::numeric_limits<float>::quiet_NaN());  // not read
        std::vector<float> want = C;
        cuda::gemm_bf16(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, C.data(), ldc);
        reference_gemm(ta, tb, M, N, K, 1.5f, A.data(), lda, B.data(), ldb, beta, want.data(), ldc);
        compare_all(std::string("gemm_bf16 ") + (ta ? "T" : "N") + (tb ? "T" : "N"), C, want);
      }
  // batches: one level (a shared B), two levels (heads in batches), irregular (runs)
  struct Layout {
    const char* name;
    bool ta, tb;
    std::vector<int64_t> a, b, c;
  };
  const std::vector<Layout> layouts = {
      {"one level", false, true, {0, 70, 140, 210}, {0, 0, 0, 0}, {0, 40, 80, 120}},
      {"two levels", true, false, {0, 70, 140, 500, 570, 640}, {0, 90, 180, 600, 690, 780},
       {0, 40, 80, 300, 340, 380}},
      {"irregular", false, false, {0, 70, 140, 400, 430}, {0, 90, 180, 270, 500},
       {0, 40, 80, 200, 400}},
  };
  for (const Layout& l : layouts) {
    const int64_t lda = (l.ta ? M : K) + 1, ldb = (l.tb ? K : N) + 1, ldc = N;
    const int64_t batch = int64_t(l.a.size());
    const std::vector<float> A = gemm_values(800, 7), B = gemm_values(1000, 8);
    std::vector<float> C = gemm_values(500, 9);
    std::vector<float> want = C;
    cuda::gemm_batched_bf16(l.ta, l.tb, M, N, K, 0.75f, A.data(), lda, B.data(), ldb, 1.0f,
                            C.data(), ldc, batch, l.a.data(), l.b.data(), l.c.data());
    for (int64_t i = 0; i < batch; ++i)
      reference_gemm(l.ta, l.tb, M, N, K, 0.75f, A.data() + l.a[size_t(i)], lda,
                     B.data() + l.b[size_t(i)], ldb, 1.0f, want.data() + l.c[size_t(i)], ldc);
    compare_all(std::string("gemm_batched_bf16 ") + l.name, C, want);
  }
  if (emu_blas::calls == calls) expect_close("gemm: no cuBLAS call made", 0, 1, 0, 0, 0);
  std::printf("bf16 GEMMs%s (8 plain, 3 batch layouts), %d emulated cuBLAS GEMMs: %d mismatches "
              "(bitwise)\n", cuda::fast_bf16() ? " MASE_BF16_GEMM=fast" : "",
              emu_blas::calls - calls, failures - before);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "convert";
  if (part == "gemm-fast") {
    if (!cuda::fast_bf16()) {
      std::printf("convert_check gemm-fast: run it with MASE_BF16_GEMM=fast\n");
      return 2;
    }
    check_gemm();
    std::printf("gemm-fast: %d mismatches in all\n", failures);
    return failures ? 1 : 0;
  }
  if (part != "convert") {
    std::printf("convert_check: unknown part %s\n", part.c_str());
    return 2;
  }
  convert_from<float>(11);
  convert_from<double>(12);
  convert_from<int32_t>(13);
  convert_from<int8_t>(14);
  convert_from<uint8_t>(15);
  check_fill_iota<float>();
  check_fill_iota<double>();
  check_fill_iota<int32_t>();
  check_fill_iota<int8_t>();
  check_fill_iota<uint8_t>();
  check_copy_strided<uint8_t>();
  check_copy_strided<uint32_t>();
  check_copy_strided<uint64_t>();
  check_bf16();
  if (cuda::fast_bf16()) std::printf("(MASE_BF16_GEMM=fast is set: the GEMMs run in gemm-fast)\n");
  else check_gemm();
  std::printf("convert: %d values converted through the kernels, %d mismatches in all\n",
              conversions, failures);
  return failures ? 1 : 0;
}
