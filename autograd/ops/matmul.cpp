// autograd/ops/matmul.cpp — matmul (batched, broadcasting) and linear.
//
//   C = A·B          dA = dC·Bᵀ        dB = Aᵀ·dC        (each summed over broadcast batch dims)
//   y = x·Wᵀ + b     dx = dy·W         dW = dyᵀ·x        db = Σ_rows dy
//
// Every product is one BLAS call per matrix (runtime/cpu/matmul.cpp, cuda/matmul.cu). A
// transposed or head-split view is passed as a BLAS transpose flag plus leading dimension
// (MatrixArg below), so `matmul(q, transpose(k, -2, -1))` on attention heads copies nothing.
// When B is one shared 2-d matrix and A's batch dims are evenly strided rows — the Linear
// case, x (B, T, C) — the batch folds into M and the whole product is a single GEMM.
#include "autograd/frozen.h"
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sgemm_packed.h"
#include "runtime/parallel.h"

namespace mase {
namespace {

// How BLAS reads the last two dims of a tensor: as-is or transposed, with a leading dim.
struct MatrixArg {
  Tensor t;           // the tensor BLAS reads (a packed copy when the strides do not fit)
  bool trans = false;
  int64_t ld = 1;
};

MatrixArg matrix_arg(const Tensor& x) {
  const int64_t n = x.ndim();
  const int64_t rows = x.shape()[n - 2], cols = x.shape()[n - 1];
  const int64_t sr = x.strides()[n - 2], sc = x.strides()[n - 1];
  if ((sc == 1 || cols == 1) && sr >= std::max<int64_t>(1, cols)) return {x, false, sr};
  if ((sr == 1 || rows == 1) && sc >= std::max<int64_t>(1, rows)) return {x, true, sc};
  Tensor packed = ops::packed(x);
  return {packed, false, std::max<int64_t>(1, cols)};
}

template <class T>
void gemm_any(const Tensor& like, bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha,
              const T* A, int64_t lda, const T* B, int64_t ldb, double beta, T* C, int64_t ldc,
              int64_t batch = 1, const int64_t* ao = nullptr, const int64_t* bo = nullptr,
              const int64_t* co = nullptr) {
  if constexpr (std::is_same_v<T, float>) {
    if (like.is_cuda()) {
      if (batch == 1 && !ao) cuda::gemm(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc);
      else cuda::gemm_batched(ta, tb, M, N, K, alpha, A, lda, B, ldb, beta, C, ldc, batch, ao, bo, co);
      return;
    }
  }
  if (batch == 1 && !ao) cpu::gemm<T>(ta, tb, M, N, K, T(alpha), A, lda, B, ldb, T(beta), C, ldc);
  else cpu::gemm_batched<T>(ta, tb, M, N, K, T(alpha), A, lda, B, ldb, T(beta), C, ldc, batch, ao, bo, co);
}

// Inference only (no autograd): does our packed GEMM (runtime/kernels/sgemm_packed.h) beat
// OpenBLAS on this Linear? Measured with mase-bench --suite ladder (docs/performance.md, "The
// CPU's own matrix units"): on BERT's narrow Linears — bert-tiny's 128-wide ones — OpenBLAS
// spends much of each call packing A and B; ours packs only W (here, per call: N·K copies
// against M·N·K FMAs, <1% at M = 8192) and wins; from 512 × 512 up OpenBLAS's larger tiles
// won, and since our kernel prefetches B the two tie there (0.87–1.06, "Our packed GEMM, its B
// prefetched"), so those stay with OpenBLAS, which needs no copy of W per call.
bool packed_linear_wins(int64_t rows, int64_t out, int64_t in) {
  // oneDNN's matmul, where it runs, beats both on these shapes (runtime/cpu/onednn_gemm.h)
  if (cpu::onednn_enabled() && double(rows) * double(out) * double(in) >= cpu::kOnednnMinWork)
    return false;
  return rows >= 64 && std::min(out, in) <= 128 && std::max(out, in) <= 512;
}

// Can the dims before the last one be merged into a single evenly strided "rows" dim? Walk
// the batch dims inwards-out: each must step over exactly the rows inside it. Size-1 dims
// are skipped — their stride is never used, so it may be anything (0 after an expand).
bool rows_fold(const Tensor& x) {
  const int64_t n = x.ndim();
  int64_t expected = x.strides()[n - 2] * x.shape()[n - 2];
  for (int64_t d = n - 3; d >= 0; --d) {
    if (x.shape()[d] == 1) continue;
    if (x.strides()[d] != expected) return false;
    expected *= x.shape()[d];
  }
  return true;
}

// The product of all dims but the last: the rows of x viewed as a matrix. Unlike
// reshape(x, {-1, x.size(-1)}) it is defined when the last dim is 0.
int64_t leading_rows(const Shape& s) { return numel(Shape(s.begin(), s.end() - 1)); }

// C = A·B, no autograd.
Tensor matmul_raw(const Tensor& a, const Tensor& b) {
  const int64_t na = a.ndim(), nb = b.ndim();
  const int64_t M = a.shape()[na - 2], K = a.shape()[na - 1], N = b.shape()[nb - 1];
  Shape a_batch(a.shape().begin(), a.shape().end() - 2), b_batch(b.shape().begin(), b.shape().end() - 2);
  Shape batch = broadcast_shapes(a_batch, b_batch, "matmul");
  Shape out_shape = batch;
  out_shape.push_back(M);
  out_shape.push_back(N);
  Tensor c = Tensor::empty(out_shape, a.dtype(), a.device());
  if (c.numel() == 0) return c;
  if (K == 0) {
    fill_(c, 0.0);
    return c;
  }
  MatrixArg A = matrix_arg(a), B = matrix_arg(b);

  dispatch_float(a.dtype(), "matmul", [&]<class T>() {
    const T* pa = A.t.template data<T>();
    const T* pb = B.t.template data<T>();
    T* pc = c.template data<T>();
    // The Linear case: one shared B, A's rows evenly strided -> a single (batch·M)×K GEMM.
    if (nb == 2 && !A.trans && rows_fold(A.t)) {
      gemm_any<T>(a, false, B.trans, numel(batch) * M, N, K, 1.0, pa, A.ld, pb, B.ld, 0.0, pc, N);
      return;
    }
    // General case: one GEMM per batch index, operands located through broadcast strides.
    const int64_t nbatch = numel(batch);
    Strides as = broadcast_strides(a_batch, Strides(A.t.strides().begin(), A.t.strides().end() - 2), batch);
    Strides bs = broadcast_strides(b_batch, Strides(B.t.strides().begin(), B.t.strides().end() - 2), batch);
    std::vector<int64_t> ao(nbatch), bo(nbatch), co(nbatch);
    for (int64_t i = 0; i < nbatch; ++i) {
      int64_t rest = i, oa = 0, ob = 0;
      for (int64_t d = static_cast<int64_t>(batch.size()) - 1; d >= 0; --d) {
        int64_t k = rest % batch[d];
        rest /= batch[d];
        oa += k * as[d];
        ob += k * bs[d];
      }
      ao[i] = oa;
      bo[i] = ob;
      co[i] = i * M * N;
    }
    gemm_any<T>(a, A.trans, B.trans, M, N, K, 1.0, pa, A.ld, pb, B.ld, 0.0, pc, N, nbatch,
                ao.data(), bo.data(), co.data());
  });
  return c;
}

}  // namespace

Tensor matmul(const Tensor& a, const Tensor& b) {
  ops::check_same("matmul", a, b);
  ops::check_float("matmul", a);
  ops::check_cuda_f32("matmul", a);
  MASE_CHECK(a.ndim() >= 2 && b.ndim() >= 2, ShapeError,
             "[matmul] expected tensors with at least 2 dims, got a ", a.shape(), " and b ", b.shape());
  MASE_CHECK(a.size(-1) == b.size(-2), ShapeError, "[matmul] inner dims differ: a is ", a.shape(),
             ", b is ", b.shape());
  Tensor c = matmul_raw(a, b);
  bool ga = a.requires_grad(), gb = b.requires_grad();
  return record("matmul", {a, b}, c, [a, b, ga, gb](const Tensor& dc) -> Tensors {
    Tensor da, db;
    if (ga) da = sum_to(matmul(dc, transpose(b, -2, -1)), a.shape());  // dA = dC·Bᵀ
    if (gb) {                                                           // dB = Aᵀ·dC
      if (b.ndim() == 2 && a.ndim() > 2) {
        // shared B: fold every batch into the reduction, one (K × rows)·(rows × N) GEMM
        const int64_t rows = leading_rows(a.shape());
        Tensor a2 = reshape(a, {rows, a.size(-1)}), dc2 = reshape(dc, {rows, dc.size(-1)});
        db = matmul(transpose(a2, 0, 1), dc2);
      } else {
        db = sum_to(matmul(transpose(a, -2, -1), dc), b.shape());
      }
    }
    return {da, db};
  });
}

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  ops::check_same("linear", x, weight);
  ops::check_float("linear", x);
  ops::check_cuda_f32("linear", x);
  MASE_CHECK(weight.ndim() == 2, ShapeError, "[linear] expected weight (out, in), got ", weight.shape());
  MASE_CHECK(x.ndim() >= 1 && x.size(-1) == weight.size(1), ShapeError,
             "[linear] inner dims differ: x is ", x.shape(), ", weight is ", weight.shape(),
             " (expected x (..., ", weight.size(1), "))");
  const int64_t in = weight.size(1), out = weight.size(0);
  if (bias.defined()) {
    ops::check_same("linear", x, bias);
    MASE_CHECK(bias.ndim() == 1 && bias.size(0) == out, ShapeError, "[linear] expected bias (",
               out, "), got ", bias.shape());
  }
  Tensor x2 = ops::packed(x);  // (rows, in) with rows = every leading dim
  const int64_t rows = leading_rows(x.shape());
  Shape out_shape = x.shape();
  out_shape.back() = out;
  Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
  MatrixArg W = matrix_arg(weight);  // weight (out, in) read as Wᵀ: flip its transpose flag
  auto inference = [&] {  // the node of an inference branch: nothing to differentiate
    Tensors inputs{x, weight};
    if (bias.defined()) inputs.push_back(bias);
    return record("linear", inputs, y, nullptr);
  };
  // Inference (no autograd, CPU f32) on a packed weight: packed beforehand when the weight is
  // frozen (autograd/frozen.h: oneDNN's blocked layout, in fp32 or bf16, or AMX tiles under
  // bf16; the table answers only for the precision running now), or, in fp32, per call for our
  // packed GEMM where it beats the libraries (packed_linear_wins). Nothing to differentiate.
  if (!grad_enabled() && x.is_cpu() && x.dtype() == DType::f32 && in > 0) {
    const FrozenWeights* table = frozen_weights();
    const cpu::OnednnWeights* frozen = table ? table->find(weight) : nullptr;
    const cpu::AmxBf16Weights* amx = table && !frozen ? table->find_amx(weight) : nullptr;
    const bool ours = cpu_gemm_precision() == GemmPrecision::fp32 && !W.trans &&
                      cpu::sgemm_packed_enabled() && packed_linear_wins(rows, out, in);
    if (frozen || amx || ours) {
      const Tensor b = bias.defined() ? ops::packed(bias) : Tensor();
      const float* bp = bias.defined() ? b.data<float>() : nullptr;
      if (frozen) {
        cpu::onednn_packed_linear(y.data<float>(), out, x2.data<float>(), in, rows, *frozen, bp);
      } else if (amx) {
        cpu::amx_bf16_linear(y.data<float>(), out, x2.data<float>(), in, rows, *amx, bp);
      } else {
        const cpu::F32PackedB pw =
            cpu::sgemm_pack_b(W.t.data<float>(), W.ld, out, in, cpu::f32_isa_best());
        cpu::sgemm_packed(y.data<float>(), out, x2.data<float>(), in, rows, pw, bp);
      }
      return inference();
    }
  }
  if (bias.defined() && x.is_cpu() && in > 0) {
    // y = x·Wᵀ + bias, the bias added in the GEMM's store where the library can (gemm_bias)
    const Tensor b = ops::packed(bias);
    dispatch_float(x.dtype(), "linear", [&]<class T>() {
      cpu::gemm_bias<T>(!W.trans, rows, out, in, x2.template data<T>(), in, W.t.template data<T>(),
                        W.ld, b.template data<T>(), y.template data<T>(), out);
    });
  } else {
    // y = bias broadcast to every row, then y += x·Wᵀ (beta = 1): no separate pass adds it
    if (bias.defined()) copy_(y.as_strided({rows, out}, {out, 1}, 0), bias.as_strided({rows, out}, {0, bias.strides()[0]}, bias.offset()));
    if (in == 0) {  // an empty sum: y = bias, or 0 (and BLAS would reject lda = 0)
      if (!bias.defined()) fill_(y, 0.0);
    } else {
      dispatch_float(x.dtype(), "linear", [&]<class T>() {
        gemm_any<T>(x, false, !W.trans, rows, out, in, 1.0, x2.template data<T>(), in,
                    W.t.template data<T>(), W.ld, bias.defined() ? 1.0 : 0.0, y.template data<T>(), out);
      });
    }
  }
  bool gx = x.requires_grad(), gw = weight.requires_grad(), gb = bias.defined() && bias.requires_grad();
  Tensors inputs{x, weight};
  if (bias.defined()) inputs.push_back(bias);
  return record("linear", inputs, y, [x2, weight, gx, gw, gb, has_bias = bias.defined(), rows,
                                      xshape = x.shape()](const Tensor& dy) -> Tensors {
    const int64_t in = weight.size(1), out = weight.size(0);
    Tensor dy2 = reshape(contiguous(dy), {rows, out});
    Tensors grads(has_bias ? 3 : 2);
    if (gx) grads[0] = reshape(matmul(dy2, weight), xshape);                     // dx = dy·W
    if (gw) grads[1] = matmul(transpose(dy2, 0, 1), reshape(x2, {rows, in}));   // dW = dyᵀ·x
    if (gb) grads[2] = sum(dy2, {0});                                            // db = Σ dy
    return grads;
  });
}

Tensor linear_gelu(const Tensor& x, const Tensor& weight, const Tensor& bias) {
  // Inference on the CPU, f32, under --precision bf16: GELU in the store of the AMX GEMM — the
  // frozen weight's tiles where graph::compile packed them, else the per-call packing — and
  // one op, linear_gelu, to observers. Any other case (a gradient wanted, another device or
  // precision, odd shapes: the composition reports those) is the composition, recorded as its
  // two ops (a profile keeps the GEMM's time apart from GELU's); the kernel matches its bits.
  auto f32_cpu = [](const Tensor& t) { return t.defined() && t.is_cpu() && t.dtype() == DType::f32; };
  if (!grad_enabled() && cpu_gemm_precision() == GemmPrecision::bf16 && f32_cpu(x) &&
      f32_cpu(weight) && f32_cpu(bias) && weight.ndim() == 2 && bias.ndim() == 1 && x.ndim() >= 1 &&
      weight.size(1) > 0 && x.size(-1) == weight.size(1) && bias.size(0) == weight.size(0)) {
    const int64_t in = weight.size(1), out = weight.size(0), rows = leading_rows(x.shape());
    const Tensor x2 = ops::packed(x), b = ops::packed(bias);
    Shape out_shape = x.shape();
    out_shape.back() = out;
    Tensor y = Tensor::empty(out_shape, x.dtype(), x.device());
    const FrozenWeights* table = frozen_weights();
    bool done = false;
    if (const cpu::AmxBf16Weights* amx = table ? table->find_amx(weight) : nullptr) {
      cpu::amx_bf16_linear(y.data<float>(), out, x2.data<float>(), in, rows, *amx, b.data<float>(),
                           /*gelu=*/true);
      done = true;
    } else {
      const MatrixArg W = matrix_arg(weight);
      done = cpu::gemm_bias_gelu(!W.trans, rows, out, in, x2.data<float>(), in, W.t.data<float>(),
                                 W.ld, b.data<float>(), y.data<float>(), out);
    }
    if (done) return record("linear_gelu", {x, weight, bias}, y, nullptr);
  }
  return bias_gelu(linear(x, weight), bias);
}

}  // namespace mase
