// runtime/cpu/bf16_gemm_amx.cpp — the AMX-BF16 tile kernel: one chunk of rows of C from
// operands packed into the tiles' layouts (runtime/cpu/bf16_pack_avx512.cpp packs them).
// Compiled with -mamx-tile -mamx-bf16 (runtime/CMakeLists.txt) and called only where
// runtime/cpu_features.h found AMX-BF16 and Linux granted the tile state (Intel Sapphire Rapids
// and later); elsewhere its tests say skipped. Read runtime/cpu/bf16_gemm_avx512.cpp first: the
// same arithmetic, 16 lanes at a time — and the same chunk on those layouts with vdpbf16ps,
// which is what a CPU with AVX512-BF16 and no AMX runs instead.
//
// AMX in one paragraph. A core has 8 tile registers of up to 16 rows × 64 bytes, and one
// instruction, tdpbf16ps C, A, B, does C (16 × 16 fp32) += A (16 × 32 bf16) · B (32 × 16 bf16)
// — 8,192 multiply-adds, where vdpbf16ps does 32. B must be stored in pairs of k (row r of the
// tile holds k = 2r and 2r + 1 of each of the 16 columns: runtime/cpu/bf16_amx_tile.h), which
// is why both operands are packed first. The shape of each tile is set once by a 64-byte
// configuration (ldtilecfg); tileloadd / tilestored move tiles from and to memory with a stride.
// Our kernel holds a 32 × 32 block of C in tiles 0–3, loads two row tiles of A (4, 5) and two
// column tiles of B (6, 7) per 32 of k, and multiplies all four pairs: 4 products per 4 loads.
#include <immintrin.h>

#include "runtime/cpu/bf16_amx_tile.h"

namespace mase::cpu {
namespace {

// the first n of 16 lanes (none when n ≤ 0)
inline __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

inline int64_t round_up(int64_t x, int64_t m) { return (x + m - 1) / m * m; }

// The tile shapes: all 8 tiles 16 rows × 64 bytes (palette 1, the only one there is).
struct alignas(64) TileConfig {
  uint8_t palette = 1, start_row = 0;
  uint8_t reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

}  // namespace

void amx_bf16_chunk(const AmxChunk& t) {
  TileConfig cfg;
  for (int i = 0; i < 8; ++i) cfg.colsb[i] = 64, cfg.rows[i] = 16;
  _tile_loadconfig(&cfg);
  const int64_t tiles = t.kp / kAmxK, rows_pad = round_up(t.rows, 32);
  const bool plain = t.alpha == 1.0f && t.beta == 0.0f && !t.bias && !t.gelu;
  alignas(64) float s[32 * 32];  // the block of C, for the edges and for alpha / beta
  alignas(64) float g[32 * 32];  // ... and gelu of it
  for (int64_t j = t.j0; j < t.j1; j += 32) {
    const uint16_t* b0 = t.b + (j / 16) * t.kp_b * 16 + t.kb0 * 512;
    const uint16_t* b1 = j + 16 < t.N ? b0 + t.kp_b * 16 : b0;  // no second block: recompute the first
    for (int64_t i = 0; i < rows_pad; i += 32) {
      const uint16_t* a0 = t.a + i * t.kp;  // rows i .. i + 15: tiles of 1 KB, all of k
      const uint16_t* a1 = a0 + 16 * t.kp;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t kb = 0; kb < tiles; ++kb) {
        // the A tiles two steps ahead into L1 (B's pair stays there across the rows): tile
        // loads wait for their data, and the hardware prefetchers do not see them coming
        for (int l = 0; l < 16; ++l) {
          _mm_prefetch(reinterpret_cast<const char*>(a0 + (kb + 2) * 512) + 64 * l, _MM_HINT_T0);
          _mm_prefetch(reinterpret_cast<const char*>(a1 + (kb + 2) * 512) + 64 * l, _MM_HINT_T0);
        }
        _tile_loadd(4, a0 + kb * 512, 64);
        _tile_loadd(5, a1 + kb * 512, 64);
        _tile_loadd(6, b0 + kb * 512, 64);
        _tile_loadd(7, b1 + kb * 512, 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      float* c = t.c + i * t.ldc + j;
      if (plain && i + 32 <= t.rows && j + 32 <= t.N) {  // the whole block is C's: store in place
        _tile_stored(0, c, t.ldc * 4);
        _tile_stored(1, c + 16, t.ldc * 4);
        _tile_stored(2, c + 16 * t.ldc, t.ldc * 4);
        _tile_stored(3, c + 16 * t.ldc + 16, t.ldc * 4);
        continue;
      }
      _tile_stored(0, s, 128);
      _tile_stored(1, s + 16, 128);
      _tile_stored(2, s + 16 * 32, 128);
      _tile_stored(3, s + 16 * 32 + 16, 128);
      const int64_t rows = t.rows - i < 32 ? t.rows - i : 32;
      const __m512 alpha = _mm512_set1_ps(t.alpha), beta = _mm512_set1_ps(t.beta);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t h = 0; h < 32; h += 16) {
          const __mmask16 m = first(t.N - j - h);  // 0 past N
          __m512 v = _mm512_mul_ps(alpha, _mm512_load_ps(s + r * 32 + h));
          if (t.beta != 0.0f) v = _mm512_fmadd_ps(beta, _mm512_maskz_loadu_ps(m, c + r * t.ldc + h), v);
          if (t.bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, t.bias + j + h));
          if (t.gelu) _mm512_store_ps(s + r * 32 + h, v);  // GELU below, a block at a time
          else _mm512_mask_storeu_ps(c + r * t.ldc + h, m, v);
        }
      if (t.gelu) {  // the block still in L1: no pass of its own over C (64 MB a layer, bert-small)
        gelu_f32_serial(g, s, rows * 32);
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t h = 0; h < 32; h += 16)
            _mm512_mask_storeu_ps(c + r * t.ldc + h, first(t.N - j - h), _mm512_load_ps(g + r * 32 + h));
      }
    }
  }
  _tile_release();
}

}  // namespace mase::cpu
