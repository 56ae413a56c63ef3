// autograd/ops/factory.cpp — tensors made from another tensor's shape: ones_like, zeros_like,
// arange_like.
//
//   ones_like(x, dtype)         y = 1 everywhere, x's shape and device    dx: none
//   zeros_like(x, dtype)        y = 0 everywhere                          dx: none
//   arange_like(x, dim, dtype)  y = 0, 1, …, x.size(dim) − 1  (1-d)       dx: none
//
// Why they are ops and not raw factories (Tensor::ones): a model that builds a tensor inside
// its forward — BERT's all-ones attention mask when none is given, its position ids, its
// all-zero token types — must show that step to an observer, or a traced graph would freeze
// the example batch's tensor in as a constant (wrong for the next batch). Recorded, they
// become nodes (`ones_like` in the graph of BERT traced without attention_mask) and re-run on
// each call. The values do not depend on x's values, so x gets no gradient.
// Kernels: Tensor::full's fill; arange_like a host iota, or cuda::iota on the GPU.
#include <numeric>

#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/copy.h"

namespace mase {
namespace {

Tensor no_grad_record(const char* op, const Tensor& x, Tensor y, Attrs attrs) {
  return record(
      op, {x}, std::move(y), [](const Tensor&) -> Tensors { return {Tensor()}; }, std::move(attrs));
}

}  // namespace

Tensor ones_like(const Tensor& x, DType dtype) {
  ops::check_defined("ones_like", x);
  return no_grad_record("ones_like", x, Tensor::ones(x.shape(), dtype, x.device()),
                        {{"dtype", std::string(name(dtype))}});
}

Tensor zeros_like(const Tensor& x, DType dtype) {
  ops::check_defined("zeros_like", x);
  return no_grad_record("zeros_like", x, Tensor::zeros(x.shape(), dtype, x.device()),
                        {{"dtype", std::string(name(dtype))}});
}

Tensor arange_like(const Tensor& x, int64_t dim, DType dtype) {
  ops::check_defined("arange_like", x);
  const int d = normalize_dim(dim, x.ndim(), "arange_like");
  Tensor y;
  if (x.is_cuda()) {  // on the device: a host iota would be a copy from pageable memory
    y = Tensor::empty({x.size(d)}, dtype, x.device());
    cuda::iota(y.raw_data(), dtype, x.size(d), x.device().index);
  } else {
    std::vector<double> values(static_cast<size_t>(x.size(d)));
    std::iota(values.begin(), values.end(), 0.0);  // exact in every dtype up to 2^24 (f32)
    y = Tensor::from(values, {x.size(d)}).to(dtype);
  }
  return no_grad_record("arange_like", x, y, {{"dim", dim}, {"dtype", std::string(name(dtype))}});
}

}  // namespace mase
