// runtime/dtype.h — the element types mase-cpp needs, and no more.
//
// f32 is for math, f64 only for gradient checks (central differences need the precision),
// i32 for token ids and labels, i8/u8 for packed quantized data and boolean masks.
#pragma once
#include <cstddef>
#include <cstdint>
#include <ostream>
#include <string_view>

#include "runtime/error.h"

namespace mase {

enum class DType : uint8_t { f32, f64, i32, i8, u8 };

constexpr size_t itemsize(DType t) {
  switch (t) {
    case DType::f32: return 4;
    case DType::f64: return 8;
    case DType::i32: return 4;
    case DType::i8: return 1;
    case DType::u8: return 1;
  }
  return 0;
}

constexpr std::string_view name(DType t) {
  switch (t) {
    case DType::f32: return "f32";
    case DType::f64: return "f64";
    case DType::i32: return "i32";
    case DType::i8: return "i8";
    case DType::u8: return "u8";
  }
  return "?";
}

inline std::ostream& operator<<(std::ostream& os, DType t) { return os << name(t); }

constexpr bool is_floating(DType t) { return t == DType::f32 || t == DType::f64; }

// The DType of a C++ element type: dtype_of<float> == DType::f32.
template <class T> constexpr DType dtype_of();
template <> constexpr DType dtype_of<float>() { return DType::f32; }
template <> constexpr DType dtype_of<double>() { return DType::f64; }
template <> constexpr DType dtype_of<int32_t>() { return DType::i32; }
template <> constexpr DType dtype_of<int8_t>() { return DType::i8; }
template <> constexpr DType dtype_of<uint8_t>() { return DType::u8; }

// Calls f.template operator()<T>() with T = float or double, matching `t`.
// Kernels are templates over the element type; ops pick the instance here:
//   dispatch_float(x.dtype(), "gelu", [&]<class T>() { cpu::gelu_forward<T>(...); });
template <class F>
decltype(auto) dispatch_float(DType t, std::string_view op, F&& f) {
  switch (t) {
    case DType::f32: return f.template operator()<float>();
    case DType::f64: return f.template operator()<double>();
    default:
      throw DTypeError(cat("[", op, "] expected a floating dtype (f32 or f64), got ", t));
  }
}

}  // namespace mase
