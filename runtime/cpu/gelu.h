// runtime/cpu/gelu.h — exact (erf) GELU and its derivative, elementwise (twin: cuda/gelu.h).
#pragma once
#include <cstdint>

namespace mase::cpu {

// out = inp · Φ(inp), Φ the standard normal CDF, over n packed elements.
template <class T>
void gelu_forward(T* out, const T* inp, int64_t n);
// dinp = dout · (Φ(inp) + inp · φ(inp)), φ the standard normal density.
template <class T>
void gelu_backward(T* dinp, const T* dout, const T* inp, int64_t n);

}  // namespace mase::cpu
