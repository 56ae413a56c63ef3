// quant/integer_linear.cpp — int8 codes of a tensor, packed weights, the integer Linear and
// the pass that installs it (see integer_linear.h for the math).
#include "quant/integer_linear.h"

#include <algorithm>
#include <atomic>
#include <cmath>

#include "autograd/engine.h"
#include "autograd/ops.h"
#include "models/parameters.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "runtime/kernels/mxint8.h"

namespace mase::quant {
namespace {

std::atomic<bool> g_integer_kernels{true};

// A format's own block along K: the whole row for integer, 32 for mxint8.
int64_t own_block(const Format& f, int64_t K) { return f.kind == Kind::mxint8 ? cpu::kMxBlock : K; }

// Scales (rows, 1) or (rows, nb) as (rows, nb): a per-row scale repeated for every block.
Tensor expand_scales(const Tensor& s, int64_t nb) {
  if (s.size(1) == nb) return s;
  const int64_t rows = s.size(0);
  Tensor out = Tensor::empty({rows, nb});
  const float* in = s.data<float>();
  float* o = out.data<float>();
  for (int64_t r = 0; r < rows; ++r) std::fill(o + r * nb, o + (r + 1) * nb, in[r]);
  return out;
}

}  // namespace

void set_integer_kernels(bool on) { g_integer_kernels = on; }
bool integer_kernels() { return g_integer_kernels; }

bool has_int8_codes(const Format& f) {
  if (f.kind == Kind::integer) return f.width >= 1 && f.width <= 8;
  return f.kind == Kind::mxint8 && f.block_size == cpu::kMxBlock;
}

bool integer_path_supported(const LinearQuantConfig& c) {
  return !c.bypass && has_int8_codes(c.data_in) && has_int8_codes(c.weight);
}

int64_t int8_block(const Format& data_in, const Format& weight, int64_t K) {
  const int64_t b = std::min({own_block(data_in, K), own_block(weight, K), cpu::kInt8MaxBlock});
  return std::max<int64_t>(b, 1);
}

Int8Codes int8_codes(const Tensor& x, const Format& f) {
  MASE_CHECK(has_int8_codes(f), ConfigError, "[int8_codes] ", f.str(),
             " has no int8 codes (integer with width ≤ 8, or mxint8)");
  MASE_CHECK(x.dtype() == DType::f32 && x.is_cpu(), DTypeError,
             "[int8_codes] expected an f32 CPU tensor, got ", x.dtype(), " on ", x.device());
  MASE_CHECK(x.ndim() == 2 && x.is_contiguous(), ShapeError,
             "[int8_codes] expected a contiguous (rows, K) tensor, got ", x.shape());
  const int64_t rows = x.size(0), K = x.size(1);
  Int8Codes c;
  c.codes = Tensor::empty({rows, K}, DType::i8);
  if (f.kind == Kind::integer) {
    c.block = K;
    c.scales = Tensor::empty({rows, 1});
    cpu::int8_quantize_integer(c.codes.data<int8_t>(), c.scales.data<float>(), x.data<float>(),
                               rows, K, f.width, f.frac_width);
    return c;
  }
  // mxint8: the codes of the packing kernel (runtime/kernels/mxint8.h), fp32 scales 2^(s−133)
  c.block = cpu::kMxBlock;
  c.scales = Tensor::empty({rows, cpu::mx_blocks(K)});
  cpu::int8_quantize_mxint8(c.codes.data<int8_t>(), c.scales.data<float>(), x.data<float>(), rows, K);
  return c;
}

// ---- Int8Weight ------------------------------------------------------------------------------

Int8Weight::Int8Weight(const Tensor& weight, const Format& weight_format,
                       const Format& data_in_format, std::optional<cpu::Int8Isa> isa) {
  MASE_CHECK(weight.ndim() == 2, ShapeError, "[Int8Weight] expected a (out, in) weight, got ",
             weight.shape());
  const Tensor w = weight.detach().contiguous();
  const int64_t N = w.size(0), K = w.size(1);
  const Int8Codes c = int8_codes(w, weight_format);
  // the zero weights, counted on the codes before packing (a packed layout pads K, and
  // oneDNN's is its own): code 0 whose scale is not NaN
  const int8_t* codes = c.codes.data<int8_t>();
  const float* sc = c.scales.data<float>();
  const int64_t ns = c.scales.size(1);
  for (int64_t r = 0; r < N; ++r)
    for (int64_t k = 0; k < K; ++k)
      zeros_ += codes[r * K + k] == 0 && !std::isnan(sc[r * ns + k / c.block]);
  const int64_t block = int8_block(data_in_format, weight_format, K);
  const int64_t nb = K > 0 ? (K + block - 1) / block : 0;
  const Tensor s = expand_scales(c.scales, std::max<int64_t>(nb, 1));
  p_ = cpu::int8_pack_b(c.codes.data<int8_t>(), K, s.data<float>(), N, K, block,
                       isa ? *isa : cpu::int8_isa_for(N, K, block));
}

namespace {

// y (rows, N) = the integer product of x (rows, K) and w, + bias when not null: x quantized into
// `codes` (rows·K bytes) and `scales` (rows·nblocks of w's packing), then the int8 GEMM. The
// codes are offset codes when the kernel reads them (int8_reads_offset_codes): it then takes
// them where they lie, without a copy.
void integer_product(const float* x, int64_t rows, const Format& data_in, const Int8Weight& w,
                     const float* bias, float* y, int8_t* codes, float* scales) {
  MASE_CHECK(has_int8_codes(data_in), ConfigError, "[integer_linear] ", data_in.str(),
             " has no int8 codes (integer with width ≤ 8, or mxint8)");
  const int64_t K = w.in_features(), N = w.out_features();
  const cpu::Int8PackedB& p = w.packed();
  const int64_t nb = std::max<int64_t>(p.nblocks, 1);
  const bool offset = cpu::int8_reads_offset_codes(p);
  if (data_in.kind == Kind::integer) {
    // one scale per row, then repeated for each of the weight's blocks (as expand_scales does,
    // in place from the last row back, so no value is overwritten before it is read)
    cpu::int8_quantize_integer(codes, scales, x, rows, K, data_in.width, data_in.frac_width, offset);
    for (int64_t r = rows - 1; r >= 0 && nb > 1; --r) std::fill(scales + r * nb, scales + (r + 1) * nb, scales[r]);
  } else {  // mxint8: its blocks of 32 are the kernel's blocks (int8_block)
    MASE_CHECK(cpu::mx_blocks(K) == nb, ConfigError, "[integer_linear] the weight is packed in ",
               nb, " blocks, mxint8 codes of K = ", K, " have ", cpu::mx_blocks(K));
    cpu::int8_quantize_mxint8(codes, scales, x, rows, K, offset);
  }
  cpu::int8_gemm_scaled(y, N, codes, K, scales, rows, p, bias, offset);
}

}  // namespace

Tensor integer_linear(const Tensor& x, const Format& data_in, const Int8Weight& w,
                      const Tensor& bias) {
  const int64_t K = w.in_features(), N = w.out_features();
  MASE_CHECK(x.ndim() >= 1 && x.size(-1) == K, ShapeError, "[integer_linear] x is ", x.shape(),
             ", the weight is (", N, ", ", K, ")");
  MASE_CHECK(!(grad_enabled() && x.requires_grad()), AutogradError,
             "[integer_linear] computes without autograd: call it under NoGradGuard");
  MASE_CHECK(!bias.defined() || (bias.numel() == N && bias.dtype() == DType::f32), ShapeError,
             "[integer_linear] expected an f32 bias of ", N, " elements, got ", bias.shape());
  MASE_CHECK(x.dtype() == DType::f32 && x.is_cpu(), DTypeError,
             "[integer_linear] expected an f32 CPU tensor, got ", x.dtype(), " on ", x.device());
  const int64_t M = K > 0 ? x.numel() / K : x.numel() / std::max<int64_t>(1, x.size(-1));
  const Tensor xp = x.detach().contiguous();  // (..., K) packed, read as (M, K)
  const Tensor codes = Tensor::empty({M, K}, DType::i8);
  const Tensor scales = Tensor::empty({M, std::max<int64_t>(w.packed().nblocks, 1)});
  Tensor y = Tensor::empty({M, N});
  const Tensor b = bias.defined() ? bias.detach().contiguous() : Tensor();
  integer_product(xp.data<float>(), M, data_in, w, b.defined() ? b.data<float>() : nullptr,
                  y.data<float>(), codes.data<int8_t>(), scales.data<float>());
  Shape out_shape = x.shape();
  out_shape.back() = N;
  return y.as_strided(out_shape, contiguous_strides(out_shape), 0);
}

void integer_linear_rows(const float* x, int64_t rows, const Format& data_in, const Int8Weight& w,
                         float* y) {
  thread_local std::vector<int8_t> codes;
  thread_local std::vector<float> scales;
  codes.resize(size_t(rows * w.in_features()));
  scales.resize(size_t(rows * std::max<int64_t>(w.packed().nblocks, 1)));
  integer_product(x, rows, data_in, w, nullptr, y, codes.data(), scales.data());
}

// ---- Int8Linear ------------------------------------------------------------------------------

Int8Linear::Int8Linear(const LinearQuantConfig& config, std::shared_ptr<const Int8Weight> weight,
                       const Tensor& quantized_bias, std::optional<Quantizer> data_out)
    : config_(config), w_(std::move(weight)), out_(std::move(data_out)) {
  if (!out_ && config_.data_out) out_.emplace(*config_.data_out, Role::activation);
  MASE_CHECK(integer_path_supported(config_), ConfigError,
             "[Int8Linear] the data_in and weight formats need int8 codes, got ",
             config_.data_in.str(), " and ", config_.weight.str());
  register_buffer("bias", bias, quantized_bias.defined() ? quantized_bias.detach() : Tensor());
  train(false);
}

std::string Int8Linear::extra_repr() const {
  return cat("in_features=", w_->in_features(), ", out_features=", w_->out_features(),
             ", data_in=", config_.data_in.str(), ", weight=", config_.weight.str(),
             ", kernel=", cpu::int8_isa_name(w_->packed().isa), ", block=", w_->packed().block);
}

namespace {
void check_not_traced() {
  MASE_CHECK(op_observer() == nullptr, ConfigError,
             "[Int8Linear] records no op, so it cannot be traced: trace the model before "
             "integer_inference()");
}
}  // namespace

Tensor Int8Linear::forward(const Tensor& x) {
  check_not_traced();
  NoGradGuard no_grad;
  Tensor y = integer_linear(x, config_.data_in, *w_, bias);
  return out_ ? (*out_)(y) : y;
}

Tensor Int8Linear::product(const Tensor& x) {
  check_not_traced();
  NoGradGuard no_grad;
  return integer_linear(x, config_.data_in, *w_);
}

void Int8Linear::product_rows(const float* x, int64_t rows, float* y) const {
  check_not_traced();
  integer_linear_rows(x, rows, config_.data_in, *w_, y);
}

// ---- the pass --------------------------------------------------------------------------------

std::string IntegerInferenceReport::str() const {
  std::string kernels_str;  // "24 on avx512-vnni, 2 on onednn"
  for (const auto& [name, n] : kernels)
    kernels_str += cat(kernels_str.empty() ? "" : ", ", n, " on ", name);
  std::string s = cat("integer inference: ", converted.size(), " Linear layer(s) now Int8Linear",
                      kernels_str.empty() ? "" : cat(" (", kernels_str, ")"));
  if (!kept.empty()) s += cat(", ", kept.size(), " quantized layer(s) kept on the fp32 path");
  s += "\n";
  if (!converted.empty()) {
    const double ratio = fp32_weight_bytes ? double(packed_weight_bytes) / double(fp32_weight_bytes) : 0;
    s += cat("  their weights: ", nn::with_commas(fp32_weight_bytes), " B fp32 -> ",
             nn::with_commas(packed_weight_bytes), " B packed int8 with scales (",
             int(std::lround(100.0 * ratio)), "%)\n");
  }
  return s;
}

IntegerInferenceReport integer_inference(nn::Module& model) {
  IntegerInferenceReport r;
  NoGradGuard no_grad;
  for (auto& [path, lin] : linear_layers(model)) {
    auto* q = dynamic_cast<QuantizedLinear*>(lin);
    if (!q || !q->is_quantized()) continue;
    const LinearQuantConfig& c = q->parsed_config();
    if (!integer_path_supported(c) || (q->activation_pruning() && q->activation_pruning()->sparsity > 0)) {
      r.kept.push_back(path);
      continue;
    }
    q->apply_weight_mask_();  // pruned weights are zeros in storage (quantized_linear.h)
    auto w = std::make_shared<const Int8Weight>(q->weight, c.weight, c.data_in);
    const Tensor b = q->bias.defined() ? q->quantizers().bias(q->bias) : Tensor();
    r.fp32_weight_bytes += int64_t(q->weight.nbytes());
    r.packed_weight_bytes += int64_t(w->nbytes());
    r.converted.push_back(path);
    ++r.kernels[cpu::int8_isa_name(w->packed().isa)];
    // its output quantizer as trained (binary_residual's μ) and where its stream had got to
    std::optional<Quantizer> out;
    if (c.data_out) out = q->quantizers().data_out;
    model.replace_submodule(path, std::make_shared<Int8Linear>(c, w, b, std::move(out)));
  }
  return r;
}

}  // namespace mase::quant
