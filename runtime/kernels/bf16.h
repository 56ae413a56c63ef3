// runtime/kernels/bf16.h — bfloat16 on the CPU: rounding, and GEMMs of bf16 operands with fp32
// accumulation, the arithmetic of `--precision bf16` (set_cpu_gemm_precision, runtime/
// parallel.h; cpu::gemm<float> in runtime/cpu/matmul.cpp picks the path: oneDNN's bf16 matmul,
// bf16_gemm below for y = x·Wᵀ, or rounded copies into an fp32 GEMM).
//
// bf16 is the top half of an fp32: 1 sign, 8 exponent, 7 mantissa bits — fp32's range with
// 8 significant bits. Rounding fp32 → bf16 to nearest, ties to even, on the bit pattern:
//   bits + 0x7FFF + (bit 16 of bits), then keep the top 16 bits
// (adding just under half an ulp of bf16, plus one when the kept part is odd, makes exact
// halves go to the even neighbour; a carry out of the mantissa moves into the exponent, which
// is also how the largest values round up to inf). NaN would be corrupted by that addition
// (it could carry into a different pattern, even inf), so NaN is kept NaN and made quiet.
//
// The GEMM: C (M, N) = A (M, K) · Bᵀ (+ bias), A and B bf16 (B (N, K), a Linear's W), products
// and sums in fp32. Paths, chosen at run time (runtime/cpu_features.h):
//   avx512_bf16  vdpbf16ps: 16 lanes × (a pair of bf16 products added to fp32) per instruction,
//                runtime/cpu/bf16_gemm_avx512.cpp (AMD Zen 4, Intel Cooper Lake / SPR)
//   emulated     widen bf16 to fp32 (exact: shift left by 16) and run the fp32 GEMM: the same
//                products of the same rounded operands, summed in fp32 (in another order than
//                vdpbf16ps, which adds products in pairs) — the reference everywhere.
// And where the CPU has AMX-BF16 tiles (Intel Sapphire Rapids and later), amx_bf16_gemm below:
// fp32 operands rounded while they are packed into tiles, runtime/cpu/bf16_amx.cpp.
// Read next: runtime/cpu/bf16.cpp.
#pragma once
#include <bit>
#include <cstdint>
#include <memory>

namespace mase::cpu {

inline uint16_t bf16_from_f32(float x) {
  const uint32_t bits = std::bit_cast<uint32_t>(x);
  if ((bits & 0x7fffffffu) > 0x7f800000u) return static_cast<uint16_t>((bits >> 16) | 0x0040u);
  return static_cast<uint16_t>((bits + 0x7fffu + ((bits >> 16) & 1u)) >> 16);
}
inline float f32_from_bf16(uint16_t b) { return std::bit_cast<float>(uint32_t(b) << 16); }
// x rounded to bf16 and back: the value a bf16 GEMM multiplies.
inline float bf16_round(float x) { return f32_from_bf16(bf16_from_f32(x)); }

void bf16_from_f32(uint16_t* out, const float* x, int64_t n);
void bf16_round(float* out, const float* x, int64_t n);  // out may equal x

enum class Bf16Isa : uint8_t { emulated, avx512_bf16 };
const char* bf16_isa_name(Bf16Isa isa);  // "emulated", "avx512-bf16"
bool bf16_isa_supported(Bf16Isa isa);
Bf16Isa bf16_isa_best();

// C (M, N), row stride ldc = A (M, K, row stride lda) · B (N, K, row stride ldb)ᵀ + bias[j]
// (bias may be null), bf16 operands, fp32 accumulation, on `isa` (ConfigError if this CPU lacks
// it).
void bf16_gemm(float* C, int64_t ldc, const uint16_t* A, int64_t lda, const uint16_t* B,
               int64_t ldb, int64_t M, int64_t N, int64_t K, const float* bias, Bf16Isa isa);

// C (M, N) = alpha · op(A) · op(B) + beta · C (+ bias[j]) (beta 0: C is not read) on AMX-BF16
// tiles: op(A) (M, K) and op(B) (K, N) are fp32, stored transposed when ta / tb, and rounded to
// bf16 as they are packed (the same bits as bf16_from_f32); products and sums in fp32. The
// bias (N, may be null) is added as each block of C is stored — a Linear's y = x·Wᵀ + b in one
// pass over y. gelu: C = gelu(…) as each block is stored (gelu_f32, the bits of
// cpu::bias_gelu_forward on the bias-free product and the bias where K ≤ 1,024, one block of
// k; deeper, the bits of gelu of the gemm_bias result) — BERT's FFN for inference
// (cpu::gemm_bias_gelu). ConfigError where amx_bf16_available() is false.
bool amx_bf16_available();
// whether cpu::gemm<float> under --precision bf16 hands its GEMMs of at least kAmxMinWork
// multiply-adds to amx_bf16_gemm (where available; on by default): mase-bench --amx on|off
void set_amx_bf16_enabled(bool on);
bool amx_bf16_active();
constexpr double kAmxMinWork = 65536;
void amx_bf16_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, float alpha, const float* A,
                   int64_t lda, const float* B, int64_t ldb, float beta, float* C, int64_t ldc,
                   const float* bias = nullptr, bool gelu = false);

// A Linear's weight W (out, in) packed ONCE into the tiles amx_bf16_gemm packs op(B) = Wᵀ into
// on every call — for frozen inference (autograd/frozen.h), where the weights do not change.
// amx_bf16_linear then equals amx_bf16_gemm(false, true, rows, out, in, 1, x, ldx, W, ldw, 0,
// y, ldy, bias) bit for bit, minus the packing. Half the bytes of the fp32 weight.
struct AmxBf16Weights;
std::shared_ptr<const AmxBf16Weights> amx_bf16_pack(const float* W, int64_t ldw, int64_t out, int64_t in);
size_t amx_bf16_bytes(const AmxBf16Weights& w);
int64_t amx_bf16_out(const AmxBf16Weights& w);  // the weight's (out, in)
int64_t amx_bf16_in(const AmxBf16Weights& w);
// y (rows, out; row stride ldy) = x (rows, in; row stride ldx) · Wᵀ (+ bias), gelu(…) of it
// when asked (as amx_bf16_gemm)
void amx_bf16_linear(float* y, int64_t ldy, const float* x, int64_t ldx, int64_t rows,
                     const AmxBf16Weights& w, const float* bias, bool gelu = false);

}  // namespace mase::cpu
