// runtime/cpu/unary.h — elementwise y = f(x) and its backward (twin: cuda/unary.h).
#pragma once
#include <cstdint>

namespace mase {
enum class UnaryOp : uint8_t { neg, exp, log, sqrt, tanh, relu };
}

namespace mase::cpu {

// out[i] = f(inp[i]) over n packed elements.
template <class T>
void unary_forward(UnaryOp op, T* out, const T* inp, int64_t n);

// dinp[i] = dout[i] · f'(inp[i]), written with whichever of inp / out is cheaper:
// exp: dout·out, log: dout/inp, sqrt: dout/(2·out), tanh: dout·(1-out²), relu: dout·[inp>0].
template <class T>
void unary_backward(UnaryOp op, T* dinp, const T* dout, const T* inp, const T* out, int64_t n);

}  // namespace mase::cpu
