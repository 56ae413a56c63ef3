// autograd/ops/sdpa.cpp — scaled dot-product attention (Vaswani et al. 2017, eq. 1):
//
//   S = q·kᵀ / √HS + mask        (B, NH, Tq, Tk)   scores; mask is additive (0 or a large
//                                                    negative such as finfo(float).min)
//   P = softmax(S) over Tk                            attention probabilities
//   P' = dropout(P, p)                                (training only; as HF's attention dropout)
//   out = P'·v                   (B, NH, Tq, HSv)
//
// Backward comes for free from the ops it is composed of (matmul, mul, add, softmax, dropout):
//   dP' = dout·vᵀ   dv = P'ᵀ·dout   dP = dropout-backward(dP')   dS = P ⊙ (dP − Σ_k dP ⊙ P)
//   dq = dS·k / √HS   dk = dSᵀ·q / √HS
//
// Why two names: `sdpa` is what models call (models/bert_encoder.cpp); `sdpa_reference` is
// the composition above. Today sdpa's body is the reference. A fused kernel (tiled, online
// softmax, never materialising S — a later issue; runtime/cpu/sdpa.cpp and cuda/sdpa.cu) will
// replace sdpa's body and keep sdpa_reference as its oracle (test: fused == reference).
//
// The reference materialises S and P: O(B·NH·T²) memory. q·kᵀ on head-split views costs no
// copy: matmul passes the transposed, strided operand to BLAS as a flag and a leading dim.
#include <cmath>

#include "autograd/ops.h"
#include "autograd/ops/common.h"

namespace mase {
namespace {

void check_sdpa_args(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                     const Tensor& mask, double dropout_p) {
  ops::check_float(op, q, "q");
  ops::check_same(op, q, k);
  ops::check_same(op, q, v);
  MASE_CHECK(q.ndim() == 4 && k.ndim() == 4 && v.ndim() == 4, ShapeError, "[", op,
             "] expected q, k, v of shape (B, NH, T, HS), got q ", q.shape(), ", k ", k.shape(),
             ", v ", v.shape());
  const bool same_bh = q.size(0) == k.size(0) && q.size(0) == v.size(0) &&
                       q.size(1) == k.size(1) && q.size(1) == v.size(1);
  MASE_CHECK(same_bh && q.size(3) == k.size(3) && k.size(2) == v.size(2), ShapeError, "[", op,
             "] expected q (B, NH, Tq, HS), k (B, NH, Tk, HS), v (B, NH, Tk, HSv), got q ",
             q.shape(), ", k ", k.shape(), ", v ", v.shape());
  if (mask.defined()) {
    ops::check_same(op, q, mask);
    Shape scores{q.size(0), q.size(1), q.size(2), k.size(2)};
    bool ok = mask.ndim() <= 4;
    for (int64_t i = 1; ok && i <= mask.ndim(); ++i) {
      int64_t m = mask.size(-i), s = scores[4 - i];
      ok = (m == s || m == 1);
    }
    MASE_CHECK(ok, ShapeError, "[", op, "] expected a mask broadcastable to the scores ", scores,
               ", got ", mask.shape(), " (a padding mask is (B, 1, 1, Tk))");
  }
  MASE_CHECK(dropout_p >= 0.0 && dropout_p < 1.0, ConfigError, "[", op,
             "] expected dropout_p in [0, 1), got ", dropout_p);
}

}  // namespace

Tensor sdpa_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                      double dropout_p, bool training, Generator& gen) {
  check_sdpa_args("sdpa_reference", q, k, v, mask, dropout_p);
  const double scale = 1.0 / std::sqrt(static_cast<double>(q.size(3)));
  Tensor scores = matmul(q, transpose(k, -2, -1)) * scale;  // (B, NH, Tq, Tk)
  if (mask.defined()) scores = scores + mask;                  // broadcast over heads, queries
  Tensor probs = softmax(scores);                              // over Tk
  probs = dropout(probs, dropout_p, training, gen);
  return matmul(probs, v);  // (B, NH, Tq, HSv)
}

Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
            double dropout_p, bool training, Generator& gen) {
  check_sdpa_args("sdpa", q, k, v, mask, dropout_p);
  // The fused kernel plugs in here (dispatch on q.device() to cpu::/cuda::sdpa_forward).
  // Until then the composition reports itself as one "sdpa" op, so a traced graph shows one
  // attention node (as torch.fx shows F.scaled_dot_product_attention), not its parts.
  return record_composite("sdpa", {q, k, v, mask}, [&] {
    return sdpa_reference(q, k, v, mask, dropout_p, training, gen);
  }, {{"dropout_p", dropout_p}, {"training", training}});
}

}  // namespace mase
