// autograd/ops/reduce.cpp — sum and mean over dims, amax over one dim.
//
//   y = Σ_{dims} x         dx = dy broadcast back over the reduced dims
//   y = Σ_{dims} x / n     dx = dy / n broadcast back  (n = number of elements reduced)
//   y = max_{dim} x        dx = dy / k where x == y (the k elements that tie for the max), else 0
//                          (an empty dim is a ShapeError, as in torch.amax: no identity −inf)
//
// Adjacent reduced dims are merged and reduced in one (outer, reduce, inner) pass
// (runtime/cpu/reduce.cpp, cuda/reduce.cu); non-adjacent groups are reduced one after another.
#include <algorithm>

#include "autograd/ops.h"
#include "autograd/ops/common.h"
#include "runtime/kernels/reduce.h"

namespace mase {
namespace {

std::vector<int64_t> normalized_dims(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  std::vector<int64_t> d;
  for (int64_t v : dims) d.push_back(normalize_dim(v, x.ndim(), op));
  std::sort(d.begin(), d.end());
  MASE_CHECK(std::adjacent_find(d.begin(), d.end()) == d.end(), ShapeError, "[", op,
             "] dims must be distinct");
  return d;
}

// Σ over the sorted, distinct `dims` of x, keeping them as size-1 dims. No autograd.
Tensor sum_keepdim_raw(const Tensor& x, const std::vector<int64_t>& dims, const char* op) {
  Tensor cur = ops::packed(x);  // a new handle even when no dim is reduced
  // reduce groups of adjacent dims, last group first, so earlier dim indices stay valid
  size_t g_end = dims.size();
  while (g_end > 0) {
    size_t g_begin = g_end - 1;
    while (g_begin > 0 && dims[g_begin - 1] == dims[g_begin] - 1) --g_begin;
    int64_t d0 = dims[g_begin], d1 = dims[g_end - 1];
    const Shape& s = cur.shape();
    int64_t outer = 1, red = 1, inner = 1;
    for (int64_t d = 0; d < cur.ndim(); ++d) {
      if (d < d0) outer *= s[d];
      else if (d <= d1) red *= s[d];
      else inner *= s[d];
    }
    Shape out_shape = s;
    for (int64_t d = d0; d <= d1; ++d) out_shape[d] = 1;
    Tensor out = Tensor::empty(out_shape, x.dtype(), x.device());
    if (x.is_cuda())
      cuda::sum_forward(out.data<float>(), cur.data<float>(), outer, red, inner);
    else
      dispatch_float(x.dtype(), op, [&]<class T>() {
        cpu::sum_forward<T>(out.data<T>(), cur.data<T>(), outer, red, inner);
      });
    cur = out;
    g_end = g_begin;
  }
  return cur;
}

Shape squeezed(const Shape& s, const std::vector<int64_t>& dims) {
  Shape out;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    if (!std::binary_search(dims.begin(), dims.end(), d)) out.push_back(s[d]);
  return out;
}

// dx = dy (reshaped to keepdim form) broadcast to x's shape, times `scale`
Tensor broadcast_back(const Tensor& dy, const Shape& keep_shape, const Shape& x_shape, double scale) {
  Tensor d = expand(reshape(dy, keep_shape), x_shape);
  return scale == 1.0 ? contiguous(d) : mul(d, scale);
}

Tensor reduce(const Tensor& x, const std::vector<int64_t>& dims_in, bool keepdim, bool is_mean) {
  const char* op = is_mean ? "mean" : "sum";
  ops::check_float(op, x);
  ops::check_cuda_f32(op, x);
  std::vector<int64_t> dims = normalized_dims(x, dims_in, op);
  int64_t n = 1;
  for (int64_t d : dims) n *= x.shape()[d];
  Tensor y = sum_keepdim_raw(x, dims, op);
  if (is_mean) {
    NoGradGuard ng;
    y = mul(y, 1.0 / static_cast<double>(n));
  }
  Shape keep_shape = y.shape();
  // y is packed; with no dim reduced it may still be x's own storage at x's offset (a 0-d
  // select), so the squeezed view keeps y's offset
  if (!keepdim) {
    Shape s = squeezed(keep_shape, dims);
    y = y.as_strided(s, contiguous_strides(s), y.offset());
  }
  double scale = is_mean ? 1.0 / static_cast<double>(n) : 1.0;
  return record(op, {x}, y, [keep_shape, xs = x.shape(), scale](const Tensor& dy) -> Tensors {
    return {broadcast_back(dy, keep_shape, xs, scale)};  // dx = dy (· 1/n) over reduced dims
  }, {{"dims", dims_in}, {"keepdim", keepdim}});
}

std::vector<int64_t> all_dims(const Tensor& x) {
  std::vector<int64_t> d(x.ndim());
  for (int64_t i = 0; i < x.ndim(); ++i) d[i] = i;
  return d;
}

// The (outer, reduce, inner) sizes of x around `dim`.
struct AroundDim {
  int64_t outer = 1, reduce = 1, inner = 1;
};
AroundDim around(const Shape& s, int64_t dim) {
  AroundDim a;
  for (int64_t d = 0; d < static_cast<int64_t>(s.size()); ++d)
    (d < dim ? a.outer : d == dim ? a.reduce : a.inner) *= s[d];
  return a;
}

}  // namespace

Tensor amax(const Tensor& x, int64_t dim_in, bool keepdim) {
  ops::check_float("amax", x);
  ops::check_cuda_f32("amax", x);
  const int64_t dim = normalize_dim(dim_in, x.ndim(), "amax");
  // the kernels would give −inf (max's identity); torch.amax raises. Before the backend is
  // chosen, so that CPU and CUDA refuse alike
  MASE_CHECK(x.shape()[dim] > 0, ShapeError, "[amax] expected a non-empty dim ", dim_in,
             ", got shape ", x.shape(), " (a max of no elements has no value)");
  Shape keep_shape = x.shape();
  keep_shape[dim] = 1;
  const AroundDim n = around(x.shape(), dim);
  const Tensor xc = ops::packed(x);
  Tensor y = Tensor::empty(keep_shape, x.dtype(), x.device());
  if (x.is_cuda())
    cuda::max_forward(y.data<float>(), xc.data<float>(), n.outer, n.reduce, n.inner);
  else
    dispatch_float(x.dtype(), "amax", [&]<class T>() {
      cpu::max_forward<T>(y.data<T>(), xc.data<T>(), n.outer, n.reduce, n.inner);
    });
  const Tensor y_keep = y;
  if (!keepdim) {
    const Shape s = squeezed(keep_shape, {dim});
    y = y.as_strided(s, contiguous_strides(s), 0);
  }
  return record("amax", {x}, y, [xc, y_keep, n](const Tensor& dy) -> Tensors {
    // dx = dy / k where x == max (k ties), else 0
    Tensor dyc = ops::packed(dy);
    Tensor dx = Tensor::empty(xc.shape(), xc.dtype(), xc.device());
    if (dx.is_cuda())
      cuda::max_backward(dx.data<float>(), dyc.data<float>(), xc.data<float>(),
                         y_keep.data<float>(), n.outer, n.reduce, n.inner);
    else
      dispatch_float(dx.dtype(), "amax", [&]<class T>() {
        cpu::max_backward<T>(dx.data<T>(), dyc.data<T>(), xc.data<T>(), y_keep.data<T>(),
                             n.outer, n.reduce, n.inner);
      });
    return {dx};
  }, {{"dim", dim_in}, {"keepdim", keepdim}});
}

Tensor sum(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(x, dims, keepdim, false);
}
Tensor mean(const Tensor& x, const std::vector<int64_t>& dims, bool keepdim) {
  return reduce(x, dims, keepdim, true);
}
Tensor sum(const Tensor& x) { return reduce(x, all_dims(x), false, false); }
Tensor mean(const Tensor& x) { return reduce(x, all_dims(x), false, true); }

}  // namespace mase
