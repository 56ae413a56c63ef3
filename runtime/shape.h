// runtime/shape.h — shapes and strides, and the small helpers every op uses on them.
//
// Shapes print as "(8, 128, 768)". Strides count elements, not bytes. A dim argument may be
// negative (-1 = last), as in PyTorch; normalize_dim turns it into 0..ndim-1 or throws.
#pragma once
#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace mase {

// A Shape is a vector of sizes with its own type, so that `os << shape` prints "(2, 3)".
struct Shape : std::vector<int64_t> {
  using std::vector<int64_t>::vector;
  Shape(std::vector<int64_t> v) : std::vector<int64_t>(std::move(v)) {}
};
using Strides = std::vector<int64_t>;

int64_t numel(const Shape& shape);
Strides contiguous_strides(const Shape& shape);  // row-major: last dim has stride 1
std::string to_string(const Shape& shape);       // "(8, 128, 768)"

// -1 -> ndim-1; out of range -> ShapeError "[op] dim 3 out of range for a 2-d tensor".
int normalize_dim(int64_t dim, int64_t ndim, std::string_view op);

// The shape two operands broadcast to (NumPy rules), or ShapeError naming both shapes.
Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op);

// Strides that read a tensor of (shape, strides) as if it had shape `to` (which it must
// broadcast to): stride 0 on every dim that is broadcast, including missing leading dims.
Strides broadcast_strides(const Shape& shape, const Strides& strides, const Shape& to);

inline std::ostream& operator<<(std::ostream& os, const Shape& s) { return os << to_string(s); }

}  // namespace mase
