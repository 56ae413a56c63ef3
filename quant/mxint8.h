// quant/mxint8.h — MXINT8 for real: packed storage, pack / unpack, and the bytes it saves.
//
// A tensor of shape (..., K) is stored as
//   elements  int8, shape (..., K)            the q of each element, 1 sign + 7 magnitude bits
//   scales    uint8, shape (..., ceil(K/32))  one E8M0 exponent per block of 32 along K
// and means 2^(s−127)·q/64 (formats.md; kernels and the bf16 trick: runtime/kernels/mxint8.h).
// pack and unpack run on the tensor's device: CPU kernels, or their CUDA twins (cuda/mxint8.cu).
// unpack(pack(x)) equals quantize(x, mxint8) exactly.
//
// Memory: K + ceil(K/32) bytes per row instead of 4K, i.e. 8 + 8/32 = 8.25 bits per element
// when 32 divides K, a saving of (32 − 8.25)/32 = 74.2% on the quantized tensors only.
// BytesReport shows that arithmetic for one tensor or a sum of them.
#pragma once
#include <cstdint>
#include <string>

#include "runtime/tensor.h"

namespace mase::quant {

struct MxInt8Tensor {
  Tensor elements;  // i8, the logical shape (..., K)
  Tensor scales;    // u8, (..., ceil(K/32))

  const Shape& shape() const { return elements.shape(); }
  int64_t cols() const;  // K
  int64_t rows() const;  // numel / K
  Device device() const { return elements.device(); }
  size_t nbytes() const { return elements.nbytes() + scales.nbytes(); }
};

enum class Dequant { multiply, bf16 };

// x: f32, contiguous or not, CPU or CUDA, at least 1-D.
MxInt8Tensor mxint8_pack(const Tensor& x);
// An f32 tensor of the logical shape, on the same device (no autograd).
Tensor mxint8_unpack(const MxInt8Tensor& p, Dequant how = Dequant::multiply);

// How many elements are exactly zero: code 0 in a block whose scale is not NaN (0xFF), read
// from the packed bytes without dequantizing (a CUDA tensor's bytes are copied to the host
// first: 1.03 B per element, one tensor at a time). Pruned weights packed as MXINT8 are such
// zeros, as is any weight below half the step of its block.
int64_t mxint8_zeros(const MxInt8Tensor& p);

// y = x·dequant(W)ᵀ + b on a GPU with W kept packed: the GEMM decodes the weight tile by tile
// as it stages it into shared memory (cuda/mxint8_linear.cu), so no fp32 copy of W is made.
// x (..., in) f32 on CUDA; w packed (out, in) on the same device; bias (out) or undefined.
// Equal to linear(x, mxint8_unpack(w), bias) within rounding (another GEMM's summation order).
// Backward: dx = dy·dequant(W) (through a temporary dequantized W), db = Σ dy; the packed
// weight is not trainable. MxInt8Linear (quant/mxint8_linear.h) calls it for CUDA inputs.
Tensor mxint8_linear(const Tensor& x, const MxInt8Tensor& w, const Tensor& bias = Tensor());

// Bytes of fp32 vs packed MXINT8 for one or more tensors.
struct BytesReport {
  int64_t tensors = 0;
  int64_t elements = 0;     // quantized elements
  int64_t scale_bytes = 0;  // one per block of ≤ 32 along the last dim

  void add(const Shape& shape);  // a tensor of this shape, blocks along its last dim
  int64_t fp32_bytes() const { return 4 * elements; }
  int64_t packed_bytes() const { return elements + scale_bytes; }
  double bits_per_element() const { return elements ? 8.0 * double(packed_bytes()) / double(elements) : 0; }
  double saving() const { return elements ? 1.0 - double(packed_bytes()) / double(fp32_bytes()) : 0; }
  // The arithmetic, one line each for fp32, packed, bits per element and saving.
  std::string str() const;
};

}  // namespace mase::quant
