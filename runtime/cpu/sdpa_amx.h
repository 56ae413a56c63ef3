// runtime/cpu/sdpa_amx.h — the fused attention's tile products on bf16 operands, for
// --precision bf16 on CPUs that have bf16 units (sdpa.cpp's forward takes this path there, and
// its backward the five products of AmxAttentionGrad; elsewhere the products stay fp32 on our
// AVX-512 / AVX2 register tiles). The operands are packed into AMX's tile layouts
// (runtime/cpu/bf16_amx_tile.h) and each product runs on AMX-BF16 tiles where the CPU has them,
// else with AVX512-BF16's vdpbf16ps on the same packs (AMD Zen 4/5). The products of a head
// reuse its operands across every tile, so each is packed once: K and V once per head, a query
// tile once for all its key tiles; only P, new for every key tile, is packed per product.
// Operands rounded to bf16, products and sums in fp32 — what PyTorch's flash attention does
// under torch.autocast.
#pragma once
#include <cstdint>
#include <vector>

namespace mase::cpu {

// Whether the attention runs its products on bf16 operands here: --precision bf16 and
// bf16_attention_units() — the switch below on, and AMX-BF16 (active) or AVX512-BF16 on this
// CPU (after MASE_MAX_CPU_ISA's cap).
bool bf16_attention_tiles();
bool bf16_attention_units();
// on by default; off keeps the products fp32 under bf16 (mase-bench --bf16-attention off: A/B)
void set_bf16_attention_enabled(bool on);

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

// The backward's five tile products, for one thread. A head's Q, K, V and dO are each read in
// two roles (Q as the A of S = Q·Kᵀ and the B of dK = dSᵀ·Q, and so on), so each is packed once
// per head in both layouts; only dS, dSᵀ and (z∘P)ᵀ, new for every tile, are packed per tile.
// A tile of queries i0 .. i0 + rows and keys j0 .. j0 + cols (i0, j0 multiples of 32) reads
// slices of the head's packs: rows of an A pack, k tiles or column blocks of a B pack.
struct AmxAttentionGrad {
  std::vector<uint16_t> buf[10];
  uint16_t *q_a = nullptr, *g_a = nullptr;  // Q, dO as A operands (Tq × HS, Tq × HSv)
  uint16_t *kt = nullptr, *vt = nullptr;    // Kᵀ, Vᵀ as B (HS × Tk, HSv × Tk): S, dP
  uint16_t *k_b = nullptr, *q_b = nullptr, *g_b = nullptr;  // K, Q, dO as B: dQ, dK, dV
  uint16_t *ds = nullptr, *dst = nullptr, *pdt = nullptr;   // dS, dSᵀ, (z∘P)ᵀ of one tile
  int64_t Tq = 0, Tk = 0, HS = 0, HSv = 0, kp_hs = 0, kp_hsv = 0, kp_tq = 0, kp_tk = 0;

  // one head's rows (row strides qst, kst, vst, gst)
  void pack_head(const float* q, int64_t qst, const float* k, int64_t kst, const float* v,
                 int64_t vst, const float* dout, int64_t gst, int64_t Tq, int64_t Tk, int64_t HS,
                 int64_t HSv);
  // S = scale·Q_i·K_jᵀ and dP = dO_i·V_jᵀ, each rows × cols with row stride ld
  void scores(float* S, float* dP, int64_t ld, int64_t i0, int64_t rows, int64_t j0, int64_t cols,
              float scale) const;
  // dV_j = (z∘P)ᵀ·dO_i, dK_j = scale·dSᵀ·Q_i (both added to the rows when `add_i`), and
  // dQ_i = scale·dS·K_j (added when `add_j`); Pd and dS rows × cols with row stride ld
  void grads(const float* Pd, const float* dS, int64_t ld, int64_t i0, int64_t rows, int64_t j0,
             int64_t cols, float scale, float* dv, int64_t dvst, float* dk, int64_t dkst,
             float* dq, int64_t dqst, bool add_i, bool add_j);
};

}  // namespace mase::cpu
