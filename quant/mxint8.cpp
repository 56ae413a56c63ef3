// quant/mxint8.cpp — MXINT8 pack / unpack (dispatch to the CPU or CUDA kernels) and the bytes
// report (see mxint8.h).
#include "quant/mxint8.h"

#include <algorithm>
#include <cstdio>

#include "autograd/ops.h"
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/mxint8_linear.h"

namespace mase::quant {

int64_t MxInt8Tensor::cols() const { return shape().empty() ? 1 : shape().back(); }
int64_t MxInt8Tensor::rows() const { return cols() ? elements.numel() / cols() : 0; }

MxInt8Tensor mxint8_pack(const Tensor& x) {
  MASE_CHECK(x.defined(), Error, "[mxint8_pack] input is an undefined tensor");
  MASE_CHECK(x.dtype() == DType::f32, DTypeError, "[mxint8_pack] expected an f32 tensor, got ", x.dtype());
  MASE_CHECK(x.ndim() >= 1, ShapeError, "[mxint8_pack] expected at least 1 dim (blocks run along the last), got a scalar");
  const Tensor xc = x.detach().contiguous();
  const int64_t K = x.size(-1), rows = K ? x.numel() / K : 0;
  Shape sshape = x.shape();
  sshape.back() = cpu::mx_blocks(K);
  MxInt8Tensor p{Tensor::empty(x.shape(), DType::i8, x.device()), Tensor::empty(sshape, DType::u8, x.device())};
  if (x.numel() == 0) return p;
  if (x.is_cuda())
    cuda::mxint8_quantize(p.elements.data<int8_t>(), p.scales.data<uint8_t>(), xc.data<float>(), rows, K);
  else
    cpu::mxint8_quantize(p.elements.data<int8_t>(), p.scales.data<uint8_t>(), xc.data<float>(), rows, K);
  return p;
}

Tensor mxint8_unpack(const MxInt8Tensor& p, Dequant how) {
  MASE_CHECK(p.elements.defined() && p.scales.defined(), Error, "[mxint8_unpack] empty MxInt8Tensor");
  MASE_CHECK(p.elements.dtype() == DType::i8 && p.scales.dtype() == DType::u8, DTypeError,
             "[mxint8_unpack] expected i8 elements and u8 scales, got ", p.elements.dtype(), " and ",
             p.scales.dtype());
  Shape want = p.shape();
  want.back() = cpu::mx_blocks(p.cols());
  MASE_CHECK(p.scales.shape() == want, ShapeError, "[mxint8_unpack] expected scales of shape ", want,
             " for elements ", p.shape(), ", got ", p.scales.shape());
  MASE_CHECK(p.scales.device() == p.device(), DeviceError, "[mxint8_unpack] elements on ", p.device(),
             " but scales on ", p.scales.device());
  const Tensor q = p.elements.contiguous(), s = p.scales.contiguous();
  Tensor out = Tensor::empty(p.shape(), DType::f32, p.device());
  if (out.numel() == 0) return out;
  const int64_t rows = p.rows(), K = p.cols();
  if (p.device().is_cuda())
    cuda::mxint8_dequantize(out.data<float>(), q.data<int8_t>(), s.data<uint8_t>(), rows, K, how == Dequant::bf16);
  else if (how == Dequant::bf16)
    cpu::mxint8_dequantize_bf16(out.data<float>(), q.data<int8_t>(), s.data<uint8_t>(), rows, K);
  else
    cpu::mxint8_dequantize(out.data<float>(), q.data<int8_t>(), s.data<uint8_t>(), rows, K);
  return out;
}

int64_t mxint8_zeros(const MxInt8Tensor& p) {
  MASE_CHECK(p.elements.defined() && p.scales.defined() && p.elements.dtype() == DType::i8 &&
                 p.scales.dtype() == DType::u8,
             DTypeError, "[mxint8_zeros] expected i8 elements and u8 scales");
  const int64_t rows = p.rows(), K = p.cols(), nb = cpu::mx_blocks(K);
  MASE_CHECK(p.scales.numel() == rows * nb, ShapeError, "[mxint8_zeros] expected ", rows * nb,
             " scales for elements ", p.shape(), ", got ", p.scales.shape());
  const Tensor q = p.elements.to(Device::cpu()).contiguous(), s = p.scales.to(Device::cpu()).contiguous();
  const int8_t* e = q.data<int8_t>();
  const uint8_t* sc = s.data<uint8_t>();
  int64_t zeros = 0;
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      if (sc[r * nb + b] == 0xFF) continue;  // a NaN block: every value NaN, code 0 included
      const int8_t* blk = e + r * K + b * cpu::kMxBlock;
      const int64_t n = std::min<int64_t>(cpu::kMxBlock, K - b * cpu::kMxBlock);
      zeros += std::count(blk, blk + n, int8_t(0));
    }
  return zeros;
}

Tensor mxint8_linear(const Tensor& x, const MxInt8Tensor& w, const Tensor& bias) {
  MASE_CHECK(x.defined() && x.dtype() == DType::f32, DTypeError,
             "[mxint8_linear] expected an f32 input, got ", x.defined() ? name(x.dtype()) : "undefined");
  MASE_CHECK(x.is_cuda(), DeviceError, "[mxint8_linear] expected a CUDA input, got ", x.device(),
             " (on the CPU, MxInt8Linear dequantizes the weight and calls linear)");
  MASE_CHECK(w.elements.defined() && w.elements.dtype() == DType::i8 && w.scales.defined() &&
                 w.scales.dtype() == DType::u8,
             DTypeError, "[mxint8_linear] expected i8 elements and u8 scales");
  MASE_CHECK(w.elements.ndim() == 2, ShapeError, "[mxint8_linear] expected a packed weight (out, in), got ",
             w.shape());
  const int64_t N = w.elements.size(0), K = w.elements.size(1);
  MASE_CHECK(x.ndim() >= 1 && x.size(-1) == K, ShapeError, "[mxint8_linear] inner dims differ: x is ",
             x.shape(), ", weight is ", w.shape());
  MASE_CHECK(w.scales.shape() == Shape({N, cpu::mx_blocks(K)}), ShapeError,
             "[mxint8_linear] expected scales (", N, ", ", cpu::mx_blocks(K), "), got ", w.scales.shape());
  MASE_CHECK(w.device() == x.device() && w.scales.device() == x.device(), DeviceError,
             "[mxint8_linear] input on ", x.device(), " but the packed weight on ", w.device());
  if (bias.defined())
    MASE_CHECK(bias.dtype() == DType::f32 && bias.device() == x.device() && bias.shape() == Shape({N}),
               ShapeError, "[mxint8_linear] expected an f32 bias (", N, ") on ", x.device(), ", got ",
               bias.shape(), " on ", bias.device());
  const Shape xshape = x.shape();
  int64_t M = 1;
  for (size_t d = 0; d + 1 < xshape.size(); ++d) M *= xshape[d];
  Shape out_shape = xshape;
  out_shape.back() = N;
  const Tensor xc = x.detach().contiguous();
  const MxInt8Tensor wc{w.elements.contiguous(), w.scales.contiguous()};
  const Tensor bc = bias.defined() ? bias.detach().contiguous() : Tensor();
  Tensor y = Tensor::empty(out_shape, DType::f32, x.device());
  cuda::mxint8_linear_forward(y.data<float>(), xc.data<float>(), wc.elements.data<int8_t>(),
                              wc.scales.data<uint8_t>(), bc.defined() ? bc.data<float>() : nullptr,
                              M, N, K, /*kernel=*/0);
  Tensors inputs{x};
  if (bias.defined()) inputs.push_back(bias);
  const bool gx = x.requires_grad(), gb = bias.defined() && bias.requires_grad();
  return record("mxint8_linear", inputs, y, [wc, M, N, xshape, gx, gb,
                                             has_bias = bias.defined()](const Tensor& dy) -> Tensors {
    Tensor dy2 = reshape(contiguous(dy), {M, N});
    Tensors grads(has_bias ? 2 : 1);
    if (gx) grads[0] = reshape(matmul(dy2, mxint8_unpack(wc)), xshape);  // dx = dy·dequant(W)
    if (gb) grads[1] = sum(dy2, {0});                                     // db = Σ dy
    return grads;
  });
}

void BytesReport::add(const Shape& shape) {
  const int64_t K = shape.empty() ? 1 : shape.back(), n = numel(shape);
  tensors += 1;
  elements += n;
  scale_bytes += K ? (n / K) * cpu::mx_blocks(K) : 0;
}

std::string BytesReport::str() const {
  char buf[1024];
  const double blocks_per_elem = elements ? double(scale_bytes) / double(elements) : 0;
  std::snprintf(buf, sizeof buf,
                "MXINT8 bytes of %lld tensor(s), %lld elements in %lld blocks of <= 32\n"
                "  fp32   %lld x 4 B = %lld B (32 bits/element)\n"
                "  packed %lld x 1 B elements + %lld x 1 B scales = %lld B "
                "(8 + 8 x %lld/%lld = %.4f bits/element)\n"
                "  saving 1 - %lld/%lld = %.2f%% (ideal with 32 | K: (32 - 8.25)/32 = 74.22%%)\n",
                (long long)tensors, (long long)elements, (long long)scale_bytes, (long long)elements,
                (long long)fp32_bytes(), (long long)elements, (long long)scale_bytes,
                (long long)packed_bytes(), (long long)scale_bytes, (long long)elements,
                8.0 + 8.0 * blocks_per_elem, (long long)packed_bytes(), (long long)fp32_bytes(),
                100.0 * saving());
  return buf;
}

}  // namespace mase::quant
