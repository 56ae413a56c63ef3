// autograd/ops/view.cpp — shape ops. Most are views: a new (shape, strides, offset) over the
// same storage, no data moved. Their backward moves the gradient back to the input's layout.
//
//   reshape/view/squeeze/unsqueeze   dx = reshape(dy, x.shape)
//   transpose(d0, d1)                dx = transpose(dy, d0, d1)
//   permute(p)                       dx = permute(dy, p⁻¹)
//   slice/select                     dx = zeros(x.shape) with dy written into the slice
//   expand                           dx = sum_to(dy, x.shape)
//   contiguous, to_dtype             dx = dy (converted back; to_dtype also turns i32/u8
//                                    masks into floats, which get no gradient)
#include <numeric>

#include "autograd/ops.h"
#include "autograd/ops/common.h"

namespace mase {
namespace {

// Fill in a -1 in `shape` from x's element count; check the counts agree.
Shape infer_shape(const Shape& shape, int64_t n, const Shape& from, const char* op) {
  Shape out = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == -1) {
      MASE_CHECK(infer < 0, ShapeError, "[", op, "] only one dim may be -1, got ", shape);
      infer = static_cast<int64_t>(i);
    } else {
      MASE_CHECK(out[i] >= 0, ShapeError, "[", op, "] invalid size in ", shape);
      known *= out[i];
    }
  }
  if (infer >= 0) {
    MASE_CHECK(known > 0 && n % known == 0, ShapeError, "[", op, "] cannot reshape ", from, " (",
               n, " elements) to ", shape);
    out[infer] = n / known;
  }
  MASE_CHECK(numel(out) == n, ShapeError, "[", op, "] cannot reshape ", from, " (", n,
             " elements) to ", shape, " (", numel(out), " elements)");
  return out;
}

Tensor reshape_impl(const Tensor& x, const Shape& shape, bool allow_copy, const char* op) {
  ops::check_defined(op, x);
  Shape s = infer_shape(shape, x.numel(), x.shape(), op);
  Tensor y;
  if (x.is_contiguous()) {
    y = x.as_strided(s, contiguous_strides(s), x.offset());
  } else {
    MASE_CHECK(allow_copy, ShapeError, "[", op, "] cannot view a non-contiguous tensor ", x.shape(),
               " as ", shape, " (use reshape, which copies, or contiguous() first)");
    Tensor c = x.detach().clone();
    y = c.as_strided(s, contiguous_strides(s), 0);
  }
  return record(op, {x}, y, [xs = x.shape()](const Tensor& dy) -> Tensors {
    return {reshape(dy, xs)};
  }, {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
}

}  // namespace

Tensor reshape(const Tensor& x, const Shape& shape) { return reshape_impl(x, shape, true, "reshape"); }
Tensor view(const Tensor& x, const Shape& shape) { return reshape_impl(x, shape, false, "view"); }

Tensor transpose(const Tensor& x, int64_t dim0, int64_t dim1) {
  ops::check_defined("transpose", x);
  int d0 = normalize_dim(dim0, x.ndim(), "transpose"), d1 = normalize_dim(dim1, x.ndim(), "transpose");
  Shape s = x.shape();
  Strides st = x.strides();
  std::swap(s[d0], s[d1]);
  std::swap(st[d0], st[d1]);
  Tensor y = x.as_strided(s, st, x.offset());
  return record("transpose", {x}, y, [d0, d1](const Tensor& dy) -> Tensors {
    return {transpose(dy, d0, d1)};
  }, {{"dim0", dim0}, {"dim1", dim1}});
}

Tensor permute(const Tensor& x, const std::vector<int64_t>& dims) {
  ops::check_defined("permute", x);
  MASE_CHECK(static_cast<int64_t>(dims.size()) == x.ndim(), ShapeError, "[permute] expected ",
             x.ndim(), " dims for a tensor of shape ", x.shape(), ", got ", dims.size());
  Shape s(x.ndim());
  Strides st(x.ndim());
  std::vector<int64_t> inverse(x.ndim(), -1);
  for (int64_t i = 0; i < x.ndim(); ++i) {
    int d = normalize_dim(dims[i], x.ndim(), "permute");
    MASE_CHECK(inverse[d] < 0, ShapeError, "[permute] dim ", d, " appears twice");
    inverse[d] = i;
    s[i] = x.shape()[d];
    st[i] = x.strides()[d];
  }
  Tensor y = x.as_strided(s, st, x.offset());
  return record("permute", {x}, y, [inverse](const Tensor& dy) -> Tensors {
    return {permute(dy, inverse)};
  }, {{"dims", dims}});
}

Tensor slice(const Tensor& x, int64_t dim, int64_t start, int64_t end, int64_t step) {
  ops::check_defined("slice", x);
  int d = normalize_dim(dim, x.ndim(), "slice");
  const int64_t n = x.shape()[d];
  MASE_CHECK(step > 0, ShapeError, "[slice] expected step > 0, got ", step);
  // Python semantics: negative indices count from the end, out-of-range ones are clamped
  auto clamp = [n](int64_t i) { return std::clamp<int64_t>(i < 0 ? i + n : i, 0, n); };
  int64_t b = clamp(start), e = std::max(clamp(end), clamp(start));
  Shape s = x.shape();
  Strides st = x.strides();
  s[d] = (e - b + step - 1) / step;
  st[d] *= step;
  Tensor y = x.as_strided(s, st, x.offset() + b * x.strides()[d]);
  return record("slice", {x}, y, [xs = x.shape(), d, b, e, step, dev = x.device(), dt = x.dtype()](const Tensor& dy) -> Tensors {
    Tensor dx = Tensor::zeros(xs, dt, dev);  // dx is 0 outside the slice, dy inside it
    copy_(slice(dx, d, b, e, step), dy);
    return {dx};
  }, {{"dim", dim}, {"start", start}, {"end", end}, {"step", step}});
}

Tensor select(const Tensor& x, int64_t dim, int64_t index) {
  ops::check_defined("select", x);
  int d = normalize_dim(dim, x.ndim(), "select");
  const int64_t n = x.shape()[d];
  MASE_CHECK(index >= -n && index < n, ShapeError, "[select] index ", index,
             " out of range for dim ", dim, " of size ", n);
  int64_t i = index < 0 ? index + n : index;
  Shape s = x.shape();
  Strides st = x.strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  Tensor y = x.as_strided(s, st, x.offset() + i * x.strides()[d]);
  return record("select", {x}, y, [xs = x.shape(), d, i, dev = x.device(), dt = x.dtype()](const Tensor& dy) -> Tensors {
    Tensor dx = Tensor::zeros(xs, dt, dev);
    copy_(select(dx, d, i), dy);
    return {dx};
  }, {{"dim", dim}, {"index", index}});
}

Tensor squeeze(const Tensor& x, int64_t dim) {
  ops::check_defined("squeeze", x);
  int d = normalize_dim(dim, x.ndim(), "squeeze");
  MASE_CHECK(x.shape()[d] == 1, ShapeError, "[squeeze] expected dim ", dim, " of size 1, got ", x.shape());
  Shape s = x.shape();
  Strides st = x.strides();
  s.erase(s.begin() + d);
  st.erase(st.begin() + d);
  Tensor y = x.as_strided(s, st, x.offset());
  return record("squeeze", {x}, y, [xs = x.shape()](const Tensor& dy) -> Tensors {
    return {reshape(dy, xs)};
  }, {{"dim", dim}});
}

Tensor unsqueeze(const Tensor& x, int64_t dim) {
  ops::check_defined("unsqueeze", x);
  int d = normalize_dim(dim, x.ndim() + 1, "unsqueeze");
  Shape s = x.shape();
  Strides st = x.strides();
  int64_t stride = d < x.ndim() ? st[d] * s[d] : 1;
  s.insert(s.begin() + d, 1);
  st.insert(st.begin() + d, stride);
  Tensor y = x.as_strided(s, st, x.offset());
  return record("unsqueeze", {x}, y, [xs = x.shape()](const Tensor& dy) -> Tensors {
    return {reshape(dy, xs)};
  }, {{"dim", dim}});
}

Tensor expand(const Tensor& x, const Shape& shape) {
  ops::check_defined("expand", x);
  MASE_CHECK(static_cast<int64_t>(shape.size()) >= x.ndim(), ShapeError, "[expand] cannot expand ",
             x.shape(), " to fewer dims ", shape);
  Shape target = shape;
  const size_t lead = shape.size() - x.shape().size();
  for (size_t i = 0; i < lead; ++i)  // new leading dims: -1 has no size to keep
    MASE_CHECK(target[i] >= 0, ShapeError, "[expand] expected a size >= 0 for new dim ", i,
               ", got ", shape, " (-1 keeps an existing dim only)");
  for (size_t i = 0; i < x.shape().size(); ++i) {
    if (target[lead + i] == -1) target[lead + i] = x.shape()[i];
    const int64_t want = target[lead + i];
    MASE_CHECK(x.shape()[i] == want || (x.shape()[i] == 1 && want >= 0), ShapeError,
               "[expand] cannot expand ", x.shape(), " to ", shape, " (dim ", lead + i, ")");
  }
  Tensor y = x.as_strided(target, broadcast_strides(x.shape(), x.strides(), target), x.offset());
  return record("expand", {x}, y, [xs = x.shape()](const Tensor& dy) -> Tensors {
    return {sum_to(dy, xs)};
  }, {{"shape", std::vector<int64_t>(shape.begin(), shape.end())}});
}

Tensor contiguous(const Tensor& x) {
  ops::check_defined("contiguous", x);
  Tensor y = ops::packed(x);  // x's values (no history: recorded below)
  return record("contiguous", {x}, y, [](const Tensor& dy) -> Tensors { return {dy}; });
}

Tensor to_dtype(const Tensor& x, DType dtype) {
  ops::check_defined("to_dtype", x);
  // copy_ converts on the tensor's own device (cuda::convert on the GPU: no host round trip)
  Tensor y = x.dtype() == dtype ? x.detach() : x.detach().to(dtype);
  return record("to_dtype", {x}, y, [from = x.dtype()](const Tensor& dy) -> Tensors {
    return {dy.to(from)};
  }, {{"dtype", std::string(name(dtype))}});
}

Tensor concat(const Tensors& xs, int64_t dim) {
  MASE_CHECK(!xs.empty(), ShapeError, "[concat] expected at least one tensor");
  const Tensor& first = xs[0];
  ops::check_defined("concat", first);
  int d = normalize_dim(dim, first.ndim(), "concat");
  Shape s = first.shape();
  s[d] = 0;
  for (const Tensor& x : xs) {
    ops::check_same("concat", first, x);
    MASE_CHECK(x.ndim() == first.ndim(), ShapeError, "[concat] expected tensors of ", first.ndim(),
               " dims, got ", x.shape(), " and ", first.shape());
    for (int64_t i = 0; i < x.ndim(); ++i)
      MASE_CHECK(i == d || x.shape()[i] == first.shape()[i], ShapeError,
                 "[concat] shapes differ outside dim ", dim, ": ", first.shape(), " and ", x.shape());
    s[d] += x.shape()[d];
  }
  Tensor y = Tensor::empty(s, first.dtype(), first.device());
  std::vector<int64_t> starts;
  int64_t at = 0;
  for (const Tensor& x : xs) {
    starts.push_back(at);
    NoGradGuard ng;
    copy_(slice(y, d, at, at + x.shape()[d]), x);
    at += x.shape()[d];
  }
  starts.push_back(at);
  return record("concat", xs, y, [d, starts](const Tensor& dy) -> Tensors {
    Tensors dxs;  // dx_i = the slice of dy that x_i was copied to
    for (size_t i = 0; i + 1 < starts.size(); ++i) dxs.push_back(contiguous(slice(dy, d, starts[i], starts[i + 1])));
    return dxs;
  }, {{"dim", dim}});
}

}  // namespace mase
