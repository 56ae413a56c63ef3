// autograd/ops/cross_entropy.cpp — softmax cross-entropy loss, fused (the MLM and
// classification loss of BERT).
//
// logits (N, C), targets (N) i32. For each row r not ignored (targets[r] != ignore_index):
//   loss_r = −log softmax(x_r)[t_r] = logsumexp(x_r) − x_r[t_r]
//   loss   = Σ_r loss_r / count,            count = number of rows not ignored
// Backward (∂ logsumexp / ∂x = softmax(x)):
//   dlogits_r = (softmax(x_r) − onehot(t_r))·dloss / count,   0 for ignored rows
//
// Fused: the forward never materialises log_softmax (N, C); it keeps the logsumexp of each
// row (N), from which the backward recovers softmax(x_r) = exp(x_r − lse_r) in one pass.
//
// All rows ignored (count == 0): PyTorch returns 0/0 = NaN. mase returns loss 0 with a zero
// gradient, so a batch that happens to have no masked-LM target cannot poison training.
// CPU targets are validated on the host, so a bad label is a ShapeError naming its row
// instead of an out-of-bounds read. CUDA targets are counted and checked on the GPU
// (cuda::cross_entropy_count): reading them on the host would stop the GPU's queue in the
// middle of every training step. There a bad label makes the loss NaN (never an out-of-bounds
// read); train/train_step.cpp checks the labels on the host before they go to the GPU.
//
// Reference: Goodfellow et al., Deep Learning §6.2.2.3; llm.c's crossentropy_softmax_backward.
// Kernels: runtime/cpu/cross_entropy.cpp, cuda/cross_entropy.cu.
// Tests: tests/autograd/test_cross_entropy.cpp.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/cross_entropy.h"

namespace mase {
namespace {

// Checks the arguments (not the targets' values).
void check_args(const char* op, const Tensor& logits, const Tensor& targets) {
  ops::check_float(op, logits, "logits");
  ops::check_cuda_f32(op, logits);
  ops::check_dtype(op, targets, DType::i32, "targets");
  MASE_CHECK(logits.device() == targets.device(), DeviceError, "[", op,
             "] expected logits and targets on the same device, got ", logits.device(), " and ",
             targets.device(), " (move one with .to())");
  MASE_CHECK(logits.ndim() == 2, ShapeError, "[", op, "] expected logits of shape (N, C), got ",
             logits.shape(), " (reshape (B, T, V) logits to (B*T, V))");
  const int64_t N = logits.size(0);
  MASE_CHECK(targets.ndim() == 1 && targets.size(0) == N, ShapeError, "[", op,
             "] expected targets of shape (", N, ") for logits ", logits.shape(), ", got ",
             targets.shape());
}

// Checks the arguments and the targets' values on the host; returns the number of rows that
// are not ignored.
int64_t check_and_count(const char* op, const Tensor& logits, const Tensor& targets,
                        int64_t ignore_index) {
  check_args(op, logits, targets);
  const int64_t N = logits.size(0), C = logits.size(1);
  int64_t count = 0;
  std::vector<int32_t> t = targets.to_vector<int32_t>();
  for (int64_t r = 0; r < N; ++r) {
    if (t[r] == ignore_index) continue;
    MASE_CHECK(t[r] >= 0 && t[r] < C, ShapeError, "[", op, "] expected targets in [0, ", C,
               ") or ignore_index (", ignore_index, "), got ", t[r], " at row ", r);
    ++count;
  }
  return count;
}

}  // namespace

Tensor cross_entropy(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  check_args("cross_entropy", logits, targets);
  // CPU: counted (and checked) on the host; CUDA: on the device, into `dcount` (see the top)
  const int64_t count =
      logits.is_cuda() ? -1 : check_and_count("cross_entropy", logits, targets, ignore_index);
  const int64_t N = logits.size(0), C = logits.size(1);
  Tensor x = ops::packed(logits), t = ops::packed(targets);
  Tensor loss = Tensor::empty(Shape{}, x.dtype(), x.device());
  Tensor losses = Tensor::empty({N}, x.dtype(), x.device());  // per row, a scratch for the mean
  Tensor lse = Tensor::empty({N}, x.dtype(), x.device());     // saved for backward
  Tensor dcount;                                              // CUDA: the count, on the device
  if (x.is_cuda()) {
    dcount = Tensor::empty({1}, DType::i32, x.device());
    cuda::cross_entropy_count(dcount.data<int32_t>(), t.data<int32_t>(), N, C, ignore_index);
    cuda::cross_entropy_forward(loss.data<float>(), losses.data<float>(), lse.data<float>(),
                                x.data<float>(), t.data<int32_t>(), N, C, ignore_index,
                                dcount.data<int32_t>());
  } else {
    dispatch_float(x.dtype(), "cross_entropy", [&]<class T>() {
      cpu::cross_entropy_forward<T>(loss.data<T>(), losses.data<T>(), lse.data<T>(), x.data<T>(),
                                    t.data<int32_t>(), N, C, ignore_index, count);
    });
  }

  return record("cross_entropy", {logits, targets}, loss,
                [x, t, lse, dcount, N, C, ignore_index, count](const Tensor& dout) -> Tensors {
    // dlogits = (softmax(x) - onehot(t)) * dloss / count, 0 for ignored rows
    Tensor dloss = ops::packed(dout);
    Tensor dx = Tensor::empty(x.shape(), x.dtype(), x.device());
    if (dx.is_cuda()) {
      cuda::cross_entropy_backward(dx.data<float>(), dloss.data<float>(), x.data<float>(),
                                   lse.data<float>(), t.data<int32_t>(), N, C, ignore_index,
                                   dcount.data<int32_t>());
    } else {
      dispatch_float(dx.dtype(), "cross_entropy", [&]<class T>() {
        cpu::cross_entropy_backward<T>(dx.data<T>(), dloss.data<T>(), x.data<T>(), lse.data<T>(),
                                       t.data<int32_t>(), N, C, ignore_index, count);
      });
    }
    return {dx, Tensor()};  // targets get no gradient
  }, {{"ignore_index", ignore_index}});
}

// The same maths from primitive ops: −Σ log_softmax_reference(logits) ⊙ W with the weights
// W[r, c] = [c == t_r] / count built on the host (0 on ignored rows).
Tensor cross_entropy_reference(const Tensor& logits, const Tensor& targets, int64_t ignore_index) {
  const int64_t count = check_and_count("cross_entropy_reference", logits, targets, ignore_index);
  const int64_t N = logits.size(0), C = logits.size(1);
  std::vector<int32_t> t = targets.to_vector<int32_t>();
  std::vector<double> w(static_cast<size_t>(N * C), 0.0);
  for (int64_t r = 0; r < N; ++r)
    if (t[r] != ignore_index) w[r * C + t[r]] = 1.0 / double(count);
  Tensor weights = Tensor::from(w, {N, C}).to(logits.dtype()).to(logits.device());
  return -sum(log_softmax_reference(logits) * weights);
}

}  // namespace mase
