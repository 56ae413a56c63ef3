// autograd/ops/sdpa.cpp — scaled dot-product attention (Vaswani et al. 2017, eq. 1):
//
//   S = q·kᵀ / √HS + mask        (B, NH, Tq, Tk)   scores; mask is additive (0 or a large
//                                                    negative such as finfo(float).min)
//   P = softmax(S) over Tk                            attention probabilities
//   P' = dropout(P, p)                                (training only; as HF's attention dropout)
//   out = P'·v                   (B, NH, Tq, HSv)
//
// Backward (z: the dropout mask scaled by 1/(1−p); D_i = Σ_j P_ij·dP_ij = dout_i·out_i):
//   dP = z ⊙ (dout·vᵀ)   dv = P'ᵀ·dout   dS = P ⊙ (dP − D)   dq = dS·k / √HS   dk = dSᵀ·q / √HS
//
// Two implementations of the same maths:
//  * sdpa — the fused kernels, runtime/cpu/sdpa.cpp and (f32, HS = HSv in {32, 64, 128})
//    cuda/sdpa_forward.cu + cuda/sdpa_backward*.cu (FMA; or their tensor-core twins *_tc.cu,
//    as sdpa_cuda_math() says; the backward's dQ as sdpa_cuda_backward() says): tiled over
//    queries and keys with an online softmax, backward recomputing P from the saved per-row
//    max and sum (FlashAttention 2).
//    Memory O(B·NH·T) instead of O(B·NH·T²). The output is written in (B, T, NH, HSv)
//    layout and returned as its (B, NH, T, HSv) view: BERT's merge of the heads,
//    reshape(transpose(out, 1, 2), (B, T, C)), is then a free view instead of a copy; dq, dk,
//    dv likewise, so the gradients reach the Q/K/V projections packed.
//  * sdpa_reference — the composition of primitive ops (matmul, mul, add, softmax, dropout),
//    whose backward comes from those ops. The oracle of the tests, the baseline of the bench,
//    and what sdpa runs for a mask that requires grad (the fused kernels never form dS for the
//    whole batch to sum into it) and for CUDA tensors of other head sizes.
//
// Dropout: both draw the same mask from the same generator state — probability (b, h, i, j)
// uses Philox word ((b·NH + h)·Tq + i)·Tk + j of gen's stream after gen.advance(B·NH·Tq·Tk),
// which is the layout dropout() uses on the packed probabilities (runtime/kernels/sdpa.h).
// q·kᵀ on head-split views costs no copy in either: BLAS reads the transposed, strided
// operand with a flag and a leading dim. Tests: tests/autograd/test_sdpa*.cpp.
#include <cmath>

#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/sdpa.h"

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

namespace {

// A (B, NH, T, D) tensor as the kernels read it; its last dim must be packed.
template <class T, class U = T>
HeadsView<U> heads(const Tensor& t) {
  return {t.data<T>(), t.strides()[0], t.strides()[1], t.strides()[2]};
}

// t itself when its last dim is packed (head-split views are), else a packed copy.
Tensor last_dim_packed(const Tensor& t) { return t.strides()[3] == 1 ? t : ops::packed(t); }

// A new (B, NH, T, D) tensor laid out as (B, T, NH, D): the layout of BERT's (B, T, C).
Tensor empty_heads_last(int64_t B, int64_t NH, int64_t T, int64_t D, DType dtype, Device device) {
  Tensor packed = Tensor::empty({B, T, NH, D}, dtype, device);
  return packed.as_strided({B, NH, T, D}, {T * NH * D, D, NH * D, 1}, 0);
}

}  // namespace

bool sdpa_fused_on_cuda(int64_t head_size) {
  return cuda::sdpa_supported(SdpaSizes{0, 0, 0, 0, head_size, head_size});
}

Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
            double dropout_p, bool training, Generator& gen, const RowMap& rows) {
  check_sdpa_args("sdpa", q, k, v, mask, dropout_p);
  ops::check_cuda_f32("sdpa", q);
  const SdpaSizes n{q.size(0), q.size(1), q.size(2), k.size(2), q.size(3), v.size(3)};
  // A mask that needs a gradient, and CUDA head sizes without a kernel, take the reference
  // composition, reported as one "sdpa" op so a traced graph shows one attention node (as
  // torch.fx shows F.scaled_dot_product_attention), not its parts.
  const bool mapped = training && dropout_p > 0.0 && !rows.identity();
  MASE_CHECK(!mapped || ((q.is_cpu() || cuda::sdpa_supported(n)) &&
                         !(mask.defined() && mask.requires_grad()) &&
                         (n.B * n.NH * n.Tq) % rows.period == 0),
             ConfigError, "[sdpa] expected a row-mapped dropout stream on a fused kernel (the ",
             "reference composition draws whole tensors), got ", q.device(), " head size ", n.HS,
             mask.defined() && mask.requires_grad() ? " with a mask that needs a gradient" : "");
  if ((q.is_cuda() && !cuda::sdpa_supported(n)) || (mask.defined() && mask.requires_grad()))
    return record_composite("sdpa", {q, k, v, mask}, [&] {
      return sdpa_reference(q, k, v, mask, dropout_p, training, gen);
    }, {{"dropout_p", dropout_p}, {"training", training}});

  const double scale = 1.0 / std::sqrt(static_cast<double>(n.HS));
  DropoutMask drop;
  if (training && dropout_p > 0.0) {  // the counters dropout() would take on P (see above)
    drop.on = true;
    drop.seed = gen.seed;
    drop.offset = gen.advance(rows.logical_rows(n.B * n.NH * n.Tq) * n.Tk);
    drop.rows = rows;  // identity unless narrowed (checked above: a fused kernel)
    drop.threshold = dropout_threshold(dropout_p);
    drop.scale = 1.0 / (1.0 - dropout_p);
    // a captured CUDA step adds a per-replay base on the device (runtime/random.h): without
    // it every replay would drop the same entries (test_train "graph step: replays ==
    // uncaptured" caught that on the H100)
    if (q.is_cuda()) drop.offset_base = gen.device_offset_base;
  }
  // the mask's strides as seen from (B, NH, Tq, Tk): 0 on every broadcast dim
  Tensor m = mask;
  Strides ms(4, 0);
  if (m.defined()) {
    const Shape scores{n.B, n.NH, n.Tq, n.Tk};
    ms = broadcast_strides(m.shape(), m.strides(), scores);
  }
  const Tensor qp = last_dim_packed(q), kp = last_dim_packed(k), vp = last_dim_packed(v);
  const Device dev = q.device();
  Tensor out = empty_heads_last(n.B, n.NH, n.Tq, n.HSv, q.dtype(), dev);
  Tensor stats = Tensor::empty({n.B, n.NH, n.Tq, 2}, q.dtype(), dev);  // per row: max, Σ exp
  const SdpaMath math = sdpa_cuda_math();  // CUDA: FMA or tensor cores (runtime/kernels/sdpa.h)
  const SdpaBackward alg = sdpa_cuda_backward();  // CUDA: how the backward sums dQ (same file)
  if (q.is_cuda()) {
    const MaskView<float> mv{m.defined() ? m.data<float>() : nullptr, ms[0], ms[1], ms[2], ms[3]};
    cuda::sdpa_forward(heads<float>(out), stats.data<float>(), heads<float, const float>(qp),
                       heads<float, const float>(kp), heads<float, const float>(vp), mv, n,
                       static_cast<float>(scale), drop, math);
  } else {
    dispatch_float(q.dtype(), "sdpa", [&]<class T>() {
      const MaskView<T> mv{m.defined() ? m.data<T>() : nullptr, ms[0], ms[1], ms[2], ms[3]};
      cpu::sdpa_forward<T>(heads<T>(out), stats.data<T>(), heads<T, const T>(qp),
                           heads<T, const T>(kp), heads<T, const T>(vp), mv, n,
                           static_cast<T>(scale), drop);
    });
  }

  Attrs attrs{{"dropout_p", dropout_p}, {"training", training}};
  return record("sdpa", {q, k, v, mask}, out,
                [qp, kp, vp, m, ms, n, scale, drop, math, alg, stats, o = out.detach()](
                    const Tensor& dout) -> Tensors {
    // dq, dk, dv from dout and P recomputed from stats (runtime/cpu/sdpa.cpp, backward)
    const Tensor g = last_dim_packed(dout);
    const Device dev = g.device();
    Tensor dq = empty_heads_last(n.B, n.NH, n.Tq, n.HS, g.dtype(), dev);
    Tensor dk = empty_heads_last(n.B, n.NH, n.Tk, n.HS, g.dtype(), dev);
    Tensor dv = empty_heads_last(n.B, n.NH, n.Tk, n.HSv, g.dtype(), dev);
    if (g.is_cuda()) {
      // dO_i·O_i per row, and the one-pass kernel's partial dQ sums (sdpa_backward_workspace)
      Tensor ws = Tensor::empty({cuda::sdpa_backward_workspace(n, math, alg)}, DType::f32, dev);
      const MaskView<float> mv{m.defined() ? m.data<float>() : nullptr, ms[0], ms[1], ms[2],
                               ms[3]};
      cuda::sdpa_backward(heads<float>(dq), heads<float>(dk), heads<float>(dv),
                          heads<float, const float>(g), heads<float, const float>(o),
                          stats.data<float>(), heads<float, const float>(qp),
                          heads<float, const float>(kp), heads<float, const float>(vp), mv, n,
                          static_cast<float>(scale), drop, ws.data<float>(), math, alg);
    } else {
      dispatch_float(g.dtype(), "sdpa", [&]<class T>() {
        const MaskView<T> mv{m.defined() ? m.data<T>() : nullptr, ms[0], ms[1], ms[2], ms[3]};
        cpu::sdpa_backward<T>(heads<T>(dq), heads<T>(dk), heads<T>(dv), heads<T, const T>(g),
                              heads<T, const T>(o), stats.data<T>(), heads<T, const T>(qp),
                              heads<T, const T>(kp), heads<T, const T>(vp), mv, n,
                              static_cast<T>(scale), drop);
      });
    }
    return {dq, dk, dv, Tensor()};
  }, std::move(attrs));
}

}  // namespace mase
