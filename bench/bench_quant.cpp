// bench/bench_quant.cpp — the quant suite: fake quantization of every format, MXINT8 pack and
// unpack, and a QAT training step next to the plain one (issue 7's speed figures).
//
// 1. quant/fake/<format>/8192x768 — quantize(x, format) (quant/quantize.h) as a model calls it,
//    on a bert-base activation (kTokens × 768 = 6.3M floats, 25 MB, N(0, 1)), timed next to a
//    memcpy of the same bytes (time_vs_memcpy): read N floats, write N floats, 8N bytes. The
//    label gives the format's parameters. Target (issue 7): the scalar formats — integer,
//    minifloat_ieee, minifloat_denorm, log — and the sign ones at most 3× a memcpy of the
//    same bytes, i.e. vs_memcpy ≥ 0.33. The block formats (block_fp, block_minifloat,
//    block_log: f64 arithmetic, written for clarity) and mxint8's fake path are for reference.
// 2. quant/mxint8_{pack,unpack}/8192x768 — quant/mxint8.h on the same tensor, next to memcpy:
//      pack     read 4N (f32), write N (int8) + N/32 (E8M0 scales)     5N + N/32 bytes
//      unpack   read N + N/32, write 4N (f32); /multiply and /bf16 are the two dequantize paths
//    Target: vs_memcpy ≥ 0.5.
// 3. quant/qat_step/bert-small/32x256 — one training step (bench/common.h, bert_train_step) of
//    bert-small with every Linear a QuantizedLinear in int8 fixed point Q4.4 (inputs, weights
//    and biases: docs/lab1.md's int8.toml, through quant::quantize, quant/passes.h), timed with
//    the same step of the plain model right after each call (time_paired).
//      vs_plain      QAT step time / plain step time. Target: ≤ 1.5.
//      tokens_per_s  of the QAT step
//    At the e2e suite's shape, B 32 × T 256; one pair of steps takes ~15 s on 2 loaded cores,
//    so repeat (--benchmark_repetitions) rather than raise the minimum time.
//
// Validated once before timing, against recomputations that share no code with the kernels:
//   scalar and block formats   every output is a value of the format (decoded code by code with
//                              quant/codes.h, for block formats with the block's shared
//                              parameter computed from its max |x| by formats.md's formula)
//                              and a nearest one to x (either value on a tie)
//   sign formats               the signs, the row means α, δ, and the residual levels in double
//   pack                       the int8 codes and scale bytes, recomputed in double; unpack
//                              (both ways) 2^(s−133)·q exactly
//   QAT                        every Linear became a QuantizedLinear; the first step's loss is
//                              ln 2 ± 0.1 and its gradient norm finite and non-zero
//
// Read next: runtime/kernels/quant_scalar.h, runtime/kernels/mxint8.h (the kernels timed here).
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "bench/common.h"
#include "quant/codes.h"
#include "quant/mxint8.h"
#include "quant/passes.h"
#include "quant/quantize.h"

namespace mase::bench {
namespace quant_suite {

using quant::Format;
using quant::Kind;
using V = std::vector<double>;

const Shape kShape{kTokens, kBertBase.hidden};  // 8192 x 768

// ---- oracles --------------------------------------------------------------------------------
// The distinct finite values of every code of f, sorted (block formats: for one shared
// parameter; mxint8 leaves out q = −128, which the format does not use: q ∈ [−127, 127]).
V value_set(const Format& f, int shared) {
  V v;
  for (uint64_t c = 0; c < (uint64_t(1) << quant::code_width(f)); ++c) {
    if (f.kind == Kind::mxint8 && c == 0x80) continue;
    const double x = quant::decode(f, c, shared);
    if (std::abs(x) <= FLT_MAX) v.push_back(x == 0 ? 0.0 : x);  // NaN fails the test; −0 is 0
  }
  std::sort(v.begin(), v.end());
  v.erase(std::unique(v.begin(), v.end()), v.end());
  return v;
}

// "" when y is a value of the set nearest to x (either one on a tie; beyond the ends, the end).
// log formats round in the log domain (nearest exponent: up iff |x| > 2^(k+0.5)), except
// between 0 and the smallest power, where the distance is linear.
std::string nearest_error(const V& values, double x, double y, bool log_domain) {
  const double w = std::clamp(x, values.front(), values.back());
  const auto it = std::lower_bound(values.begin(), values.end(), w);
  const double hi = *it, lo = it == values.begin() ? hi : *(it - 1);
  auto dist = [&](double v) {
    return log_domain && v * w > 0 ? std::abs(std::log2(std::abs(v)) - std::log2(std::abs(w)))
                                   : std::abs(v - w);
  };
  if (std::binary_search(values.begin(), values.end(), y) && dist(y) <= std::min(dist(lo), dist(hi)))
    return "";
  return cat("x = ", x, " became ", y, "; the nearest values are ", lo, " and ", hi);
}

// The shared parameter of a block with largest magnitude amax (formats.md, block.h's table).
int shared_param(const Format& f, double amax) {
  const int fl = amax > 0 ? std::ilogb(amax) : -100000;                  // floor(log2 amax)
  const int cl = amax > 0 && std::ldexp(1.0, fl) != amax ? fl + 1 : fl;  // ceil(log2 amax)
  const int bias_max = (1 << f.exponent_bias_width) - 1;
  switch (f.kind) {
    case Kind::block_fp:
      return std::clamp(fl, -f.exponent_bias, (1 << f.exponent_width) - 1 - f.exponent_bias);
    case Kind::block_minifloat: return std::clamp((1 << f.exponent_width) - 1 - fl, 0, bias_max);
    case Kind::block_log: return std::clamp((1 << (f.width - 1)) - 1 - cl, 0, bias_max);
    case Kind::mxint8: return amax > 0 ? std::clamp(fl, -127, 127) + 127 : 0;  // E8M0 byte
    default: return 0;  // scalar formats: no shared parameter
  }
}

// Scalar and block formats: every element is a nearest value of its block's value set.
std::string check_values(const Format& f, const Tensor& x, const Tensor& y) {
  const V xs = x.to_vector<double>(), ys = y.to_vector<double>();
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  const int64_t bs = quant::is_mx(f.kind) ? 32 : quant::is_block(f.kind) ? f.block_size : cols;
  const bool log_domain = f.kind == Kind::log || f.kind == Kind::block_log;
  std::map<int, V> sets;  // value sets by shared parameter: a handful of them
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t b = r * cols; b < (r + 1) * cols; b += bs) {
      const int64_t e = std::min(b + bs, (r + 1) * cols);
      double amax = 0;
      for (int64_t i = b; i < e; ++i) amax = std::max(amax, std::abs(xs[i]));
      const int shared = shared_param(f, amax);
      auto it = sets.find(shared);
      if (it == sets.end()) it = sets.emplace(shared, value_set(f, shared)).first;
      for (int64_t i = b; i < e; ++i) {
        std::string err = nearest_error(it->second, xs[i], ys[i], log_domain);
        if (!err.empty()) return cat("element ", i, ": ", err);
      }
    }
  }
  return "";
}

// Sign formats, one row at a time in double (formats.md, runtime/kernels/quant_sign.h).
std::string check_signs(const Format& f, const Tensor& x, const Tensor& y) {
  const V xs = x.to_vector<double>(), ys = y.to_vector<double>();
  const int64_t cols = x.size(-1), rows = x.numel() / cols;
  // residual levels μ_l = (L + 1 − l)/Σ, held in f32 as the op holds them
  const double L = f.levels, total = L * (L + 1) / 2;
  auto sign = [](double v) { return v >= 0 ? 1.0 : -1.0; };
  for (int64_t r = 0; r < rows; ++r) {
    const double* xr = &xs[r * cols];
    const double* yr = &ys[r * cols];
    double mean = 0;
    for (int64_t i = 0; i < cols; ++i) mean += std::abs(xr[i]) / double(cols);
    const double delta = 0.75 * mean;  // ternary's threshold
    double alpha = 0;                  // ternary: mean |x| over the elements kept
    int64_t kept = 0;
    for (int64_t i = 0; i < cols; ++i)
      if (yr[i] != 0) alpha += std::abs(xr[i]), ++kept;
    alpha = kept ? alpha / double(kept) : 0;
    for (int64_t i = 0; i < cols; ++i) {
      double want = sign(xr[i]);
      if (f.kind == Kind::binary_scaling) want *= mean;
      if (f.kind == Kind::binary_residual) {
        double res = xr[i];
        want = 0;
        for (int l = 1; l <= f.levels; ++l) {
          const double s = double(static_cast<float>((L + 1 - l) / total)) * sign(res);
          want += s;
          res -= s;
        }
      }
      if (f.kind == Kind::ternary) {
        // which side of δ an element within rounding of δ falls on is the kernel's f32 call;
        // the check is that it agrees with δ elsewhere and that |y| = α over the kept ones
        if (std::abs(std::abs(xr[i]) - delta) <= 1e-5 * delta) want = yr[i];
        else want = std::abs(xr[i]) > delta ? sign(xr[i]) * alpha : 0.0;
      }
      if (!(std::abs(yr[i] - want) <= 1e-6 + 1e-5 * std::abs(want)))
        return cat("row ", r, ", column ", i, ": x = ", xr[i], " became ", yr[i], ", expected ", want);
    }
  }
  return "";
}

// ---- 1. fake quantization ---------------------------------------------------------------------
void add_fake(const std::string& kind, const nlohmann::json& params = nlohmann::json::object()) {
  const std::string name = cat("quant/fake/", kind, "/", shape_name(kShape));
  const Format f = quant::make_format(kind, params);
  add(name, [name, f](benchmark::State& st) {
    Tensor x = normal_tensor(kShape, 1);
    auto check = [&] {
      Tensor y = quant::quantize(x, f);
      return quant::uses_clipped_ste(f.kind) ? check_signs(f, x, y) : check_values(f, x, y);
    };
    if (!validate_once(st, name, check)) return;
    time_vs_memcpy(st, 8 * x.numel(), [&] {
      Tensor y = quant::quantize(x, f);
      benchmark::DoNotOptimize(y.raw_data());
    });
    st.SetLabel(f.str());
  }, Timing::manual);
}

// ---- 2. MXINT8 pack / unpack ------------------------------------------------------------------
// pack(x) recomputed in double: per block of 32, s = the E8M0 byte of its max |x|,
// q = clamp(RNE(x·64/2^(s−127)), −127, 127).
std::string check_pack(const Tensor& x, const quant::MxInt8Tensor& p) {
  const V xs = x.to_vector<double>();
  const std::vector<int8_t> q = p.elements.to_vector<int8_t>();
  const std::vector<uint8_t> s = p.scales.to_vector<uint8_t>();
  const Format mx = quant::make_format("mxint8");
  for (size_t b = 0; b * 32 < xs.size(); ++b) {  // 768 = 24 blocks of 32: blocks never straddle rows
    double amax = 0;
    for (size_t i = 32 * b; i < 32 * b + 32; ++i) amax = std::max(amax, std::abs(xs[i]));
    const int want_s = shared_param(mx, amax);
    if (s[b] != want_s) return cat("block ", b, ": scale byte ", int(s[b]), ", expected ", want_s);
    for (size_t i = 32 * b; i < 32 * b + 32; ++i) {
      const double want_q = std::clamp(std::nearbyint(std::ldexp(xs[i], 133 - want_s)), -127.0, 127.0);
      if (q[i] != want_q) return cat("element ", i, ": q = ", int(q[i]), ", expected ", want_q);
    }
  }
  return "";
}

// unpack: 2^(s−133)·q, exactly
V unpack_reference(const quant::MxInt8Tensor& p) {
  const std::vector<int8_t> q = p.elements.to_vector<int8_t>();
  const std::vector<uint8_t> s = p.scales.to_vector<uint8_t>();
  V v(q.size());
  for (size_t i = 0; i < q.size(); ++i) v[i] = std::ldexp(double(q[i]), int(s[i / 32]) - 133);
  return v;
}

void add_mxint8() {
  const int64_t N = numel(kShape), blocks = N / 32;
  const std::string pack_name = cat("quant/mxint8_pack/", shape_name(kShape));
  add(pack_name, [pack_name, N, blocks](benchmark::State& st) {
    Tensor x = normal_tensor(kShape, 1);
    if (!validate_once(st, pack_name, [&] { return check_pack(x, quant::mxint8_pack(x)); })) return;
    time_vs_memcpy(st, 5 * N + blocks, [&] {
      quant::MxInt8Tensor p = quant::mxint8_pack(x);
      benchmark::DoNotOptimize(p.elements.raw_data());
    });
  }, Timing::manual);

  for (auto how : {quant::Dequant::multiply, quant::Dequant::bf16}) {
    const std::string name = cat("quant/mxint8_unpack/", shape_name(kShape),
                                 how == quant::Dequant::bf16 ? "/bf16" : "/multiply");
    add(name, [name, how, N, blocks](benchmark::State& st) {
      const quant::MxInt8Tensor p = quant::mxint8_pack(normal_tensor(kShape, 1));
      auto check = [&] { return compare(quant::mxint8_unpack(p, how), unpack_reference(p), 0, 0); };
      if (!validate_once(st, name, check)) return;
      time_vs_memcpy(st, 5 * N + blocks, [&] {
        Tensor y = quant::mxint8_unpack(p, how);
        benchmark::DoNotOptimize(y.raw_data());
      });
    }, Timing::manual);
  }
}

// ---- 3. a QAT training step next to the plain one ---------------------------------------------
// docs/lab1.md's int8.toml: every Linear in 8-bit fixed point Q4.4
nlohmann::json int8_config() {
  nlohmann::json c = {{"name", "integer"}};
  for (const char* t : {"data_in", "weight", "bias"}) {
    c[cat(t, "_width")] = 8;
    c[cat(t, "_frac_width")] = 4;
  }
  return {{"by", "type"}, {"default", {{"config", c}}}};
}

std::string check_qat(const quant::QuantizeReport& report, int64_t layers, double loss, double norm) {
  if (report.quantized() != layers || int64_t(report.layers.size()) != layers)
    return cat(report.quantized(), " of ", report.layers.size(), " Linears quantized, expected ", layers);
  if (!(std::abs(loss - std::log(2.0)) < 0.1)) return cat("first QAT loss ", loss, ", expected ln 2 ± 0.1");
  if (!(norm > 0 && std::isfinite(norm))) return cat("first QAT gradient norm ", norm);
  return "";
}

void add_qat_step(const char* model) {
  const std::string name = cat("quant/qat_step/", model, "/", kBatch, "x", kSeq);
  add(name, [name, model](benchmark::State& st) {
    BertSetup plain = make_bert_setup(model), qat = make_bert_setup(model);
    const quant::QuantizeReport report = quant::quantize(*qat.model, int8_config());
    // the first steps: validated, and the warm-up (gradients, AdamW state, allocator cache)
    const auto [loss, norm] = bert_train_step(qat);
    bert_train_step(plain);
    const int64_t layers = 6 * qat.cfg.num_hidden_layers + 2;  // q k v o, up, down; pooler, classifier
    if (!validate_once(st, name, [&] { return check_qat(report, layers, loss, norm); })) return;
    time_paired(st, [&] { bert_train_step(qat); }, [&] { bert_train_step(plain); }, "vs_plain");
    // time_paired's ratio is plain / QAT; issue 7 reads it the other way round
    st.counters["vs_plain"] = 1.0 / double(st.counters["vs_plain"]);
    st.counters["tokens_per_s"] =
        benchmark::Counter(double(kTokens), benchmark::Counter::kIsIterationInvariantRate);
    st.SetLabel(cat("int8 Q4.4 everywhere, B=", kBatch, " T=", kSeq, " V=", kVocab));
  }, Timing::manual);
}

}  // namespace quant_suite

void register_quant() {
  using namespace quant_suite;
  add_fake("integer", {{"width", 8}, {"frac_width", 4}});
  add_fake("minifloat_ieee", {{"width", 8}, {"exponent_width", 4}});
  add_fake("minifloat_denorm", {{"width", 8}, {"exponent_width", 4}});
  add_fake("log", {{"width", 8}});
  add_fake("binary");
  add_fake("binary_scaling");
  add_fake("ternary", {{"scaling", true}});
  add_fake("binary_residual", {{"levels", 2}});
  add_fake("block_fp", {{"width", 8}, {"exponent_width", 8}, {"block_size", 16}});
  add_fake("block_minifloat",
           {{"width", 8}, {"exponent_width", 4}, {"exponent_bias_width", 8}, {"block_size", 16}});
  add_fake("block_log", {{"width", 8}, {"exponent_bias_width", 8}, {"block_size", 16}});
  add_fake("mxint8");
  add_mxint8();
  add_qat_step("bert-small");
}

}  // namespace mase::bench
