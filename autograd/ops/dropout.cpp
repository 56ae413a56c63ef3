// autograd/ops/dropout.cpp — inverted dropout with a regenerated mask.
//
//   forward    y_i = x_i · m_i / (1 - p)     m_i = [uint_to_unit(philox word i) >= p]
//   backward   dx_i = dy_i · m_i / (1 - p)   (the same mask, drawn again from (seed, offset))
//
// Srivastava et al., JMLR 2014; "inverted" = survivors are scaled up at training time so that
// evaluation is the identity. The mask is never stored: word i of the Philox stream
// (gen.seed, offset) is a pure function of i (runtime/philox.h), so backward recomputes it —
// for BERT-base that saves a (B, T, 768) byte mask per dropout site, ~30 of them per step.
// `gen.advance(numel)` reserves the counters, so two calls (or two layers) get different
// masks, and a CUDA tensor gets the very mask a CPU tensor would.
// p == 0 or !training: the identity (y is a detached view of x, the gradient passes
// unchanged, and no counters are taken). p == 1: every element dropped, y = 0.
// Kernels: runtime/cpu/dropout.cpp, cuda/dropout.cu.
#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/dropout.h"

namespace mase {
namespace {

// out = src · mask(seed, offset) · scale, packed, no autograd.
Tensor dropout_raw(const Tensor& src, uint64_t seed, uint64_t offset, uint32_t threshold,
                   double scale, const uint64_t* offset_base) {
  Tensor sc = ops::packed(src);
  Tensor out = Tensor::empty(src.shape(), src.dtype(), src.device());
  if (src.is_cuda())
    cuda::dropout_forward(out.data<float>(), sc.data<float>(), src.numel(), seed, offset,
                          threshold, static_cast<float>(scale), offset_base);
  else
    dispatch_float(src.dtype(), "dropout", [&]<class T>() {
      cpu::dropout_forward<T>(out.data<T>(), sc.data<T>(), src.numel(), seed, offset, threshold,
                              static_cast<T>(scale));
    });
  return out;
}

}  // namespace

Tensor dropout(const Tensor& x, double p, bool training, Generator& gen) {
  ops::check_float("dropout", x);
  ops::check_cuda_f32("dropout", x);
  MASE_CHECK(p >= 0.0 && p <= 1.0, ConfigError,  // written so that NaN fails too
             "[dropout] expected a drop probability p in [0, 1], got ", p,
             " (p is the fraction of elements zeroed, e.g. 0.1)");
  Attrs attrs{{"p", p}, {"training", training}};
  if (!training || p == 0.0)  // dx = dy
    return record("dropout", {x}, x.detach(), [](const Tensor& dy) -> Tensors { return {dy}; },
                  std::move(attrs));

  const uint64_t seed = gen.seed, offset = gen.advance(x.numel());
  const uint32_t threshold = dropout_threshold(p);
  const double scale = p < 1.0 ? 1.0 / (1.0 - p) : 0.0;  // p = 1 keeps nothing: scale unused
  const uint64_t* base = x.is_cuda() ? gen.device_offset_base : nullptr;  // CUDA graphs
  Tensor y = dropout_raw(x, seed, offset, threshold, scale, base);
  attrs.push_back({"seed", static_cast<int64_t>(seed)});
  attrs.push_back({"offset", static_cast<int64_t>(offset)});
  return record("dropout", {x}, y, [seed, offset, threshold, scale, base](const Tensor& dy) -> Tensors {
    return {dropout_raw(dy, seed, offset, threshold, scale, base)};  // dx = dy · m / (1 - p)
  }, std::move(attrs));
}

}  // namespace mase
