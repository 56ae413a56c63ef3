// cuda/sdpa_forward.cuh — what the two flash-attention forward kernels share: their arguments,
// the online-softmax step on a thread's 4 × 4 tile of scores, and the final write of O and the
// row statistics. The FMA kernel is cuda/sdpa_forward.cu (read it first), the tensor-core one
// cuda/sdpa_forward_tc.cu. Included by .cu files only.
#pragma once
#include "cuda/sdpa_tile.cuh"

namespace mase::cuda::sdpa_fwd {

using namespace sdpa_tile;

struct FwdArgs {
  HeadsView<float> out;
  float* stats;  // (B, NH, Tq, 2) packed: (m, l) per query row
  HeadsView<const float> q, k, v;
  MaskView<float> mask;
  int NH, Tq, Tk;
  float scale;
  DropoutMask drop;
  float drop_scale;  // drop.scale rounded to float, as the CPU's f32 kernel rounds it
};

// The running state of the thread's 4 query rows before the first key: m = −inf, l = 0, O = 0.
template <int HS>
__device__ inline void start_rows(float (&m)[4], float (&l)[4], float (&o)[4][Cols<HS>::kN]) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    m[i] = -INFINITY;
    l[i] = 0.f;
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) o[i][u] = 0.f;
  }
}

// o[i][·] *= corr[i]: the rows' O rescaled to a new running max.
template <int HS>
__device__ inline void scale_rows(float (&o)[4][Cols<HS>::kN], const float (&corr)[4]) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) o[i][u] *= corr[i];
}

// One key tile's step of the online softmax for the thread's scores s (rows r = i0 + ty·4 + i,
// keys c = j0 + tx + 16·j; raw products q·k on entry):
//   S = scale·s + mask (−inf past the last key)     m' = max(m, rowmax S)
//   P = exp(S − m')     l = l·exp(m − m') + rowsum P     s = z ∘ P (z: the dropout factors,
//                                                          from the tile's `keep` bytes)
// corr[i] = exp(m − m') is what the row's accumulated O must be multiplied by. A row whose
// scores are all −inf so far keeps m = −inf and takes its exps against 0 (never −inf − (−inf)).
__device__ inline void online_softmax_tile(float (&s)[4][4], float (&m)[4], float (&l)[4],
                                           float (&corr)[4], const FwdArgs& a,
                                           const uint8_t* keep, int64_t b, int64_t h, int i0,
                                           int j0, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;  // query row (≥ Tq: a zero row of the last tile)
    float mx = -INFINITY;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      const int c = j0 + tx + 16 * j;  // key
      if (c >= a.Tk) s[i][j] = -INFINITY;  // past the last key: weight 0
      else s[i][j] = s[i][j] * a.scale + (r < a.Tq ? mask_at(a.mask, b, h, r, c) : 0.f);
      mx = fmaxf(mx, s[i][j]);
    }
    const float m_new = fmaxf(m[i], max16(mx));
    const float shift = m_new == -INFINITY ? 0.f : m_new;  // all −inf so far: exps are 0
    corr[i] = __expf(m[i] - shift);                        // m = −inf: 0
    float rs = 0.f;
#pragma unroll
    for (int j = 0; j < 4; ++j) {
      s[i][j] = __expf(s[i][j] - shift);  // P, un-dropped
      rs += s[i][j];
    }
    l[i] = l[i] * corr[i] + sum16(rs);
    m[i] = m_new;
    if (a.drop.on && r < a.Tq) {
#pragma unroll
      for (int j = 0; j < 4; ++j)
        if (j0 + tx + 16 * j < a.Tk) s[i][j] *= keep_factor(keep, a.drop_scale, ty, i, tx, j);
    }
  }
}

// O / l into the output rows (l = 0: the row attends to nothing, output 0), and (m, l) into
// stats, for the thread's rows i0 + ty·4 + i and its columns of O (Cols<HS>).
template <int HS>
__device__ inline void write_output(const float (&o)[4][Cols<HS>::kN], const float (&m)[4],
                                    const float (&l)[4], const FwdArgs& a, int64_t bh, int64_t b,
                                    int64_t h, int i0, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i) {
    const int r = i0 + ty * 4 + i;
    if (r >= a.Tq) continue;
    const float inv = l[i] > 0.f ? 1.f / l[i] : 0.f;
    float* orow = head_row(a.out, b, h, r);
#pragma unroll
    for (int u = 0; u < Cols<HS>::kN; ++u) orow[Cols<HS>::col(tx, u)] = o[i][u] * inv;
    if (tx == 0) {
      a.stats[2 * (bh * a.Tq + r)] = m[i];
      a.stats[2 * (bh * a.Tq + r) + 1] = l[i];
    }
  }
}

// The tensor-core forward (cuda/sdpa_forward_tc.cu): HS in {32, 64, 128}; three_pass = true
// for tf32x3, false for tf32.
void launch_forward_tc(const FwdArgs& a, int64_t BH, int HS, bool three_pass);

}  // namespace mase::cuda::sdpa_fwd
