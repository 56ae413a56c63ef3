// runtime/cpu/sdpa_amx.h — the fused attention's two tile products on AMX-BF16 tiles, for
// --precision bf16 on CPUs that have them (sdpa.cpp's forward takes this path there; elsewhere
// its products stay fp32 on our AVX-512 / AVX2 register tiles). The products of a head reuse
// its operands across every tile, so each is packed into the tiles' layout once
// (runtime/cpu/bf16_amx_tile.h): K and V once per head, a query tile once for all its key
// tiles; only P, new for every key tile, is packed per product. Operands rounded to bf16,
// products and sums in fp32 — what PyTorch's flash attention does under torch.autocast.
#pragma once
#include <cstdint>
#include <vector>

namespace mase::cpu {

// One thread's packed operands: a head's Kᵀ and V, a query tile, a probability tile.
struct AmxAttention {
  std::vector<uint16_t> kt_buf, v_buf, q_buf, p_buf;  // kt, v, q, p: their 64-byte-aligned starts
  uint16_t *kt = nullptr, *v = nullptr, *q = nullptr, *p = nullptr;
  int64_t Tk = 0, HS = 0, HSv = 0, kp_hs = 0, kp_tk = 0, rows = 0;

  // K (Tk × HS, row stride kst) and V (Tk × HSv, row stride vst) of one head
  void pack_head(const float* k, int64_t kst, const float* v, int64_t vst, int64_t Tk, int64_t HS,
                 int64_t HSv);
  // rows × HS of Q (row stride qst): the A operand of every score tile that follows
  void pack_queries(const float* q, int64_t qst, int64_t rows);
  // S (rows × cols, row stride lds) = scale · Q·K_jᵀ over keys j0 .. j0 + cols (j0 % 32 = 0)
  void scores(float* S, int64_t lds, int64_t j0, int64_t cols, float scale) const;
  // O (rows × HSv, row stride ldo) = P·V_j (+ O when accumulate); P rows × cols, stride ldp
  void values(float* O, int64_t ldo, const float* P, int64_t ldp, int64_t j0, int64_t cols,
              bool accumulate);
};

}  // namespace mase::cpu
