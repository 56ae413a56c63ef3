// runtime/cpu/sdpa_amx.cpp — AmxAttention (sdpa_amx.h): packing a head once, then each tile
// product as one AMX chunk (runtime/cpu/bf16_gemm_amx.cpp). Single-threaded: sdpa.cpp calls it
// from inside its own tasks, one AmxAttention per thread.
#include "runtime/cpu/sdpa_amx.h"

#include "runtime/cpu/amx_buffer.h"
#include "runtime/cpu/bf16_amx_tile.h"

namespace mase::cpu {
namespace {
int64_t padded(int64_t k) { return (k + kAmxK - 1) / kAmxK * kAmxK; }
int64_t blocks16(int64_t n) { return (n + 15) / 16; }
}  // namespace

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
  amx_bf16_chunk(c);
}

void AmxAttention::values(float* O, int64_t ldo, const float* P, int64_t ldp, int64_t j0,
                          int64_t cols, bool accumulate) {
  const int64_t kp = padded(cols);
  p = aligned_tiles(p_buf, padded(rows) * kp);
  amx_pack_a(P, ldp, false, 0, rows, cols, kp, p);
  // A holds keys j0 .. j0 + cols: B's k tiles from j0 / 32 (j0 is a multiple of 32)
  const AmxChunk c{p, rows, kp, v, kp_tk, j0 / kAmxK, 0, HSv, HSv, O, ldo, 1.0f,
                   accumulate ? 1.0f : 0.0f, nullptr, false};
  amx_bf16_chunk(c);
}

}  // namespace mase::cpu
