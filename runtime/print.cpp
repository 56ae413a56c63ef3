// runtime/print.cpp — printing tensors: a header line, then nested rows, PyTorch-like.
// Large tensors show the first and last 3 entries of each dim with "..." between.
#include <cmath>
#include <iomanip>
#include <sstream>

#include "runtime/tensor.h"

namespace mase {
namespace {

constexpr int64_t kEdge = 3;  // entries shown at each end of a long dim

void print_rec(std::ostream& os, const std::vector<double>& v, const Shape& shape,
               const Strides& st, size_t dim, int64_t off, int indent, bool is_int) {
  if (dim == shape.size()) {
    double x = v[off];
    if (is_int) os << static_cast<long long>(x);
    else os << std::setprecision(4) << x;
    return;
  }
  os << "[";
  const int64_t n = shape[dim];
  for (int64_t i = 0; i < n; ++i) {
    if (n > 2 * kEdge + 1 && i == kEdge) {
      os << (dim + 1 == shape.size() ? "..., " : "...,\n" + std::string(indent + 1, ' '));
      i = n - kEdge;
    }
    print_rec(os, v, shape, st, dim + 1, off + i * st[dim], indent + 1, is_int);
    if (i + 1 < n) os << (dim + 1 == shape.size() ? ", " : ",\n" + std::string(indent + 1, ' '));
  }
  os << "]";
}

}  // namespace

std::string Tensor::str() const {
  if (!defined()) return "tensor(undefined)";
  std::ostringstream os;
  os << "tensor(" << shape() << ", " << dtype() << ", " << device();
  if (requires_grad()) os << ", requires_grad";
  os << ")\n";
  std::vector<double> v = to_vector<double>();  // packed, row-major
  print_rec(os, v, shape(), contiguous_strides(shape()), 0, 0, 0, !is_floating(dtype()));
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.str(); }

}  // namespace mase
