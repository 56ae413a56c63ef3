// tests/graph/test_lora.cpp — LoraLinear and the insert_lora / fuse_lora passes: the formula
// against a hand composition, the output unchanged on insertion, only the adapters and the
// head trained, counts worked out by hand, fusion within 1e-5, and LoRA as a leaf in traces.
#include "graph/metadata.h"
#include "graph_helpers.h"
#include "models/lora.h"
#include "models/parameters.h"

namespace mase::graph {

namespace {

// Gives every lora_B random values, so that B·A ≠ 0 and the adapters matter.
void randomise_b(nn::Module& m, uint64_t seed) {
  NoGradGuard ng;
  for (auto& [path, p] : m.named_parameters())
    if (path.ends_with("lora_B"))
      copy_(p, test::random_tensor(p.shape(), seed++, -0.5, 0.5, DType::f32));
}

}  // namespace

TEST_CASE("lora: LoraLinear computes xWᵀ + b + (alpha/r)·dropout(x)·Aᵀ·Bᵀ") {
  manual_seed(3);
  nn::Linear base(6, 4);
  nn::LoraLinear lora(base, 2, 3.0, 0.0);
  CHECK(lora.weight.is_same(base.weight));  // the same tensors, now frozen
  CHECK_FALSE(base.weight.requires_grad());
  CHECK(lora.lora_A.shape() == Shape{2, 6});
  CHECK(lora.lora_B.shape() == Shape{4, 2});
  CHECK(lora.lora_B.to_vector<float>() == std::vector<float>(8, 0.f));  // B starts at zero
  for (float a : lora.lora_A.to_vector<float>()) CHECK(std::abs(a) <= 1.0 / std::sqrt(6.0));
  randomise_b(lora, 9);
  lora.eval();
  Tensor x = test::random_tensor({3, 6}, 5, -1, 1, DType::f32);
  // the formula on doubles, element by element
  auto xv = x.to_vector<double>(), w = base.weight.to_vector<double>(),
       b = base.bias.to_vector<double>();
  auto A = lora.lora_A.to_vector<double>(), B = lora.lora_B.to_vector<double>();
  std::vector<double> want;
  for (int i = 0; i < 3; ++i)
    for (int o = 0; o < 4; ++o) {
      double y = b[o], ax[2] = {0, 0};
      for (int k = 0; k < 6; ++k) y += xv[i * 6 + k] * w[o * 6 + k];
      for (int r = 0; r < 2; ++r)
        for (int k = 0; k < 6; ++k) ax[r] += xv[i * 6 + k] * A[r * 6 + k];
      y += 3.0 / 2 * (B[o * 2] * ax[0] + B[o * 2 + 1] * ax[1]);  // alpha/r = 1.5
      want.push_back(y);
    }
  test::check_close(lora(x), want, 1e-5, 1e-5);
  // dropout acts on the adapter's input in training only
  nn::LoraLinear dropped(base, 2, 3.0, 0.5);
  NoGradGuard ng;
  copy_(dropped.lora_A, lora.lora_A);
  copy_(dropped.lora_B, lora.lora_B);
  dropped.eval();
  CHECK(test::bitwise_equal(dropped(x), lora(x)));
  dropped.train();
  CHECK_FALSE(test::bitwise_equal(dropped(x), lora(x)));
  CHECK_THROWS_AS(nn::LoraLinear(base, 0, 1.0, 0.0), ConfigError);
  CHECK_THROWS_AS(nn::LoraLinear(base, 2, 0.0, 0.0), ConfigError);
  CHECK_THROWS_AS(nn::LoraLinear(base, 2, 1.0, 1.0), ConfigError);
}

TEST_CASE("lora: insertion keeps the output and trains only the adapters and the head") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  Tensor before = model->forward(b.input_ids, b.attention_mask).logits;
  const LoraConfig config{.rank = 8, .alpha = 16, .dropout = 0.1};
  InsertLoraReport r = insert_lora(*model, config);
  // per layer: query, key, value, attention.output.dense, intermediate.dense, output.dense
  CHECK(r.replaced.size() == 12);
  CHECK(r.replaced[0] == "bert.encoder.layer.0.attention.self.query");
  // rank 8: 8·(128 + 128) = 2,048 for each of the 4 square Linears, 8·(128 + 512) = 5,120
  // for each FFN Linear: 18,432 per layer, 36,864 in all; + the head's 258
  CHECK(r.lora_parameters == 36864);
  CHECK(r.trainable == 36864 + 258);
  CHECK(r.total == 4386178 + 36864);
  CHECK(report_trainable_parameters(*model).trainable == 37122);
  Tensor after = model->forward(b.input_ids, b.attention_mask).logits;
  CHECK(after.to_vector<float>() == before.to_vector<float>());  // B = 0: exactly the same
  // one backward: gradients reach exactly the trainable tensors
  model->train();
  backward(model->forward(b.input_ids, b.attention_mask, Tensor(), b.labels).loss);
  int with_grad = 0;
  for (const auto& [path, p] : model->named_parameters()) {
    INFO(path);
    const bool adapter = path.ends_with("lora_A") || path.ends_with("lora_B");
    const bool head = path.rfind("classifier.", 0) == 0;
    CHECK(p.requires_grad() == (adapter || head));
    CHECK(p.grad().defined() == (adapter || head));
    with_grad += p.grad().defined();
  }
  CHECK(with_grad == 12 * 2 + 2);
  // the caller's config is read only; targets that match nothing are refused
  CHECK(config.rank == 8);
  CHECK_THROWS_AS(insert_lora(*model, {.targets = "^nothing"}), ConfigError);
}

TEST_CASE("lora: fused eval outputs equal the unfused ones within 1e-5") {
  auto model = test::tiny_bert();
  insert_lora(
      *model,
      {.rank = 4, .alpha = 8, .dropout = 0.2, .targets = R"(attention\.self\.(query|value)$)"});
  CHECK(report_trainable_parameters(*model).trainable == 4 * 4 * (128 + 128) + 258);
  randomise_b(*model, 100);
  model->eval();
  const data::Batch b = test::tiny_batch();
  Tensor unfused = model->forward(b.input_ids, b.attention_mask).logits;
  auto bias = std::dynamic_pointer_cast<nn::LoraLinear>(
                  model->bert->encoder->layer->at<nn::BertLayer>(0).attention->self->query)
                  ->bias;
  FuseLoraReport f = fuse_lora(*model);
  CHECK(f.fused.size() == 4);
  auto fused_q = std::dynamic_pointer_cast<nn::Linear>(
      model->bert->encoder->layer->at<nn::BertLayer>(0).attention->self->query);
  REQUIRE(fused_q != nullptr);
  CHECK(fused_q->bias.is_same(bias));            // the original bias
  CHECK_FALSE(fused_q->weight.requires_grad());  // W was frozen, so is W'
  for (const auto& [path, m] : model->named_modules()) CHECK(m->type_name() != "LoraLinear");
  Tensor fused = model->forward(b.input_ids, b.attention_mask).logits;
  test::check_close(fused, unfused, 1e-5, 0);
  CHECK_FALSE(
      test::bitwise_equal(fused, test::tiny_bert()->forward(b.input_ids, b.attention_mask).logits));
}

TEST_CASE("lora: a LoraLinear traces as one call_module node") {
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph plain = trace_bert(model, {"input_ids"}, b);
  insert_lora(*model, {});
  Graph g = trace_bert(model, {"input_ids"}, b);
  CHECK(g.size() == plain.size());  // the same nodes: the adapters live inside the leaves
  add_common_metadata(g, graph_inputs(g, b));
  const Node& q = g.at("bert_encoder_layer_0_attention_self_query");
  CHECK(q.op == OpKind::call_module);
  CHECK(q.meta.module_type == "LoraLinear");
  CHECK(q.meta.mase_type == "module");
  CHECK(q.meta.mase_op == "lora_linear");
  REQUIRE(q.meta.parameters.size() == 4);
  CHECK(q.meta.parameters[2].name == "lora_A");
  CHECK(q.meta.parameters[2].shape == Shape{8, 128});
  CHECK(q.meta.parameters[0].trainable == false);
  CHECK(q.meta.parameters[3].trainable == true);
  // a graph traced BEFORE insertion calls the new modules too (looked up by path when run)
  randomise_b(*model, 7);
  CHECK(test::bitwise_equal(plain.run(graph_inputs(plain, b)).at("logits"),
                            model->forward(b.input_ids)));
}

}  // namespace mase::graph
