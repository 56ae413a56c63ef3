// tests/quant/test_mxint8_linear.cpp — the Linear stored as MXINT8: output == the Linear with
// the dequantized weight, no fp32 weight kept, the pass, and the bytes arithmetic by hand.
#include <doctest/doctest.h>

#include "autograd/ops.h"
#include "helpers.h"
#include "quant/mxint8_linear.h"
#include "quant/passes.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"

using namespace mase;
using namespace mase::quant;

TEST_CASE("MxInt8Linear output equals the Linear with the dequantized weight") {
  manual_seed(2);
  nn::Linear base(70, 5);  // 70 = 32 + 32 + 6: a partial last block
  MxInt8Linear mx(base);
  Tensor x = test::random_tensor({3, 4, 70}, 6, -2, 2, DType::f32);
  Tensor wq = quantize(base.weight, make_format("mxint8"));  // the fake-quantized weight
  CHECK(mx.dequantized_weight().to_vector<float>() == wq.to_vector<float>());
  CHECK(mx(x).to_vector<float>() == linear(x, wq, base.bias).to_vector<float>());
  // gradients reach x and the bias; the packed weight is not trainable
  Tensor xg = x.clone().set_requires_grad(true);
  backward(sum(mx(xg)));
  CHECK(xg.grad().defined());
  CHECK(mx.bias.grad().defined());
}

TEST_CASE("MxInt8Linear keeps only the packed weight") {
  manual_seed(2);
  nn::Linear base(64, 16);
  MxInt8Linear mx(base);
  auto sd = mx.state_dict();
  CHECK(sd.size() == 3);
  CHECK(sd.count("weight") == 0);
  CHECK(sd.at("weight_elements").dtype() == DType::i8);
  CHECK(sd.at("weight_elements").shape() == Shape{16, 64});
  CHECK(sd.at("weight_scales").dtype() == DType::u8);
  CHECK(sd.at("weight_scales").shape() == Shape{16, 2});
  CHECK(mx.num_parameters() == 16);  // the bias
  CHECK(mx.bias.is_same(base.bias));
}

TEST_CASE("model bytes: the 8.25-bit arithmetic and why the model saves less than 74.2 percent") {
  auto m = test::tiny_bert();
  const int64_t params = m->num_parameters();
  MxInt8Report r = mxint8_weights(*m);
  REQUIRE(r.layers.size() == 14);
  // Linear weights of tiny_bert (K = in_features): per layer q, k, v, attn-out 32x32, inter
  // 64x32 (K 32), out 32x64 (K 64); then pooler 32x32 and classifier 2x32.
  const int64_t elems = 2 * (4 * 32 * 32 + 64 * 32 + 32 * 64) + 32 * 32 + 2 * 32;  // 17472
  const int64_t blocks = elems / 32;  // every K is a multiple of 32: one scale per 32
  CHECK(r.bytes.packed.elements == elems);
  CHECK(r.bytes.packed.scale_bytes == blocks);
  CHECK(r.bytes.packed.bits_per_element() == 8.25);
  CHECK(r.bytes.packed.saving() == doctest::Approx(0.7421875));
  CHECK(r.bytes.model_fp32_bytes == 4 * params);
  CHECK(r.bytes.model_bytes == 4 * (params - elems) + elems + blocks);
  // embeddings, LayerNorms and biases stay fp32: the model saves less than the packed part
  CHECK(r.bytes.saving() ==
        doctest::Approx(1.0 - double(r.bytes.model_bytes) / double(4 * params)));
  CHECK(r.bytes.saving() < 0.7421875);
  int64_t emb = 0;
  for (auto& [cls, b] : r.bytes.unquantized)
    if (cls == "embeddings") emb = b;
  CHECK(emb == 4 * (50 + 16 + 2) * 32);
  CHECK(r.str().find("8 + 8 x 546/17472 = 8.2500 bits/element") != std::string::npos);
  // the model still runs, on the packed weights
  Tensor ids = test::tiny_ids(2, 5, 4);
  CHECK(m->forward(ids).shape() == Shape{2, 2});
}

TEST_CASE("mxint8_weights packs pruned layers with their zeros and skips quantized ones") {
  auto m = test::tiny_bert();
  (void)prune(*m, {{"weight", {{"sparsity", 0.5}}}});
  Tensor ids = test::tiny_ids(2, 5, 4);
  MxInt8Report r = mxint8_weights(*m, "^bert\\.pooler");
  REQUIRE(r.layers.size() == 1);
  auto& mx = dynamic_cast<MxInt8Linear&>(*m->submodule("bert.pooler.dense"));
  std::vector<int8_t> q = mx.weight_elements.to_vector<int8_t>();
  CHECK(std::count(q.begin(), q.end(), int8_t{0}) >= 512);  // the pruned half is exact zeros
  auto q2 = test::tiny_bert();
  (void)quantize(*q2, {{"by", "name"}, {"classifier", {{"config", {{"name", "mxint8"}}}}}});
  MxInt8Report r2 = mxint8_weights(*q2);
  CHECK(r2.layers.size() == 13);
  CHECK(r2.skipped == std::vector<std::string>{"classifier"});
  CHECK(q2->submodule("classifier")->type_name() == "QuantizedLinear");
  CHECK(
      r2.str().find("13 Linear layer(s) packed, 1 skipped (quantized or activation-pruned: left as "
                    "they are): classifier\n") != std::string::npos);
  CHECK_THROWS_AS((void)mxint8_weights(*q2, "("), ConfigError);
}
