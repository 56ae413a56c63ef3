// autograd/ops/embedding.cpp — embedding: a table lookup, the first layer of BERT.
//
//   forward    out[..., :] = weight[ids[...], :]          ids (...) i32, weight (V, C) -> (..., C)
//   backward   dweight[v] = Σ_{n : ids[n] = v} dout[n]    (zeros elsewhere; ids get no gradient)
//
// It is torch.nn.functional.embedding. A token that appears twice in a batch gets both of its
// rows' gradients: the backward is a scatter-ADD, done deterministically (runtime/cpu/
// embedding.cpp explains how). dweight is dense (V, C) — for BERT's 30522 × 768 that is 94 MB
// per backward, the price of keeping the optimizers simple (PyTorch's sparse=False default).
// Kernels: runtime/cpu/embedding.cpp, cuda/embedding.cu.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/embedding.h"

namespace mase {
namespace {

// Every id must index a row of weight: a bad id would read outside the table. The CPU kernels
// trust the ids, so the op checks CPU ids here (N ints: the scan costs little next to the
// gather). CUDA ids are not copied back to be checked — that would make the host wait for the
// GPU in every forward — the CUDA kernels guard themselves instead: a bad id gives a NaN row
// (runtime/kernels/embedding.h), and train/train_step.cpp checks a batch's ids on the host
// before they go to the GPU.
void check_ids(const Tensor& ids, int64_t V, const Shape& weight_shape) {
  Tensor host = ids.detach().to(Device::cpu()).contiguous();
  const int32_t* p = host.data<int32_t>();
  for (int64_t i = 0; i < host.numel(); ++i)
    MASE_CHECK(p[i] >= 0 && p[i] < V, ShapeError, "[embedding] expected ids in [0, ", V,
               "), got id ", p[i], " at flat index ", i, " (weight is ", weight_shape,
               ": does the tokenizer's vocabulary match it?)");
}

}  // namespace

Tensor embedding(const Tensor& ids, const Tensor& weight) {
  ops::check_dtype("embedding", ids, DType::i32, "ids");
  ops::check_float("embedding", weight, "weight");
  ops::check_cuda_f32("embedding", weight);
  ops::check_same_device("embedding", ids, weight);
  MASE_CHECK(weight.ndim() == 2, ShapeError, "[embedding] expected weight (V, C), got ",
             weight.shape());
  const int64_t V = weight.size(0), C = weight.size(1), N = ids.numel();
  if (!ids.is_cuda()) check_ids(ids, V, weight.shape());

  Tensor idsc = ops::packed(ids), wc = ops::packed(weight);  // ids (N), weight (V, C)
  Shape out_shape = ids.shape();
  out_shape.push_back(C);
  Tensor out = Tensor::empty(out_shape, weight.dtype(), weight.device());  // out (N, C)
  if (weight.is_cuda())
    cuda::embedding_forward(out.data<float>(), idsc.data<int32_t>(), wc.data<float>(), N, C, V);
  else
    dispatch_float(weight.dtype(), "embedding", [&]<class T>() {
      cpu::embedding_forward<T>(out.data<T>(), idsc.data<int32_t>(), wc.data<T>(), N, C);
    });

  return record("embedding", {ids, weight}, out, [idsc, V, C, N](const Tensor& dout) -> Tensors {
    // dweight[v] = Σ_{n : ids[n] = v} dout[n]
    Tensor doutc = ops::packed(dout);  // (N, C)
    Tensor dweight = Tensor::zeros({V, C}, dout.dtype(), dout.device());
    if (dout.is_cuda())
      cuda::embedding_backward(dweight.data<float>(), doutc.data<float>(), idsc.data<int32_t>(), N,
                               C, V);
    else
      dispatch_float(dout.dtype(), "embedding", [&]<class T>() {
        cpu::embedding_backward<T>(dweight.data<T>(), doutc.data<T>(), idsc.data<int32_t>(), N, C);
      });
    return {Tensor(), dweight};
  });
}

}  // namespace mase
