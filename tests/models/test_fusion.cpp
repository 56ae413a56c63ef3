// tests/models/test_fusion.cpp — the fusion pass (models/fusion.h): a freshly built BERT runs
// the module-by-module reference path; after fuse_kernels() the same loss and the same
// gradient for every parameter (dropout on, with padding) through the fused ops; blocks whose
// children are not the plain types stay unfused; replacing a child unfuses its block; a tracer
// sees the fused ops that run.
#include <map>
#include <string>

#include "helpers.h"
#include "models/bert.h"
#include "models/fusion.h"

using namespace mase;
using namespace mase::nn;

namespace {

BertConfig small_config() {
  BertConfig c;
  c.vocab_size = 50;
  c.hidden_size = 24;  // 3 heads of 8; C = 24 is not a multiple of 16 (no aligned rows)
  c.num_hidden_layers = 2;
  c.num_attention_heads = 3;
  c.intermediate_size = 40;
  c.max_position_embeddings = 16;
  return c;
}

struct Batch {
  Tensor ids, mask, labels;
};

Batch batch() {
  std::vector<int32_t> ids(3 * 7), mask(3 * 7, 1);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(1 + (i * 17) % 49);
  for (int t = 4; t < 7; ++t) mask[7 + t] = 0;  // row 1 has 3 padding tokens
  return {Tensor::from(ids, {3, 7}), Tensor::from(mask, {3, 7}),
          Tensor::from(std::vector<int32_t>{0, 1, 1}, {3})};
}

// Counts the ops recorded while it is installed.
struct OpCounter : OpObserver {
  std::map<std::string, int> count;
  void on_op(std::string_view op, const Tensors&, const Attrs&, const Tensor&) override {
    ++count[std::string(op)];
  }
};

// A module observer that just runs the call (what a tracer does, minus the recording).
struct PassThrough : ModuleObserver {
  Tensor on_call(Module&, const Tensor&, const std::function<Tensor()>& run) override { return run(); }
};

// One training forward and backward from the default generator seeded with 11 (so both
// paths draw the same dropout masks); returns the loss and every gradient, by path.
std::map<std::string, std::vector<double>> step(BertForSequenceClassification& model,
                                                OpCounter* counter = nullptr) {
  Batch b = batch();
  model.train();
  for (const Tensor& p : model.parameters()) p.set_grad(Tensor());
  manual_seed(11);
  OpObserver* prev = set_op_observer(counter);
  Tensor loss = model.forward(b.ids, b.mask, Tensor(), b.labels).loss;
  set_op_observer(prev);
  backward(loss);
  std::map<std::string, std::vector<double>> out{{"loss", loss.to_vector<double>()}};
  for (const auto& [path, p] : model.named_parameters()) out[path] = p.grad().to_vector<double>();
  return out;
}

std::shared_ptr<BertForSequenceClassification> make_model() {
  manual_seed(1);
  return std::make_shared<BertForSequenceClassification>(small_config());
}

}  // namespace

TEST_CASE("fusion: fused and reference paths give the same loss and gradients") {
  auto model = make_model();
  OpCounter fused_ops, reference_ops;
  const auto reference = step(*model, &reference_ops);  // a new model runs the reference path
  const FusionReport r = fuse_kernels(*model);
  CHECK(r.ffn == 2);
  CHECK(r.ffn_total == 2);
  CHECK(r.add_norm == 4);
  CHECK(r.add_norm_total == 4);
  CHECK(r.str() == "fusion: 2 of 2 FFN blocks (bias + GELU), 4 of 4 Add & Norm blocks "
                   "(bias + dropout + residual + LayerNorm)\n");
  const auto fused = step(*model, &fused_ops);
  // 2 layers: one bias_gelu and two Add & Norms each
  CHECK(fused_ops.count["bias_gelu"] == 2);
  CHECK(fused_ops.count["dropout_add_layer_norm"] == 4);
  CHECK(reference_ops.count["bias_gelu"] == 0);
  CHECK(reference_ops.count["dropout_add_layer_norm"] == 0);
  CHECK(reference_ops.count["gelu"] == 2);
  CHECK(fused_ops.count["gelu"] == 0);
  REQUIRE(fused.size() == reference.size());
  for (const auto& [path, want] : reference) {
    INFO(path);
    const std::vector<double>& got = fused.at(path);
    REQUIRE(got.size() == want.size());
    double scale = 0;
    for (double v : want) scale = std::max(scale, std::abs(v));
    for (size_t i = 0; i < got.size(); ++i) CHECK(std::abs(got[i] - want[i]) <= 1e-5 * scale + 1e-9);
  }
  unfuse_kernels(*model);
  OpCounter again;
  step(*model, &again);
  CHECK(again.count["bias_gelu"] == 0);
  CHECK(again.count["gelu"] == 2);
}

TEST_CASE("fusion: a module observer (tracing) sees the fused ops that run") {
  auto model = make_model();
  fuse_kernels(*model);
  PassThrough tracer;
  OpCounter ops;
  ModuleObserver* prev = set_module_observer(&tracer);
  step(*model, &ops);
  set_module_observer(prev);
  CHECK(ops.count["bias_gelu"] == 2);
  CHECK(ops.count["dropout_add_layer_norm"] == 4);
  CHECK(ops.count["gelu"] == 0);
}

TEST_CASE("fusion: a replaced child takes the reference path and is called") {
  // A subclass of Linear may compute something else (a quantized or LoRA wrapper): exact
  // types only, so the Linear-derived child below must be called through its forward.
  struct CountingLinear : Linear {
    int* calls;
    CountingLinear(int64_t in, int64_t out, int* c) : Linear(in, out), calls(c) {}
    Tensor forward(const Tensor& x) override {
      ++*calls;
      return Linear::forward(x);
    }
  };
  const BertConfig c = small_config();
  SUBCASE("replaced before the pass: the pass leaves that block unfused") {
    auto model = make_model();
    int calls = 0;
    model->replace_submodule("bert.encoder.layer.0.intermediate.dense",
                             std::make_shared<CountingLinear>(c.hidden_size, c.intermediate_size, &calls));
    model->replace_submodule("bert.encoder.layer.1.output.dropout", std::make_shared<Identity>());
    model->replace_submodule("bert.encoder.layer.1.attention.output.LayerNorm",
                             std::make_shared<Identity>());
    const FusionReport r = fuse_kernels(*model);
    CHECK(r.ffn == 1);
    CHECK(r.add_norm == 3);
    OpCounter ops;
    step(*model, &ops);
    CHECK(calls == 1);
    CHECK(ops.count["bias_gelu"] == 1);               // layer 1 only
    CHECK(ops.count["dropout_add_layer_norm"] == 3);  // Identity dropout still fuses (p = 0)
  }
  SUBCASE("replaced after the pass: the replacement unfuses its block") {
    auto model = make_model();
    fuse_kernels(*model);
    int calls = 0;
    model->replace_submodule("bert.encoder.layer.0.intermediate.dense",
                             std::make_shared<CountingLinear>(c.hidden_size, c.intermediate_size, &calls));
    OpCounter ops;
    step(*model, &ops);
    CHECK(calls == 1);
    CHECK(ops.count["bias_gelu"] == 1);
    CHECK(ops.count["dropout_add_layer_norm"] == 4);
  }
}
