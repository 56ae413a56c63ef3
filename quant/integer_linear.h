// quant/integer_linear.h — quantized Linears that really compute in integers: int8 codes times
// int8 codes, int32 sums, the scales applied after accumulation.
//
// Fake quantization (quant/quantize.h) rounds x and W to their formats but stores the results
// as fp32 and multiplies them with an fp32 GEMM: the numbers of int8, the speed of fp32. When
// both the activation and the weight format are "int8 codes times a power-of-two scale", the
// same product can be computed on the integers themselves:
//   integer(w ≤ 8, f)   value = q·2^−f, q ∈ [−2^(w−1), 2^(w−1)−1]  one scale for the tensor
//   mxint8              value = q·2^(s−133), q ∈ [−127, 127]       one scale per 32 along K
// and then, with a kernel block kb = the smaller of the two formats' blocks (K for integer),
//   y[i][j] = Σ_blocks float(Σ_{k∈block} qx[i][k]·qw[j][k]) · (sx[i][blk]·sw[j][blk]) + b[j]
// Each block's sum is exact in int32 and every scale is a power of two, so this equals the
// fake-quantized fp32 reference Q_in(x)·Q_w(W)ᵀ + Q_b(b) up to the order of fp32 additions
// (the reference rounds after every product-add; here only after each block). The int8 GEMM
// (runtime/kernels/int8_gemm.h: oneDNN, AVX512-VNNI, AVX2, reference) does the work.
//
// Where it runs: QuantizedLinear::forward takes this path by itself when it is allowed — no
// autograd (eval under NoGradGuard), no graph tracer listening, f32 CPU tensors, and a config
// that integer_path_supported() accepts — and re-packs its fp32 master weight on every call
// (as the fake-quantized path re-quantizes it). Int8Linear (below) is the inference-only layer
// that keeps ONLY the packed weight: what `mase-train --eval-only --quant` runs, so the memory
// saving is real (integer_inference(), the pass that builds them).
// Read next: runtime/cpu/int8_gemm.cpp, then docs/lab4.md's 4.3a (speed and memory measured).
#pragma once
#include <map>
#include <optional>
#include <memory>
#include <string>
#include <vector>

#include "models/fusion.h"
#include "models/layers.h"
#include "quant/format.h"
#include "quant/quantize.h"
#include "runtime/kernels/int8_gemm.h"

namespace mase::quant {

// integer with width ≤ 8 (any frac_width), or mxint8 with block_size 32.
bool has_int8_codes(const Format& f);
// Both the activation and the weight format have int8 codes (bias and data_out may be anything:
// they are applied to fp32 values, after the product).
bool integer_path_supported(const LinearQuantConfig& c);
// Off: QuantizedLinear always runs the fake-quantized fp32 reference (for A/B measurements).
void set_integer_kernels(bool on);
bool integer_kernels();

// A tensor's codes in one of those formats: x (rows, K) f32 CPU, contiguous.
struct Int8Codes {
  Tensor codes;   // i8 (rows, K)
  Tensor scales;  // f32 (rows, nblocks): 2^−f (one block) or 2^(s−133) per 32; NaN marks NaN
  int64_t block;  // K or 32
};
Int8Codes int8_codes(const Tensor& x, const Format& f);

// The kernel block of a pair of formats over K: the smaller of their blocks.
int64_t int8_block(const Format& data_in, const Format& weight, int64_t K);

// A weight (out, in) quantized to its format and packed once for this CPU's int8 kernel.
class Int8Weight {
 public:
  // isa: the kernel to pack for; by default the fastest for this shape (cpu::int8_isa_for)
  Int8Weight(const Tensor& weight, const Format& weight_format, const Format& data_in_format,
             std::optional<cpu::Int8Isa> isa = std::nullopt);
  const cpu::Int8PackedB& packed() const { return p_; }
  int64_t out_features() const { return p_.N; }
  int64_t in_features() const { return p_.K; }
  size_t nbytes() const { return p_.nbytes(); }
  int64_t zeros() const { return zeros_; }  // weights whose code is 0 (pruned, or rounded to 0)

 private:
  cpu::Int8PackedB p_;
  int64_t zeros_ = 0;
};

// y (..., out) = the integer product of x (..., in) quantized to `data_in` and the packed
// weight, + bias (f32 (out), already in its format) when defined. No autograd: call it under
// NoGradGuard (a tensor that requires grad in grad mode is an AutogradError).
Tensor integer_linear(const Tensor& x, const Format& data_in, const Int8Weight& w,
                      const Tensor& bias = Tensor());
// The same product, without the bias, for `rows` rows of x (row-major, in wide) into y (rows,
// out), on the calling thread alone (the codes in thread-local scratch): one chunk of
// nn::ffn_in_chunks (models/fusion.h). Same bits as integer_linear's rows.
void integer_linear_rows(const float* x, int64_t rows, const Format& data_in, const Int8Weight& w,
                         float* y);

// The inference-only Linear: the packed int8 weight and its scales, the bias in its format,
// the activation format and the optional output format. Forward = integer_linear (+ Q_out).
// Without an output format its bias splits off (nn::SplitBias, models/fusion.h): the fusion
// pass then runs the integer product alone and adds the bias in the block's fused pass (bias +
// GELU, bias + residual + LayerNorm) — the same fp32 sum acc + b, and no separate Add pass
// (which bought no measurable time on a Zen 5: docs/performance.md, "a later session"). Its
// row product lets a BERT layer run the whole FFN in cache-sized row chunks (ffn_in_chunks).
class Int8Linear : public nn::Module, public nn::SplitBias {
 public:
  // data_out: the output quantizer to apply (the QuantizedLinear's own, with its trained
  // parameters and random stream); unset: a fresh one of config.data_out, if any.
  Int8Linear(const LinearQuantConfig& config, std::shared_ptr<const Int8Weight> weight,
             const Tensor& quantized_bias, std::optional<Quantizer> data_out = std::nullopt);
  std::string type_name() const override { return "Int8Linear"; }
  std::string extra_repr() const override;
  Tensor forward(const Tensor& x) override;
  bool bias_splits() const override { return !config_.data_out; }
  Tensor product(const Tensor& x) override;  // integer_linear without the bias
  bool has_product_rows() const override { return bias_splits(); }
  void product_rows(const float* x, int64_t rows, float* y) const override;  // integer_linear_rows
  const Tensor& split_bias() const override { return bias; }
  const Int8Weight& weight() const { return *w_; }
  const LinearQuantConfig& config() const { return config_; }
  size_t weight_nbytes() const { return w_->nbytes(); }  // the packed codes, scales (and comp)

  Tensor bias;  // f32 (out), already quantized; a buffer (nothing here trains)

 private:
  LinearQuantConfig config_;
  std::shared_ptr<const Int8Weight> w_;
  std::optional<Quantizer> out_;  // config_.data_out as a quantizer (one, kept across calls)
};

struct IntegerInferenceReport {
  std::vector<std::string> converted, kept;  // layer paths: to Int8Linear / left as they were
  int64_t fp32_weight_bytes = 0;             // of the converted layers' weights, before
  int64_t packed_weight_bytes = 0;           // and as packed now
  std::map<std::string, int> kernels;        // converted layers per int8 kernel ("avx512-vnni")
  std::string str() const;
};

// Replace every QuantizedLinear whose config integer_path_supported() (and that prunes no
// activations) by an Int8Linear over its masked, quantized weight. For inference only: the
// fp32 master weights are dropped, nothing can be trained afterwards.
[[nodiscard]] IntegerInferenceReport integer_inference(nn::Module& model);

}  // namespace mase::quant
