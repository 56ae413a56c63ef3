// autograd/ops.h — every differentiable op, in one list. This is the user's API:
//   Tensor y = gelu(linear(x, w, b));  backward(mean(y));
//
// Each op `foo` is defined in autograd/ops/<stem>.cpp with its math, forward and backward
// side by side; the kernels it calls are declared in runtime/kernels/<stem>.h and defined in
// runtime/cpu/<stem>.cpp and cuda/<stem>.cu.
// Ops never modify their inputs. Shapes follow PyTorch's conventions; dims may be negative.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "autograd/engine.h"
#include "runtime/philox.h"  // RowMap
#include "runtime/random.h"
#include "runtime/tensor.h"

namespace mase {

// ---- elementwise binary, with NumPy broadcasting (ops/binary.cpp) ------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor add(const Tensor& a, double s);
Tensor sub(const Tensor& a, double s);  // a - s
Tensor rsub(double s, const Tensor& a); // s - a
Tensor mul(const Tensor& a, double s);
Tensor div(const Tensor& a, double s);
// Raw, in place, no autograd: dst += src (same shape). Used to accumulate gradients.
void accumulate_(const Tensor& dst, const Tensor& src);
// Raw, in place, no autograd: t *= s (t packed). Used to scale gradients (clip_grad_norm).
void mul_(const Tensor& t, double s);
// Raw, no autograd: the sum of `t` over its broadcast dims, giving `shape` (NumPy rules
// backwards). The gradient of a broadcast operand is sum_to(dout, operand.shape()).
Tensor sum_to(const Tensor& t, const Shape& shape);

inline Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
inline Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
inline Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
inline Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }
inline Tensor operator+(const Tensor& a, double s) { return add(a, s); }
inline Tensor operator-(const Tensor& a, double s) { return sub(a, s); }
inline Tensor operator*(const Tensor& a, double s) { return mul(a, s); }
inline Tensor operator/(const Tensor& a, double s) { return div(a, s); }
inline Tensor operator+(double s, const Tensor& a) { return add(a, s); }
inline Tensor operator-(double s, const Tensor& a) { return rsub(s, a); }
inline Tensor operator*(double s, const Tensor& a) { return mul(a, s); }

// ---- elementwise unary (ops/unary.cpp, ops/gelu.cpp) --------------------------------------
Tensor neg(const Tensor& x);
Tensor exp(const Tensor& x);
Tensor log(const Tensor& x);
Tensor sqrt(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor relu(const Tensor& x);
Tensor gelu(const Tensor& x);  // exact: 0.5·x·(1 + erf(x/√2)), as in BERT
// gelu(x + bias), bias (C) broadcast over x (..., C), in one pass each way (BERT's intermediate
// layer after a GEMM without bias); bias_gelu_reference is the composition gelu(x + bias).
Tensor bias_gelu(const Tensor& x, const Tensor& bias);
Tensor bias_gelu_reference(const Tensor& x, const Tensor& bias);
// bias_gelu's backward without a graph node, in place: dy (x's shape, packed, a gradient the
// caller owns and nobody else reads) is overwritten with dx = dy·gelu'(x + bias); returns
// db = Σ_rows dx. The same kernel and bits as the node's backward, one (rows, C) buffer fewer
// at the moment both would be alive (graph/passes/recompute_gelu.cpp, the training peak).
Tensor bias_gelu_backward_(const Tensor& dy, const Tensor& x, const Tensor& bias);
// bias_gelu between two row products, in row chunks, for inference (no autograd, f32 CPU):
// y (..., out) = p2(gelu(p1(x) + bias)) for x (..., C), bias (I), where p1 maps rows of x to
// (rows, I) and p2 maps (rows, I) to (rows, out), each on the calling thread alone. Chunks of
// rows go to the thread pool, and each chunk's (rows, I) intermediate is made, passed through
// GELU and consumed while it sits in the core's L2 — the whole (rows, I) activation is never
// written out. Row-wise products give the same bits as the unchunked computation. The FFN of
// a BERT layer with integer Linears: nn::ffn_in_chunks (models/fusion.h).
using RowProduct = std::function<void(const float* x, int64_t rows, float* y)>;
Tensor bias_gelu_in_row_chunks(const Tensor& x, const RowProduct& p1, const Tensor& bias,
                               const RowProduct& p2, int64_t out_features);
inline Tensor operator-(const Tensor& x) { return neg(x); }

// ---- matrix products (ops/matmul.cpp) ----------------------------------------------------
// a (..., M, K) @ b (..., K, N) -> (..., M, N); batch dims broadcast; a 2-d b is shared by
// every batch. Transposed views go to BLAS as flags, never copied.
Tensor matmul(const Tensor& a, const Tensor& b);
// x (..., in) · weightᵀ (in, out) + bias (out) -> (..., out): torch.nn.functional.linear.
// weight is (out, in) as in PyTorch/HF checkpoints; bias may be undefined.
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias = Tensor());
// gelu(x·weightᵀ + bias), BERT's FFN first half: bias_gelu(linear(x, weight), bias), the same
// bits, except that for inference on a GEMM that applies GELU as it stores (cpu::gemm_bias_gelu:
// --precision bf16 on AMX tiles) it is one pass over y instead of two.
Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias);

// ---- reductions (ops/reduce.cpp) ---------------------------------------------------------
Tensor sum(const Tensor& x);  // all elements -> shape ()
Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
Tensor mean(const Tensor& x);
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim = false);
// Max over one dim (torch.amax). The gradient is shared evenly among the elements that tie
// for the max. NaN entries are skipped (fmax), where torch.amax would return NaN. A dim of
// size 0 is a ShapeError (as in torch.amax), not −inf.
Tensor amax(const Tensor& x, int64_t dim, bool keepdim = false);

// ---- softmax family over the last dim (ops/softmax.cpp) ----------------------------------
Tensor softmax(const Tensor& x);      // y = exp(x - max) / sum(exp(x - max))
Tensor log_softmax(const Tensor& x);  // y = x - max - log(sum(exp(x - max)))
// A row of all -inf (fully masked) gives softmax 0s and log_softmax -infs, not PyTorch's NaN.
// The same maths composed of primitive ops, Lab 4's "naive softmax": m = amax(x), x − m, exp,
// sum, ÷ (log_softmax: x − m − log Σ exp(x − m)). Each op is a full pass over (rows, cols), so
// it reads the input ~5 times and writes 3 where the fused kernel reads once and writes once.
// The meaning of the fused kernels, their test oracle and the bench baseline. A row of all
// −inf gives NaN here (−inf − (−inf)), as in PyTorch; the fused kernels give 0 (see above).
Tensor softmax_reference(const Tensor& x);
Tensor log_softmax_reference(const Tensor& x);

// ---- normalisation (ops/layer_norm.cpp) --------------------------------------------------
// Over the last dim: y = (x - mean) / sqrt(var + eps) · weight + bias (biased variance).
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-12);
// The same maths composed of primitive ops: test oracle and bench baseline.
Tensor layer_norm_reference(const Tensor& x, const Tensor& weight, const Tensor& bias,
                            double eps = 1e-12);
// BERT's Add & Norm in one pass each way: layer_norm(dropout(x + x_bias, p) + residual, ...).
// x_bias (C) may be undefined; residual is shaped like x (..., C). The dropout mask is drawn
// from `gen` exactly as dropout() draws it, so the reference composition (add, dropout, add,
// layer_norm) gives the same numbers from the same generator state.
// `rows`: which rows of the dropout stream x's rows are, and so how far `gen`
// advances — a narrowed (B, 1, C) x drawing eager's masks for its tokens (graph/passes/
// narrow_cls.h; runtime/philox.h says how the map reads).
Tensor dropout_add_layer_norm(const Tensor& x, const Tensor& x_bias, const Tensor& residual,
                              const Tensor& weight, const Tensor& bias, double p, bool training,
                              double eps = 1e-12, Generator& gen = default_generator(),
                              const RowMap& rows = {});
Tensor dropout_add_layer_norm_reference(const Tensor& x, const Tensor& x_bias,
                                        const Tensor& residual, const Tensor& weight,
                                        const Tensor& bias, double p, bool training,
                                        double eps = 1e-12, Generator& gen = default_generator());

// ---- lookups and losses ------------------------------------------------------------------
// weight (V, C), ids (...) i32 -> (..., C). Backward scatters-adds rows (ops/embedding.cpp).
Tensor embedding(const Tensor& ids, const Tensor& weight);
// Mean over rows of -log softmax(logits)[target]. logits (N, C) float, targets (N) i32.
// Rows whose target == ignore_index are skipped (and not counted in the mean); when every
// row is ignored the loss is 0 with a zero gradient (PyTorch: NaN).
Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index = -100);
// The same maths composed of primitive ops (log_softmax_reference, mul, sum): test oracle.
Tensor cross_entropy_reference(const Tensor& logits, const Tensor& targets,
                               int64_t ignore_index = -100);

// ---- dropout (ops/dropout.cpp) -----------------------------------------------------------
// Training: zero each element with probability p and scale survivors by 1/(1-p); the mask is
// drawn from `gen` (Philox) and regenerated in backward. p == 0 or !training: identity.
Tensor dropout(const Tensor& x, double p, bool training, Generator& gen = default_generator());

// ---- selection (ops/where.cpp) -------------------------------------------------------------
// cond is u8 (0/1), broadcast against a and b.
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor masked_fill(const Tensor& x, const Tensor& mask, double value);  // x where !mask else value

// ---- attention (ops/sdpa.cpp) ---------------------------------------------------------------
// Scaled dot-product attention, the one entry point every attention layer calls:
//   out = dropout(softmax(q·kᵀ/√HS + mask), dropout_p) · v
// q (B, NH, Tq, HS), k (B, NH, Tk, HS), v (B, NH, Tk, HSv): any strides (head-split views of
// (B, T, C) projections are read in place). mask: additive, same dtype, broadcastable to
// (B, NH, Tq, Tk) — e.g. (B, 1, 1, Tk) padding masks — or undefined. Returns (B, NH, Tq, HSv).
// sdpa is fused on the CPU (tiled, online softmax, O(B·NH·T) memory; its output and input
// gradients are (B, T, NH, HS)-laid-out views); sdpa_reference is the composition of
// primitive ops: its meaning, test oracle and bench baseline, and the CUDA path for now.
// With the same generator state both drop the same attention probabilities.
// `rows`, as for dropout_add_layer_norm: query row r (counted over all (b, h)) draws the
// attention-dropout row rows(r) of a stream of rows.logical_rows(B·NH·Tq) rows — on the fused
// kernels only (the CPU's; on a GPU, head sizes with sdpa_fused_on_cuda).
Tensor sdpa(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
            double dropout_p, bool training, Generator& gen = default_generator(),
            const RowMap& rows = {});
// Whether a CUDA sdpa with this head size (q, k and v alike) runs the fused kernel rather than
// sdpa_reference.
bool sdpa_fused_on_cuda(int64_t head_size);
Tensor sdpa_reference(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& mask,
                      double dropout_p, bool training, Generator& gen = default_generator());

// ---- shapes and views (ops/view.cpp) ------------------------------------------------------
// Views share storage with their input (no copy) whenever the strides allow it.
Tensor reshape(const Tensor& x, const Shape& shape);  // one dim may be -1; copies if needed
Tensor view(const Tensor& x, const Shape& shape);     // like reshape but never copies (throws)
Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1);
Tensor permute(const Tensor& x, const std::vector<int64_t>& dims);
Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1);
Tensor select(const Tensor& x, int64_t dim, int64_t index);  // drops `dim`
Tensor squeeze(const Tensor& x, int64_t dim);
Tensor unsqueeze(const Tensor& x, int64_t dim);
Tensor expand(const Tensor& x, const Shape& shape);  // broadcast view (stride 0), -1 keeps a dim
Tensor contiguous(const Tensor& x);                  // packed copy if needed; identity grad
Tensor concat(const Tensors& xs, int64_t dim);
Tensor to_dtype(const Tensor& x, DType dtype);       // differentiable between f32 and f64

// ---- tensors made from another's shape (ops/factory.cpp) ---------------------------------
// Recorded ops (not raw factories) so that a traced model re-creates them on every call; x's
// values are not read and get no gradient. On x's device.
Tensor ones_like(const Tensor& x, DType dtype);   // x's shape, all 1 (BERT's default mask)
Tensor zeros_like(const Tensor& x, DType dtype);  // x's shape, all 0 (default token types)
Tensor arange_like(const Tensor& x, int64_t dim, DType dtype);  // (x.size(dim)): 0, 1, …

}  // namespace mase
