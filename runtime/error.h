// runtime/error.h — the typed errors every layer throws.
//
// House rule: library code never aborts or exits. A user error throws one of these, with a
// message of the form "[op] expected …, got … (hint)". Only the CLI mains catch them, print
// the one line and exit non-zero. Read next: dtype.h, device.h, tensor.h.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace mase {

struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct ShapeError : Error { using Error::Error; };    // mismatched or out-of-range shapes/dims
struct DTypeError : Error { using Error::Error; };    // wrong element type
struct DeviceError : Error { using Error::Error; };   // cpu vs cuda mix-ups, no GPU, no CUDA build
struct IoError : Error { using Error::Error; };       // files: missing, truncated, hostile
struct ConfigError : Error { using Error::Error; };   // bad flags, configs, hyper-parameters
struct AutogradError : Error { using Error::Error; }; // backward misuse (freed graph, no seed)

// cat("a", 1, 'b') -> "a1b": builds messages from anything that has operator<<.
template <class... Args>
std::string cat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}

}  // namespace mase

// MASE_CHECK(cond, ShapeError, "[matmul] inner dims differ: a is ", a.shape(), ...)
// Throws mase::ShapeError with the concatenated message when cond is false.
#define MASE_CHECK(cond, ErrorType, ...)                          \
  do {                                                            \
    if (!(cond)) throw ::mase::ErrorType(::mase::cat(__VA_ARGS__)); \
  } while (0)
