// tests/quant/test_quant_audit.cpp — wide sweeps of the scalar formats against the brute-force
// oracles (tests/quant/oracle.h) over every small width / exponent width and many biases,
// beyond the hand-picked settings of test_scalar.cpp.
#include <doctest/doctest.h>

#include <filesystem>

#include <nlohmann/json.hpp>

#include "oracle.h"
#include "quant/format.h"
#include "runtime/kernels/quant_scalar.h"

using namespace mase;
using namespace mase::quant;

namespace {
template <class Want>
int count_bad(const Format& f, const std::vector<float>& xs, Want want, bool sign_magnitude) {
  std::vector<float> y(xs.size());
  cpu::scalar_forward<float>(y.data(), xs.data(), int64_t(xs.size()), f);
  std::vector<double> xd(xs.begin(), xs.end()), yd(xs.size());
  cpu::scalar_forward<double>(yd.data(), xd.data(), int64_t(xd.size()), f);
  int bad = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    double w = want(double(xs[i]));
    bool ok = test::same(y[i], w) && test::same(yd[i], w);
    if (ok && sign_magnitude && !std::isnan(xs[i]))
      ok = std::signbit(y[i]) == std::signbit(xs[i]) && std::signbit(yd[i]) == std::signbit(xs[i]);
    if (ok && !sign_magnitude && w == 0) ok = !std::signbit(y[i]) && !std::signbit(yd[i]);
    if (!ok && bad++ < 3)
      MESSAGE(f.str() << ": x = " << test::hex(xs[i]) << " -> f32 " << test::hex(y[i]) << ", f64 "
                      << test::hex(yd[i]) << ", oracle " << test::hex(w));
  }
  return bad;
}
}  // namespace

TEST_CASE("audit: minifloat_ieee sweep over W <= 9, every E, several biases") {
  int total = 0;
  for (int W = 2; W <= 9; ++W)
    for (int E = 1; E <= std::min(W - 1, 5); ++E)
      for (int b : {-5, -1, 0, 1, 2, 3, (1 << (E - 1)) - 1, 1 << E, 20, 126, 127, 130}) {
        nlohmann::json p = {{"width", W}, {"exponent_width", E}, {"exponent_bias", b}};
        Format f;
        try { f = make_format("minifloat_ieee", p); } catch (const std::exception&) { continue; }
        test::ValueSet set;
        set.build(test::minifloat_ieee_codes(W, E, b));
        if (set.values.size() < 2) continue;
        total += count_bad(f, test::probe_inputs(set.values, W * 100 + E, 300),
                           [&](double x) { return set.nearest(x); }, true);
      }
  CHECK(total == 0);
}

TEST_CASE("audit: minifloat_denorm sweep over W <= 9, every E, several biases") {
  int total = 0;
  for (int W = 3; W <= 9; ++W)
    for (int E = 1; E <= std::min(W - 2, 5); ++E)
      for (int b : {-5, -1, 0, 1, 2, 3, (1 << (E - 1)) - 1, 1 << E, 20, 126, 127, 130}) {
        nlohmann::json p = {{"width", W}, {"exponent_width", E}, {"exponent_bias", b}};
        Format f;
        try { f = make_format("minifloat_denorm", p); } catch (const std::exception&) { continue; }
        test::DenormOracle oracle(W, E, b);
        if (oracle.set.values.size() < 2) continue;
        total += count_bad(f, test::probe_inputs(oracle.set.values, W * 100 + E, 300),
                           [&](double x) { return oracle.nearest(x); }, true);
      }
  CHECK(total == 0);
}

TEST_CASE("audit: integer sweep over every width <= 10 and frac_width") {
  int total = 0;
  for (int w = 2; w <= 10; ++w)
    for (int fr = 0; fr <= w; ++fr) {
      Format f = make_format("integer", {{"width", w}, {"frac_width", fr}});
      test::ValueSet set;
      set.build(test::integer_codes(w, fr));
      total += count_bad(f, test::probe_inputs(set.values, w, 300),
                         [&](double x) { return set.nearest(x); }, false);
    }
  CHECK(total == 0);
}

TEST_CASE("audit: log sweep over widths and biases") {
  int total = 0;
  for (int W = 2; W <= 8; ++W)
    for (int b : {-30, -3, 0, 1, 2, 3, (1 << (W - 2)) - 1, 60, 126, 127, 140, 150}) {
      Format f;
      try { f = make_format("log", {{"width", W}, {"exponent_bias", b}}); } catch (const std::exception&) { continue; }
      test::LogOracle oracle(W, b);
      if (oracle.set.values.size() < 2) continue;
      std::vector<float> xs = test::probe_inputs(oracle.set.values, W, 200);
      for (double v : oracle.set.values)
        if (v > 0) {
          float g = float(v * std::sqrt(2.0));
          for (float h : {g, std::nextafter(g, 0.f), std::nextafter(g, INFINITY)}) xs.push_back(h), xs.push_back(-h);
        }
      total += count_bad(f, xs, [&](double x) { return oracle.nearest(x); }, true);
    }
  CHECK(total == 0);
}

// ---- passes and checkpoints ------------------------------------------------------------------
#include "helpers.h"
#include "models/temp_dir.h"
#include "quant/checkpoint.h"
#include "quant/passes.h"
#include "quant/quant_configs.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"

TEST_CASE("audit: a quantize config with a misspelled 'name' is a ConfigError, not a no-op") {
  auto m = test::tiny_bert();
  nlohmann::json cfg = test::config_for("integer");
  cfg.erase("name");
  cfg["nmae"] = "integer";  // the typo: every other key says "quantize me"
  CHECK_THROWS_AS((void)quantize(*m, {{"by", "type"}, {"default", {{"config", cfg}}}}), ConfigError);
  nlohmann::json no_name = test::config_for("integer");
  no_name.erase("name");  // format keys without any name
  CHECK_THROWS_AS((void)quantize(*m, {{"by", "type"}, {"linear", {{"config", no_name}}}}), ConfigError);
  // still fine: an explicit null name, bypass, or an empty config leave the layers alone
  for (nlohmann::json c : {nlohmann::json{{"name", nullptr}}, nlohmann::json{{"bypass", true}},
                           nlohmann::json::object()})
    CHECK(quantize(*m, {{"by", "type"}, {"default", {{"config", c}}}}).quantized() == 0);
}

TEST_CASE("audit: stochastic quantizers resume their streams after a compressed reload") {
  Tensor ids = test::tiny_ids(3, 6, 2);
  test::TempDir dir;
  auto m = test::tiny_bert();
  nlohmann::json cfg = {{"name", "binary"},           {"data_in_stochastic", true},
                        {"weight_stochastic", true},  {"bias_stochastic", true},
                        {"data_out_stochastic", true}};
  (void)quantize(*m, {{"by", "type"}, {"linear", {{"config", cfg}}}});
  m->eval();
  auto eval = [&](nn::BertForSequenceClassification& b) {
    NoGradGuard ng;
    return b.forward(ids).to_vector<float>();
  };
  (void)eval(*m);  // advance every stochastic stream
  save_compressed(*m, dir.path.string());
  auto r = load_compressed(dir.path.string());
  r->eval();
  CHECK(eval(*r) == eval(*m));
  CHECK(eval(*r) == eval(*m));
}

#include "quant/integer_linear.h"
TEST_CASE("audit: a model after integer_inference is refused by save_compressed, not half-saved") {
  test::TempDir dir;
  auto m = test::tiny_bert();
  (void)quantize(*m, {{"by", "type"}, {"linear", {{"config", test::config_for("integer")}}}});
  m->eval();
  (void)integer_inference(*m);
  // before: the save succeeded and load_compressed then failed on the missing weights
  CHECK_THROWS_AS(save_compressed(*m, dir.path.string()), ConfigError);
  CHECK_FALSE(std::filesystem::exists(dir.file("model.safetensors")));
}

// ---- integer inference on edge blocks ----------------------------------------------------------
#include <cstring>
#include "autograd/ops.h"
#include "quant/quantize.h"
#include "runtime/kernels/int8_gemm.h"

TEST_CASE("audit: integer linear on edge blocks: one huge value, -128 codes, tiny scales, inf") {
  const int64_t K = 77, N = 9, R = 8;
  manual_seed(9);
  nn::Linear base(K, N);
  // weights: row 0 holds −8 = code −128 for integer(8, 4); row 1 one huge value per block;
  // row 2 subnormal; row 3 all zero
  float* w = base.weight.data<float>();
  for (int64_t k = 0; k < K; ++k) {
    w[0 * K + k] = k % 3 ? -8.0f : 0.4f;
    w[1 * K + k] = k % 32 == 5 ? 3e4f : 0.01f * float(k % 7 - 3);
    w[2 * K + k] = 1e-39f * float(k % 5 - 2);
    w[3 * K + k] = 0.0f;
  }
  Tensor x = test::random_tensor({R, K}, 3, -2, 2, DType::f32);
  float* p = x.data<float>();
  for (int64_t k = 0; k < K; ++k) {
    p[0 * K + k] = k % 32 == 7 ? 1e20f : 0.5f;        // one huge value per block
    p[1 * K + k] = 1e-40f * float(k % 9 - 4);          // subnormal: MX scale bytes < 6
    p[2 * K + k] = k == 70 ? INFINITY : 0.25f;         // inf in the short last block
    p[3 * K + k] = -8.0f;                              // −128 codes in x too
    p[4 * K + k] = k >= 64 ? 0.0f : p[4 * K + k];      // all-zero short block
  }
  const Format i8 = make_format("integer", {{"width", 8}, {"frac_width", 4}});
  const Format mx = make_format("mxint8");
  NoGradGuard no_grad;
  for (auto [fin, fw] : {std::pair{i8, i8}, {mx, mx}, {i8, mx}, {mx, i8}}) {
    const Tensor xq = quantize(x, fin), wq = quantize(base.weight, fw);
    const auto ref = linear(xq, wq, base.bias).to_vector<float>();
    const auto xv = xq.to_vector<float>(), wv = wq.to_vector<float>();
    for (cpu::Int8Isa isa : {cpu::Int8Isa::reference, cpu::Int8Isa::avx2, cpu::Int8Isa::avx512_vnni,
                             cpu::Int8Isa::onednn}) {
      if (!cpu::int8_isa_supported(isa)) continue;
      Tensor got_t;
      try {
        got_t = integer_linear(x, fin, Int8Weight(base.weight, fw, fin, isa), base.bias);
      } catch (const std::exception& e) {
        MESSAGE(cpu::int8_isa_name(isa) << ": " << e.what());
        continue;
      }
      const auto got = got_t.to_vector<float>();
      int bad = 0;
      for (int64_t i = 0; i < R; ++i)
        for (int64_t j = 0; j < N; ++j) {
          double bound = 0;
          for (int64_t k = 0; k < K; ++k) bound += std::abs(double(xv[i * K + k]) * wv[j * K + k]);
          const float g = got[i * N + j], r = ref[i * N + j];
          const bool ok = (std::isnan(g) && std::isnan(r)) || g == r ||
                          std::abs(double(g) - r) <= 1e-5 * bound + 1e-6;
          if (!ok && bad++ < 4)
            MESSAGE(fin.str() << " x " << fw.str() << " on " << cpu::int8_isa_name(isa) << ": y[" << i
                              << "][" << j << "] = " << g << ", reference " << r);
        }
      CHECK(bad == 0);
    }
  }
}

#include "quant/mxint8.h"
#include "runtime/kernels/quant_block.h"
TEST_CASE("audit: mxint8 has no -0, in an all-zero block too, on every path") {
  // a block of -0 (and a short block of -0 next to a normal one): int8 q = 0 is +0
  std::vector<float> xs(40, -0.0f);
  xs[35] = 1.0f;  // block 2 (32..39) is not all zero; block 1 is
  xs[36] = -1e-9f;  // rounds to q = 0 in that block: +0
  std::vector<float> y32(xs.size());
  cpu::block_forward<float>(y32.data(), xs.data(), 1, 40, make_format("mxint8"));
  std::vector<double> xd(xs.begin(), xs.end()), y64(xs.size());
  cpu::block_forward<double>(y64.data(), xd.data(), 1, 40, make_format("mxint8"));
  const Tensor x = Tensor::from(xs, {1, 40});
  const auto f32 = quantize(x, make_format("mxint8")).to_vector<float>();
  const auto f64 = quantize(x.to(DType::f64), make_format("mxint8")).to_vector<double>();
  const auto unpacked = mxint8_unpack(mxint8_pack(x)).to_vector<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    if (i == 35) continue;
    INFO("element " << i);
    CHECK(!std::signbit(y32[i]));
    CHECK(!std::signbit(y64[i]));
    CHECK(!std::signbit(f32[i]));
    CHECK(!std::signbit(f64[i]));
    CHECK(!std::signbit(unpacked[i]));
  }
}
