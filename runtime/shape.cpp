// runtime/shape.cpp — shape arithmetic (see shape.h).
#include "runtime/shape.h"

#include <algorithm>

#include "runtime/error.h"

namespace mase {

int64_t numel(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

Strides contiguous_strides(const Shape& shape) {
  Strides st(shape.size());
  int64_t s = 1;
  for (size_t i = shape.size(); i-- > 0;) {
    st[i] = s;
    s *= shape[i];
  }
  return st;
}

std::string to_string(const Shape& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += ", ";
    s += std::to_string(shape[i]);
  }
  return s + ")";
}

int normalize_dim(int64_t dim, int64_t ndim, std::string_view op) {
  int64_t d = dim < 0 ? dim + ndim : dim;
  MASE_CHECK(d >= 0 && d < ndim, ShapeError, "[", op, "] dim ", dim, " out of range for a ", ndim,
             "-d tensor (expected ", -ndim, "..", ndim - 1, ")");
  return static_cast<int>(d);
}

Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    // align from the right: dims missing on the left count as 1
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    MASE_CHECK(da == db || da == 1 || db == 1, ShapeError, "[", op, "] shapes ", to_string(a),
               " and ", to_string(b), " do not broadcast (dim ", i, ": ", da, " vs ", db, ")");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& to) {
  Strides out(to.size(), 0);
  size_t lead = to.size() - shape.size();
  for (size_t i = 0; i < shape.size(); ++i)
    out[lead + i] = shape[i] == to[lead + i] ? strides[i] : 0;  // size 1 -> broadcast
  return out;
}

}  // namespace mase
