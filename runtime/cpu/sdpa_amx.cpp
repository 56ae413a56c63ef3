// runtime/cpu/sdpa_amx.cpp — AmxAttention and AmxAttentionGrad (sdpa_amx.h): packing a head once,
// then each tile product as one chunk — on AMX tiles (runtime/cpu/bf16_gemm_amx.cpp), or with
// vdpbf16ps on the same packed operands where the CPU has AVX512-BF16 and no AMX
// (bf16_gemm_avx512.cpp). Single-threaded: sdpa.cpp calls it from inside its own tasks, one of
// each per thread.
#include "runtime/cpu/sdpa_amx.h"

#include <atomic>

#include "runtime/cpu/amx_buffer.h"
#include "runtime/cpu/bf16_amx_tile.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

namespace mase::cpu {
namespace {
int64_t padded(int64_t k) { return (k + kAmxK - 1) / kAmxK * kAmxK; }
int64_t blocks16(int64_t n) { return (n + 15) / 16; }

std::atomic<bool> g_bf16_attention{true};

// one tile product: on AMX where it is active, else with vdpbf16ps (bf16_attention_tiles()
// found one of the two)
void product(const AmxChunk& c) {
  if (amx_bf16_active()) amx_bf16_chunk(c);
  else avx512_bf16_chunk(c);
}
}  // namespace

void set_bf16_attention_enabled(bool on) { g_bf16_attention.store(on, std::memory_order_relaxed); }

bool bf16_attention_units() {
  return g_bf16_attention.load(std::memory_order_relaxed) &&
         (amx_bf16_active() || bf16_isa_supported(Bf16Isa::avx512_bf16));
}

bool bf16_attention_tiles() {
  return cpu_gemm_precision() == GemmPrecision::bf16 && bf16_attention_units();
}

void AmxAttention::pack_head(const float* k, int64_t kst, const float* vv, int64_t vst, int64_t tk,
                             int64_t hs, int64_t hsv) {
  Tk = tk, HS = hs, HSv = hsv, kp_hs = padded(hs), kp_tk = padded(tk);
  // S = Q·Kᵀ: op(B)[d, j] = K[j, d], K stored keys × HS (the "N × K" form)
  kt = aligned_tiles(kt_buf, blocks16(Tk) * kp_hs * 16);
  amx_pack_b(k, kst, true, Tk, HS, kp_hs, 0, blocks16(Tk), kt);
  // O = P·V: op(B)[j, d] = V[j, d], V stored keys × HSv (the "K × N" form)
  v = aligned_tiles(v_buf, blocks16(HSv) * kp_tk * 16);
  amx_pack_b(vv, vst, false, HSv, Tk, kp_tk, 0, blocks16(HSv), v);
}

void AmxAttention::pack_queries(const float* qq, int64_t qst, int64_t r) {
  rows = r;
  q = aligned_tiles(q_buf, padded(rows) * kp_hs);  // rows to a multiple of 32, as the kernel reads them
  amx_pack_a(qq, qst, false, 0, rows, HS, kp_hs, q);
}

void AmxAttention::scores(float* S, int64_t lds, int64_t j0, int64_t cols, float scale) const {
  // B from key j0 on: its 16-column blocks start there (j0 is a multiple of 32)
  const AmxChunk c{q, rows, kp_hs, kt + (j0 / 16) * kp_hs * 16, kp_hs, 0,
                   0, cols, cols, S, lds, scale, 0.0f, nullptr, false};
  product(c);
}

void AmxAttention::values(float* O, int64_t ldo, const float* P, int64_t ldp, int64_t j0,
                          int64_t cols, bool accumulate) {
  const int64_t kp = padded(cols);
  p = aligned_tiles(p_buf, padded(rows) * kp);
  amx_pack_a(P, ldp, false, 0, rows, cols, kp, p);
  // A holds keys j0 .. j0 + cols: B's k tiles from j0 / 32 (j0 is a multiple of 32)
  const AmxChunk c{p, rows, kp, v, kp_tk, j0 / kAmxK, 0, HSv, HSv, O, ldo, 1.0f,
                   accumulate ? 1.0f : 0.0f, nullptr, false};
  product(c);
}

void AmxAttentionGrad::pack_head(const float* q, int64_t qst, const float* k, int64_t kst,
                                 const float* v, int64_t vst, const float* dout, int64_t gst,
                                 int64_t tq, int64_t tk, int64_t hs, int64_t hsv) {
  Tq = tq, Tk = tk, HS = hs, HSv = hsv;
  kp_hs = padded(hs), kp_hsv = padded(hsv), kp_tq = padded(tq), kp_tk = padded(tk);
  q_a = aligned_tiles(buf[0], padded(Tq) * kp_hs);  // rows to a multiple of 32, as read
  amx_pack_a(q, qst, false, 0, Tq, HS, kp_hs, q_a);
  g_a = aligned_tiles(buf[1], padded(Tq) * kp_hsv);
  amx_pack_a(dout, gst, false, 0, Tq, HSv, kp_hsv, g_a);
  // op(B)[d, j] = K[j, d] and V[j, d]: stored keys × width (the "N × K" form)
  kt = aligned_tiles(buf[2], blocks16(Tk) * kp_hs * 16);
  amx_pack_b(k, kst, true, Tk, HS, kp_hs, 0, blocks16(Tk), kt);
  vt = aligned_tiles(buf[3], blocks16(Tk) * kp_hsv * 16);
  amx_pack_b(v, vst, true, Tk, HSv, kp_hsv, 0, blocks16(Tk), vt);
  // op(B) = K, Q, dO themselves, summed over their rows (the "K × N" form)
  k_b = aligned_tiles(buf[4], blocks16(HS) * kp_tk * 16);
  amx_pack_b(k, kst, false, HS, Tk, kp_tk, 0, blocks16(HS), k_b);
  q_b = aligned_tiles(buf[5], blocks16(HS) * kp_tq * 16);
  amx_pack_b(q, qst, false, HS, Tq, kp_tq, 0, blocks16(HS), q_b);
  g_b = aligned_tiles(buf[6], blocks16(HSv) * kp_tq * 16);
  amx_pack_b(dout, gst, false, HSv, Tq, kp_tq, 0, blocks16(HSv), g_b);
}

void AmxAttentionGrad::scores(float* S, float* dP, int64_t ld, int64_t i0, int64_t rows,
                              int64_t j0, int64_t cols, float scale) const {
  // A: the head's packs from row i0 (a block of 16 rows is 16 · kp contiguous values);
  // B: from key j0's 16-column block
  const AmxChunk s{q_a + i0 * kp_hs, rows, kp_hs, kt + (j0 / 16) * kp_hs * 16, kp_hs, 0,
                   0, cols, cols, S, ld, scale, 0.0f, nullptr, false};
  product(s);
  const AmxChunk p{g_a + i0 * kp_hsv, rows, kp_hsv, vt + (j0 / 16) * kp_hsv * 16, kp_hsv, 0,
                   0, cols, cols, dP, ld, 1.0f, 0.0f, nullptr, false};
  product(p);
}

void AmxAttentionGrad::grads(const float* Pd, const float* dS, int64_t ld, int64_t i0,
                             int64_t rows, int64_t j0, int64_t cols, float scale, float* dv,
                             int64_t dvst, float* dk, int64_t dkst, float* dq, int64_t dqst,
                             bool add_i, bool add_j) {
  const int64_t kp_rows = padded(rows), kp_cols = padded(cols);
  // (z∘P)ᵀ and dSᵀ: cols × rows, summed over this tile's queries (B's k tiles from i0 / 32)
  pdt = aligned_tiles(buf[7], padded(cols) * kp_rows);
  amx_pack_a(Pd, ld, true, 0, cols, rows, kp_rows, pdt);
  dst = aligned_tiles(buf[8], padded(cols) * kp_rows);
  amx_pack_a(dS, ld, true, 0, cols, rows, kp_rows, dst);
  const AmxChunk v{pdt, cols, kp_rows, g_b, kp_tq, i0 / kAmxK, 0, HSv, HSv, dv, dvst, 1.0f,
                   add_i ? 1.0f : 0.0f, nullptr, false};
  product(v);
  const AmxChunk k{dst, cols, kp_rows, q_b, kp_tq, i0 / kAmxK, 0, HS, HS, dk, dkst, scale,
                   add_i ? 1.0f : 0.0f, nullptr, false};
  product(k);
  // dS: rows × cols, summed over this tile's keys (B's k tiles from j0 / 32)
  ds = aligned_tiles(buf[9], padded(rows) * kp_cols);
  amx_pack_a(dS, ld, false, 0, rows, cols, kp_cols, ds);
  const AmxChunk q{ds, rows, kp_cols, k_b, kp_tk, j0 / kAmxK, 0, HS, HS, dq, dqst, scale,
                   add_j ? 1.0f : 0.0f, nullptr, false};
  product(q);
}

}  // namespace mase::cpu
