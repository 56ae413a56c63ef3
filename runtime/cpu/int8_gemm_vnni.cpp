// runtime/cpu/int8_gemm_vnni.cpp — the AVX512-VNNI microkernel of the int8 GEMM: a 6 × 32
// tile of C, all of K, with vpdpbusd. Compiled with -mavx512vnni (runtime/CMakeLists.txt) and
// called only on CPUs that have it (runtime/cpu/int8_gemm.cpp). Read int8_tile.h first.
//
// One vpdpbusd does, in each of 16 int32 lanes, acc += a0·b0 + a1·b1 + a2·b2 + a3·b3: four
// bytes of one register times four bytes of the other, summed into 32 bits without overflow or
// saturation (a u8 times an s8 is at most 255·128 in magnitude, four of them fit easily). So
// per instruction 64 multiply-adds — 4× an fp32 FMA's 16 — which is where int8 gets its speed.
//
// The register picture, per group of 4 k-values (MR = 6, NR = 32):
//   b0, b1      one 64-byte load each: 16 columns × 4 k-values of the packed B panel
//   a           4 bytes of one row of A (k .. k+3) broadcast to all 16 lanes
//   s[i][0..1]  12 int32 accumulators: row i × columns 0–15 and 16–31
// 2 loads of B and 6 broadcasts feed 12 vpdpbusd: the loads are amortised over the rows, the
// broadcasts over the columns. Each tile reads A and B once from L1/L2 for 6·32 outputs.
//
// The u8 × s8 problem, and the offset trick. vpdpbusd multiplies an UNSIGNED byte (first
// operand) by a signed one. Our activation codes a are signed, −128..127. Feed it u = a + 128
// instead (0..255: flipping the top bit, a ^ 0x80, which the driver does once while packing A,
// or the activation quantizer as it writes the codes: int8_gemm.h's offset codes):
//   Σ_k u_k·b_k = Σ_k (a_k + 128)·b_k = Σ_k a_k·b_k + 128·Σ_k b_k
// The last term depends only on B, which is fixed: the packer stores comp = 128·Σ_k b_k per
// column and block, and every block's accumulators start at −comp instead of 0. After the
// block they hold exactly Σ a·b. (oneDNN and FBGEMM do the same; the other classic fix, the
// sign trick of int8_gemm_avx2.cpp, costs two more instructions per product here.)
//
// Then, per block (scaled mode): s → fp32, times sa[i]·sb[j], added into fp32 accumulators f —
// the order of int8_gemm.h's formula, so the result equals the scalar reference bit for bit.
// That block epilogue (a copy, cvt, mul, fma per accumulator every 8 vpdpbusd) is the price of
// MXINT8's per-32 scales: 4 instructions per 8 on the same two ports, so at most 2/3 of the
// int32 mode's rate; measured on BERT's shapes, 0.72–0.94× the one-scale-per-row int8 product
// (docs/performance.md, "int8"). Both reach 11–56% of vpdpbusd's register-only peak
// (mase-bench's int8/vnni_peak); the rest is loads, packing A, and the tile's own overhead.
// What the compiler does with this file matters as much as the instruction choice: see
// dot_groups below (a rolled loop ran at half the speed).
#include <immintrin.h>

#include "runtime/cpu/int8_tile.h"
#include "runtime/cpu/tile_rows.h"

// GCC 12 warns that _mm512_cvtepi32_ps's own _mm512_undefined_ps() "may be used uninitialized":
// a known false positive of the intrinsic header, not of this code.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif

namespace mase::cpu {
namespace {

inline int32_t load32(const uint8_t* p) {
  int32_t v;
  __builtin_memcpy(&v, p, 4);  // the 4 bytes of one group, any alignment
  return v;
}

// `groups` groups of 4 k-values into the int32 accumulators s. With G a compile-time constant
// (8: MXINT8's blocks of 32, or the int32 mode's K in steps of 32) the loop unrolls and every s
// stays in its register. Rolled, with a run-time count, it ran at half the speed: in the
// scaled kernel GCC rotated the accumulators through register copies (16 vmovdqa per 8
// vpdpbusd, on the same two ports); in the int32 kernel the loop was clean and still reached
// only 50 of the 128 multiply-adds per cycle that 8 unrolled groups reach 103 of (a standalone
// timing of the tile on L1-resident data, this Cascade Lake). G = 0: the count known only at
// run time (the last, shorter block; the int32 mode's last < 8 groups).
template <int MR, int G>
inline void dot_groups(__m512i (&s)[MR][2], const uint8_t* a, int64_t lda, const int8_t*& b,
                       int64_t groups) {
  const int64_t n = G > 0 ? G : groups;
  for (int64_t g = 0; g < n; ++g, b += 128) {
    const __m512i b0 = _mm512_loadu_si512(b), b1 = _mm512_loadu_si512(b + 64);
    for (int i = 0; i < MR; ++i) {
      const __m512i av = _mm512_set1_epi32(load32(a + i * lda + 4 * g));
      s[i][0] = _mm512_dpbusd_epi32(s[i][0], av, b0);
      s[i][1] = _mm512_dpbusd_epi32(s[i][1], av, b1);
    }
  }
}

// Any number of groups: eight at a time unrolled, then the rest rolled.
template <int MR>
inline void dot_any(__m512i (&s)[MR][2], const uint8_t* a, int64_t lda, const int8_t*& b,
                    int64_t groups) {
  int64_t g = 0;
  for (; g + 8 <= groups; g += 8) dot_groups<MR, 8>(s, a + 4 * g, lda, b, 8);
  dot_groups<MR, 0>(s, a + 4 * g, lda, b, groups - g);
}

template <int MR>
inline void store_int32(const Int8Tile& t, const __m512i (&s)[MR][2], __mmask16 m0, __mmask16 m1) {
  for (int i = 0; i < MR; ++i) {
    _mm512_mask_storeu_epi32(t.ci + i * t.ldc, m0, s[i][0]);
    _mm512_mask_storeu_epi32(t.ci + i * t.ldc + 16, m1, s[i][1]);
  }
}

// int32 mode: one block, all of K; the accumulators start at −128·Σb (the offset trick).
template <int MR>
void tile_int32(const Int8Tile& t, __mmask16 m0, __mmask16 m1) {
  const __m512i c0 = _mm512_loadu_si512(t.comp), c1 = _mm512_loadu_si512(t.comp + 16);
  __m512i s[MR][2];
  for (int i = 0; i < MR; ++i) {
    s[i][0] = _mm512_sub_epi32(_mm512_setzero_si512(), c0);
    s[i][1] = _mm512_sub_epi32(_mm512_setzero_si512(), c1);
  }
  const int8_t* b = t.b;
  dot_any<MR>(s, t.a, t.lda, b, t.gl);
  store_int32<MR>(t, s, m0, m1);
}

// scaled mode: per block, s from −128·Σb through the block's products, then f += float(s)·(sa·sb).
// Uniform: every block is 8 groups (MXINT8 with K a multiple of 32, i.e. every BERT shape), so
// the block loop holds only the unrolled path; the general instance also handles a short last
// block. Two instances because one body with both paths needs more registers than there are:
// at MR = 6 GCC then spilled the fp32 sums to the stack around every block's FMAs.
template <int MR, bool Uniform>
void tile_scaled(const Int8Tile& t, __mmask16 m0, __mmask16 m1) {
  __m512 f[MR][2];
  for (int i = 0; i < MR; ++i) {  // 0, or the sums of the earlier slices of K
    f[i][0] = t.accumulate ? _mm512_maskz_loadu_ps(m0, t.c + i * t.ldc) : _mm512_setzero_ps();
    f[i][1] = t.accumulate ? _mm512_maskz_loadu_ps(m1, t.c + i * t.ldc + 16) : _mm512_setzero_ps();
  }
  const int8_t* b = t.b;
  for (int64_t blk = 0; blk < t.nblocks; ++blk) {
    const uint8_t* a = t.a + blk * 4 * t.gb;  // packed A: each block padded to gb groups
    // start at −128·Σb (the offset trick): two negations per block, then plain copies
    const __m512i nc0 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(t.comp + blk * 32));
    const __m512i nc1 = _mm512_sub_epi32(_mm512_setzero_si512(), _mm512_loadu_si512(t.comp + blk * 32 + 16));
    __m512i s[MR][2];
    for (int i = 0; i < MR; ++i) {
      s[i][0] = nc0;
      s[i][1] = nc1;
    }
    if constexpr (Uniform) {
      dot_groups<MR, 8>(s, a, t.lda, b, 8);  // MXINT8: 32 = 8 groups of 4
    } else {
      dot_any<MR>(s, a, t.lda, b, blk + 1 < t.nblocks ? t.gb : t.gl);
    }
    const __m512 sb0 = _mm512_loadu_ps(t.sb + blk * 32), sb1 = _mm512_loadu_ps(t.sb + blk * 32 + 16);
    for (int i = 0; i < MR; ++i) {
      const __m512 sa = _mm512_set1_ps(t.sa[i * t.lds + blk]);
      f[i][0] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i][0]), _mm512_mul_ps(sb0, sa), f[i][0]);
      f[i][1] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(s[i][1]), _mm512_mul_ps(sb1, sa), f[i][1]);
    }
  }
  const __m512 bias0 = t.bias ? _mm512_maskz_loadu_ps(m0, t.bias) : _mm512_setzero_ps();
  const __m512 bias1 = t.bias ? _mm512_maskz_loadu_ps(m1, t.bias + 16) : _mm512_setzero_ps();
  for (int i = 0; i < MR; ++i) {
    __m512 v0 = f[i][0], v1 = f[i][1];
    if (t.bias) {
      v0 = _mm512_add_ps(v0, bias0);
      v1 = _mm512_add_ps(v1, bias1);
    }
    _mm512_mask_storeu_ps(t.c + i * t.ldc, m0, v0);
    _mm512_mask_storeu_ps(t.c + i * t.ldc + 16, m1, v1);
  }
}

}  // namespace

void int8_tile_vnni(const Int8Tile& t) {
  const int nv0 = t.nv < 16 ? t.nv : 16, nv1 = t.nv > 16 ? t.nv - 16 : 0;
  const __mmask16 m0 = nv0 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv0) - 1);
  const __mmask16 m1 = nv1 == 16 ? __mmask16(0xFFFF) : __mmask16((1u << nv1) - 1);
  const bool uniform = t.gb == 8 && t.gl == 8;
  // t.mr rows (a strip of the panel, any count): 6 at a time, then the rest
  auto tile_rows = [&](const Int8Tile& r) {
    with_rows<kVnniMR>(r.mr, [&](auto mr) {
      constexpr int MR = decltype(mr)::value;
      if (!r.sa) tile_int32<MR>(r, m0, m1);
      else if (uniform) tile_scaled<MR, true>(r, m0, m1);
      else tile_scaled<MR, false>(r, m0, m1);
    });
  };
  Int8Tile r = t;
  for (int i0 = 0; i0 < t.mr; i0 += kVnniMR) {
    r.mr = t.mr - i0 < kVnniMR ? t.mr - i0 : kVnniMR;
    r.a = t.a + i0 * t.lda;
    if (t.sa) r.sa = t.sa + i0 * t.lds;
    if (t.c) r.c = t.c + i0 * t.ldc;
    if (t.ci) r.ci = t.ci + i0 * t.ldc;
    tile_rows(r);
  }
}

}  // namespace mase::cpu
