// tests/quant/test_integer_linear.cpp — quantized Linears computed in integers
// (quant/integer_linear.h) against the fake-quantized fp32 reference: integer and MXINT8 codes,
// edge blocks (zeros, saturation, K not a multiple of 32, NaN, scales multiplying past fp32),
// QuantizedLinear taking the path by itself only without autograd, and the integer_inference
// pass on a small BERT.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <map>

#include "autograd/ops.h"
#include "models/fusion.h"
#include "helpers.h"
#include "quant/integer_linear.h"
#include "quant/passes.h"
#include "quant/quant_configs.h"
#include "quant/quantize.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"
#include "runtime/parallel.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

namespace {

// Every output within fp32 reassociation of the reference: |got − ref| ≤ 1e-5·Σ|xq||wq| + 1e-6.
void check_reassociation(const Tensor& got, const Tensor& ref, const Tensor& xq, const Tensor& wq) {
  REQUIRE(got.shape() == ref.shape());
  const int64_t K = wq.size(1), N = wq.size(0);
  const auto x = xq.to_vector<float>(), w = wq.to_vector<float>();
  std::vector<float> b(x.size() / size_t(K) * size_t(N));  // Σ_k |xq[i][k]|·|wq[j][k]|
  for (size_t i = 0; i < b.size(); ++i)
    for (int64_t k = 0; k < K; ++k)
      b[i] += std::abs(x[i / size_t(N) * size_t(K) + size_t(k)]) * std::abs(w[i % size_t(N) * size_t(K) + size_t(k)]);
  const auto g = got.to_vector<float>(), r = ref.to_vector<float>();
  int bad = 0, nan_mismatch = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(r[i]) || std::isnan(g[i])) {
      nan_mismatch += std::isnan(r[i]) != std::isnan(g[i]);
      continue;
    }
    bad += std::abs(g[i] - r[i]) > 1e-5f * b[i] + 1e-6f;
  }
  CHECK(bad == 0);
  CHECK(nan_mismatch == 0);
}

// x with hostile blocks along K = 70 (blocks [0, 32), [32, 64), [64, 70)): row 0's first block
// all zeros, row 1 saturating (integer: |x|·16 > 127; mxint8: 1.999 rounds to q = 128 → 127),
// row 2 tiny values, the rest random.
Tensor hostile_x(int64_t rows, int64_t K, uint64_t seed) {
  Tensor x = test::random_tensor({rows, K}, seed, -3, 3, DType::f32);
  float* p = x.data<float>();
  for (int64_t k = 0; k < 32; ++k) p[k] = 0.0f;
  for (int64_t k = 0; k < K; ++k) p[K + k] = (k % 2 ? -1.0f : 1.0f) * (k < 32 ? 1.999f : 50.0f);
  for (int64_t k = 0; k < K; ++k) p[2 * K + k] *= 1e-3f;
  return x;
}

// tiny_bert with every Linear quantized to `fmt` (test::config_for) and made an Int8Linear.
std::shared_ptr<nn::BertForSequenceClassification> integer_bert(uint64_t seed, const char* fmt,
                                                                int64_t hidden = 32,
                                                                int64_t layers = 2) {
  auto model = test::tiny_bert(seed, hidden, layers);
  (void)quantize(*model, {{"by", "type"}, {"default", {{"config", test::config_for(fmt)}}}});
  (void)integer_inference(*model);
  return model;
}

}  // namespace

TEST_CASE("integer linear: integer and mxint8 pairs equal the fake-quantized reference") {
  const int64_t K = 70, N = 37;
  manual_seed(5);
  nn::Linear base(K, N);
  const Tensor x = hostile_x(9, K, 11);
  const Format i8 = make_format("integer", {{"width", 8}, {"frac_width", 4}});
  const Format mx = make_format("mxint8");
  const Format i5 = make_format("integer", {{"width", 5}, {"frac_width", 1}});
  NoGradGuard no_grad;
  for (auto [fin, fw] : {std::pair{i8, i8}, {mx, mx}, {i8, mx}, {mx, i8}, {i5, mx}}) {
    INFO(fin.str(), " x ", fw.str());
    const Int8Weight w(base.weight, fw, fin);
    CHECK(w.packed().block == int8_block(fin, fw, K));
    const Tensor xq = quantize(x, fin), wq = quantize(base.weight, fw);
    const Tensor ref = linear(xq, wq, base.bias);
    const Tensor got = integer_linear(x, fin, w, base.bias);
    check_reassociation(got, ref, xq, wq);
    // and on every ISA this CPU has: the same values bit for bit (the int8 GEMM's contract)
    for (cpu::Int8Isa isa : {cpu::Int8Isa::reference, cpu::Int8Isa::avx2, cpu::Int8Isa::avx512_vnni}) {
      if (!cpu::int8_isa_supported(isa)) continue;
      const Tensor other = integer_linear(x, fin, Int8Weight(base.weight, fw, fin, isa), base.bias);
      const auto a = got.to_vector<float>(), b = other.to_vector<float>();
      CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    }
  }
}

TEST_CASE("integer linear: a NaN in x makes its row NaN, a zero block contributes zero") {
  const int64_t K = 40, N = 5;
  manual_seed(6);
  nn::Linear base(K, N);
  Tensor x = Tensor::zeros({3, K});
  x.data<float>()[K + 3] = NAN;         // row 1
  x.data<float>()[2 * K + 35] = 1.0f;   // row 2: one value, in the short last block
  NoGradGuard no_grad;
  for (const char* name : {"integer", "mxint8"}) {
    const Format f = std::string(name) == "integer" ? make_format("integer", {{"width", 8}, {"frac_width", 4}})
                                                    : make_format("mxint8");
    const Tensor y = integer_linear(x, f, Int8Weight(base.weight, f, f));
    const auto v = y.to_vector<float>();
    const auto wq = quantize(base.weight, f).to_vector<float>();
    for (int64_t j = 0; j < N; ++j) {
      CHECK(v[size_t(j)] == 0.0f);                  // all-zero row, no bias
      CHECK(std::isnan(v[size_t(N + j)]));          // the NaN row
      CHECK(v[size_t(2 * N + j)] == wq[size_t(j * K + 35)]);  // 1 · w[j][35], exactly
    }
  }
}

TEST_CASE("QuantizedLinear computes in integers under no-grad, fake-quantized otherwise") {
  manual_seed(7);
  nn::Linear base(70, 12);
  const Tensor x = hostile_x(2 * 3, 70, 3).as_strided({2, 3, 70}, {210, 70, 1}, 0);
  for (const char* name : {"integer", "mxint8"}) {
    INFO(name);
    QuantizedLinear q(base, test::config_for(name));
    REQUIRE(integer_path_supported(q.parsed_config()));
    const Tensor fake = quantized_linear(q.quantizers(), x, base.weight, base.bias);
    const Tensor graded = q(x);  // grad mode: the reference composition, bit for bit
    CHECK(graded.to_vector<float>() == fake.to_vector<float>());
    NoGradGuard no_grad;
    const Tensor y = q(x);
    CHECK(y.shape() == Shape{2, 3, 12});
    const Format fin = q.parsed_config().data_in, fw = q.parsed_config().weight;
    const Tensor direct = integer_linear(x, fin, Int8Weight(base.weight, fw, fin),
                                         q.quantizers().bias(base.bias));
    CHECK(y.to_vector<float>() == direct.to_vector<float>());  // it took the integer path
    check_reassociation(y, fake, quantize(x, fin), quantize(base.weight, fw));
    set_integer_kernels(false);
    CHECK(q(x).to_vector<float>() == fake.to_vector<float>());
    set_integer_kernels(true);
  }
  // formats without int8 codes stay on the fp32 path
  for (const char* name : {"minifloat_ieee", "log", "block_fp", "ternary"})
    CHECK_FALSE(integer_path_supported(QuantizedLinear(base, test::config_for(name)).parsed_config()));
  CHECK_FALSE(has_int8_codes(make_format("integer", {{"width", 16}, {"frac_width", 8}})));
}

TEST_CASE("integer_inference replaces eligible layers and keeps the model's outputs") {
  auto model = test::tiny_bert(3);
  const json cfg = {{"by", "type"},
                    {"default", {{"config", test::config_for("mxint8")}}},
                    {"linear", {{"config", test::config_for("mxint8")}}}};
  (void)quantize(*model, cfg);
  const Tensor ids = test::tiny_ids(2, 16, 4);
  NoGradGuard no_grad;
  const Tensor before = (*model)(ids);  // QuantizedLinear's own integer path
  const IntegerInferenceReport r = integer_inference(*model);
  CHECK(r.converted.size() == 14);
  CHECK(r.kept.empty());
  CHECK(r.packed_weight_bytes < r.fp32_weight_bytes / 2);
  CHECK(r.str().find("14 Linear layer(s) now Int8Linear") != std::string::npos);
  int count = 0;
  for (auto& [path, m] : model->named_modules()) count += m->type_name() == "Int8Linear";
  CHECK(count == 14);
  const Tensor after = (*model)(ids);
  CHECK(after.to_vector<float>() == before.to_vector<float>());  // the same kernels, same packing
}

TEST_CASE("compression_summary lists Int8Linear layers with the zeros of their codes") {
  // integer_inference drops the fp32 weights and the masks: the summary counts the zero codes
  // the packing saw (the pruned weights, and any that quantized to zero)
  auto model = test::tiny_bert(3);
  (void)quantize(*model, {{"by", "type"}, {"linear", {{"config", test::config_for("mxint8")}}}});
  (void)prune(*model, {{"weight", {{"sparsity", 0.5}}}});
  int64_t zeros = 0, weights = 0;  // the oracle: zeros of each fake-quantized masked weight
  std::map<std::string, double> layer_sparsity;
  for (auto& [path, lin] : linear_layers(*model)) {
    auto* q = dynamic_cast<QuantizedLinear*>(lin);
    REQUIRE(q != nullptr);
    q->apply_weight_mask_();
    int64_t z = 0;
    for (float v : quantize(q->weight, q->parsed_config().weight).to_vector<float>()) z += v == 0.f;
    CHECK(z >= q->pruned_weights());
    layer_sparsity[path] = double(z) / double(q->weight.numel());
    zeros += z;
    weights += q->weight.numel();
  }
  const IntegerInferenceReport r = integer_inference(*model);
  REQUIRE(r.converted.size() == 14);
  const json s = compression_summary(*model);
  REQUIRE(s.is_object());  // null before: no layer was a QuantizedLinear any more
  REQUIRE(s["layers"].size() == 14);
  for (const json& l : s["layers"]) {
    CHECK(l["type"] == "Int8Linear");
    CHECK(l["weight"] == make_format("mxint8").str());
    CHECK(l["weight_sparsity"].get<double>() == layer_sparsity.at(l["layer"].get<std::string>()));
  }
  CHECK(s["linear_weight_sparsity"].get<double>() == double(zeros) / double(weights));
  CHECK(s["linear_weight_sparsity"].get<double>() >= 0.5);
}

TEST_CASE("integer_inference: the fusion pass fuses the integer blocks, the logits stay") {
  for (const char* fmt : {"integer", "mxint8"}) {
    CAPTURE(fmt);
    auto model = integer_bert(5, fmt);
    const Tensor ids = test::tiny_ids(2, 16, 6);
    NoGradGuard no_grad;
    const Tensor plain = (*model)(ids);  // each Int8Linear adds its bias itself, then GELU / Add / LN
    const nn::FusionReport r = nn::fuse_kernels(*model);
    CHECK(r.ffn == 2);  // both FFNs: int8 product, then bias + GELU in one pass
    CHECK(r.add_norm == 4);
    const Tensor fused = (*model)(ids);
    // the same fp32 sums acc + b; LayerNorm's statistics may add in another order
    test::check_close(fused, plain, 1e-5, 1e-5);
    CHECK(fused.to_vector<float>() != std::vector<float>(fused.numel(), 0.f));
    nn::unfuse_kernels(*model);
    CHECK((*model)(ids).to_vector<float>() == plain.to_vector<float>());
  }
  // an output quantizer comes after the bias: such a layer keeps its block unfused
  auto model = test::tiny_bert(5);
  json cfg = test::config_for("integer");
  cfg["data_out_width"] = 8;
  cfg["data_out_frac_width"] = 4;
  (void)quantize(*model, {{"by", "type"}, {"default", {{"config", cfg}}}});
  (void)integer_inference(*model);
  const nn::FusionReport r = nn::fuse_kernels(*model);
  CHECK(r.ffn == 0);
  CHECK(r.add_norm == 0);
}

TEST_CASE("integer linear rows: the same bits as integer_linear, on the calling thread") {
  // what one chunk of nn::ffn_in_chunks computes: the product without the bias for a run of
  // rows, with its codes in thread-local scratch (and, on VNNI, read in place as offset codes
  // when K is a multiple of 4: K = 64; packed back otherwise: K = 70)
  const Format i8 = make_format("integer", {{"width", 8}, {"frac_width", 4}});
  const Format mx = make_format("mxint8");
  NoGradGuard no_grad;
  for (const int64_t K : {int64_t(64), int64_t(70)})
    for (auto [fin, fw] : {std::pair{i8, i8}, {mx, mx}, {i8, mx}, {mx, i8}}) {
      INFO("K=", K, " ", fin.str(), " x ", fw.str());
      manual_seed(uint64_t(K));
      nn::Linear base(K, 23);
      const Int8Weight w(base.weight, fw, fin);
      const Tensor x = hostile_x(13, K, 4);
      const auto whole = integer_linear(x, fin, w).to_vector<float>();
      std::vector<float> rows(whole.size(), -1.0f);
      for (const auto& [r0, n] : {std::pair<int64_t, int64_t>{0, 6}, {6, 1}, {7, 6}}) {
        SerialRegion serial;
        integer_linear_rows(x.data<float>() + r0 * K, n, fin, w, rows.data() + r0 * 23);
      }
      CHECK(std::memcmp(rows.data(), whole.data(), whole.size() * 4) == 0);
    }
}

TEST_CASE("integer_inference: the FFN in row chunks gives the fused blocks' bits") {
  for (const char* fmt : {"integer", "mxint8"}) {
    CAPTURE(fmt);
    auto model = integer_bert(9, fmt);
    const nn::FusionReport r = nn::fuse_kernels(*model);
    CHECK(r.ffn_chunks == 2);
    CHECK(r.str().find("2 layer(s) run their FFN in row chunks") != std::string::npos);
    std::vector<nn::BertLayer*> layers;
    for (auto& [path, m] : model->named_modules())
      if (auto* l = dynamic_cast<nn::BertLayer*>(m.get())) layers.push_back(l);
    REQUIRE(layers.size() == 2);
    NoGradGuard no_grad;
    // one layer on 20 × 16 = 320 token rows, every row compared (the logits see only [CLS]):
    // chunks of 256 rows (I = 64), the second one short
    manual_seed(11);
    const Tensor h = randn({20, 16, 32});
    const Tensor chunked = layers[0]->forward(h, Tensor());
    layers[0]->ffn_chunks = false;  // the fused blocks, one pass each
    const Tensor whole = layers[0]->forward(h, Tensor());
    const auto a = chunked.to_vector<float>(), b = whole.to_vector<float>();
    CHECK(std::memcmp(a.data(), b.data(), a.size() * 4) == 0);
    // and the model end to end
    const Tensor ids = test::tiny_ids(20, 16, 10);
    const Tensor logits_whole = (*model)(ids);
    layers[0]->ffn_chunks = true;
    CHECK((*model)(ids).to_vector<float>() == logits_whole.to_vector<float>());
    // a flag left set on a layer whose block was replaced is ignored: the block is unfused
    for (auto* l : layers) l->ffn_chunks = true;
    model->replace_submodule("bert.encoder.layer.0.intermediate.dense",
                             std::make_shared<nn::Linear>(32, 64));
    CHECK_FALSE(layers[0]->intermediate->fused);
    CHECK((*model)(ids).shape() == logits_whole.shape());
  }
  // fp32 Linears have no row product: their layers keep the fused blocks
  auto model = test::tiny_bert(9);
  CHECK(nn::fuse_kernels(*model).ffn_chunks == 0);
  CHECK(nn::fuse_kernels(*model).str().find("row chunks") == std::string::npos);
  // nor does a hidden size above 256, where chunks were measured not to pay (fusion.cpp)
  auto wide = integer_bert(9, "integer", /*hidden=*/288, /*layers=*/1);
  const nn::FusionReport r = nn::fuse_kernels(*wide);
  CHECK(r.ffn == 1);
  CHECK(r.ffn_chunks == 0);
}

// MXINT8 blocks whose scales multiply past fp32 (the int8 GEMM scales each block's int32 sum
// after accumulation): x block 2^100 on k < 16 against a weight block 2^100 on 16..31 — scales
// 2^94 each, 2^188 together, an fp32 inf times a sum of 0 gave NaN — and x 2^−95 against
// w 2^−50 — scales 2^−101·2^−56 = 2^−157, flushed to 0 though every product, 2^−145, is an fp32
// subnormal. The fake-quantized reference is finite and exact here: the same values.
TEST_CASE("integer linear: mxint8 blocks whose scales multiply past fp32 equal the reference") {
  const int64_t K = 64, N = 2;
  Tensor x = Tensor::zeros({2, K}), w = Tensor::zeros({N, K});
  float* xp = x.data<float>();
  float* wp = w.data<float>();
  for (int64_t k = 0; k < K; ++k) {
    xp[k] = k < 16 ? std::ldexp(1.0f, 100) : k < 32 ? 0.0f : 2.0f;
    wp[k] = k < 16 ? 0.0f : k < 32 ? std::ldexp(1.0f, 100) : 3.0f;
    xp[K + k] = k < 32 ? std::ldexp(1.0f, -95) : 0.0f;
    wp[K + k] = k < 32 ? std::ldexp(1.0f, -50) : 0.0f;
  }
  const Format mx = make_format("mxint8");
  NoGradGuard no_grad;
  const Tensor ref = linear(quantize(x, mx), quantize(w, mx), Tensor());
  const auto r = ref.to_vector<float>();
  // (0, 0): 0 + 32·6; (0, 1): 16·2^50; (1, 0): 16·2^5; (1, 1): 32·2^−145
  CHECK(r == std::vector<float>{192.0f, std::ldexp(1.0f, 54), 512.0f, std::ldexp(1.0f, -140)});
  for (cpu::Int8Isa isa : {cpu::Int8Isa::reference, cpu::Int8Isa::avx2, cpu::Int8Isa::avx512_vnni}) {
    if (!cpu::int8_isa_supported(isa)) continue;
    INFO(std::string(cpu::int8_isa_name(isa)));
    CHECK(integer_linear(x, mx, Int8Weight(w, mx, mx, isa)).to_vector<float>() == r);
  }
}

TEST_CASE("integer linear: errors") {
  manual_seed(8);
  nn::Linear base(16, 4);
  const Format f = make_format("integer", {{"width", 8}, {"frac_width", 4}});
  const Int8Weight w(base.weight, f, f);
  NoGradGuard no_grad;
  CHECK_THROWS_WITH_AS(integer_linear(Tensor::zeros({2, 15}), f, w),
                       "[integer_linear] x is (2, 15), the weight is (4, 16)", ShapeError);
  CHECK_THROWS_AS(int8_codes(Tensor::zeros({2, 16}), make_format("log")), ConfigError);
  CHECK_THROWS_AS(Int8Weight(base.weight, make_format("minifloat_ieee"), f), ConfigError);
}
