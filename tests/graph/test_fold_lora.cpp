// tests/graph/test_fold_lora.cpp — the fold_lora pass (graph/passes/fold_lora.h) inside
// graph::compile: in eval the LoRA layers become linear(x, W + s·B·A, b) and fuse like plain
// Linears, the logits equal the eager LoRA model's within fp32 rounding; in training the
// adapters stay as they are (gradients bit for bit eager's); a plan refolds when the adapters
// moved, and only then.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "models/lora.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

int64_t count_module(const Graph& g, const std::string& type) {
  int64_t n = 0;
  for (const graph::Node* node : g.nodes())
    n += node->op == OpKind::call_module && g.root().submodule(node->target)->type_name() == type;
  return n;
}

}  // namespace

TEST_CASE("fold_lora: eval folds every adapter and fuses the folded layers") {
  auto model = lora_bert();
  model->eval();
  nn::fuse_kernels(*model);  // eager LoRA: the blocks with a LoraLinear child stay unfused
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = small_batch();
  Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  const CompiledGraph& cg = compiled.last();
  CHECK(count_module(cg.graph, "LoraLinear") == 0);
  CHECK(cg.lora_folds.size() == 12);              // 6 Linears per layer, 2 layers
  CHECK(count_target(cg.graph, "linear_gelu") == 2);  // the folded intermediate.dense fuses
  CHECK(count_target(cg.graph, "dropout_add_layer_norm") == 4);
  bool reported = false;
  for (const PassRun& p : cg.passes)
    reported |= p.name == "fold_lora" && p.report.starts_with("fold_lora: folded 12 LoRA layers");
  CHECK(reported);
  Tensor want = eager_outputs(*model, b, false).at("logits");
  CHECK(rel_diff(y, want) < 1e-5);
  CHECK(rel_diff(y, want) > 0);  // not trivially equal: W' rounded once, the fused kernels ran
  // the same model with the pass off: the adapters' own path, the same logits
  Compiled unfolded = compile_bert(model, {{"fold_lora"}});
  Tensor y2 = unfolded(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(count_module(unfolded.last().graph, "LoraLinear") == 12);
  CHECK(rel_diff(y2, want) < 1e-5);
}

TEST_CASE("fold_lora: training leaves the adapters unfolded and their gradients eager's") {
  auto model = lora_bert();
  model->train();
  Compiled compiled = compile_bert(model);
  const data::Batch b = small_batch();
  auto got = loss_and_grads(*model, [&] {
    return compiled(bert_inputs(train_inputs(), b)).at("loss");
  });
  const CompiledGraph& cg = compiled.last();
  CHECK(count_module(cg.graph, "LoraLinear") == 12);
  CHECK(cg.lora_folds.empty());
  for (const PassRun& p : cg.passes) CHECK(p.name != "fold_lora");
  CHECK(got.at("bert.encoder.layer.0.attention.self.query.lora_A").defined());
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(got, want);
}

TEST_CASE("fold_lora: a replay refolds when the adapters moved and only then") {
  auto model = lora_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = small_batch();
  compiled(bert_inputs(eval_inputs(), b));
  compiled(bert_inputs(eval_inputs(), b));
  CHECK(compiled.refolds() == 0);
  // a training step moved one adapter: the next replay must see it
  auto* q = dynamic_cast<nn::LoraLinear*>(
      model->submodule("bert.encoder.layer.1.attention.self.query").get());
  REQUIRE(q != nullptr);
  copy_(q->lora_B, random_tensor(q->lora_B.shape(), 99, -1.0, 1.0, DType::f32));
  Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(compiled.refolds() == 1);
  CHECK(compiled.compiles() == 1);
  CHECK(rel_diff(y, eager_outputs(*model, b, false).at("logits")) < 1e-5);
  compiled(bert_inputs(eval_inputs(), b));
  CHECK(compiled.refolds() == 1);
}

TEST_CASE("fold_lora: a replay refolds when the frozen W was loaded in place, and only then") {
  // The base weight W is frozen under LoRA, but a frozen tensor still changes when a checkpoint
  // is loaded into the model (load_state_dict copies into the same storage). The plan's W' was
  // folded from the old W: it must be refolded, once, and without touching W itself.
  auto model = lora_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = small_batch();
  compiled(bert_inputs(eval_inputs(), b));
  const std::string key = "bert.encoder.layer.0.attention.self.query.weight";
  auto state = model->state_dict();
  REQUIRE(!state.at(key).requires_grad());  // frozen
  state[key] = random_tensor(state.at(key).shape(), 77, -1.0, 1.0, DType::f32);
  const Tensor loaded = state.at(key).clone();
  model->load_state_dict(state);
  Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(compiled.refolds() == 1);  // that layer only
  CHECK(compiled.compiles() == 1);
  CHECK(rel_diff(y, eager_outputs(*model, b, false).at("logits")) < 1e-5);
  CHECK(max_abs_diff(model->state_dict().at(key), loaded) == 0);  // W itself is as loaded
  // idempotent: nothing moved since, so no refold and the same logits bit for bit
  Tensor y2 = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(compiled.refolds() == 1);
  CHECK(max_abs_diff(y2, y) == 0);
}

TEST_CASE("fold_lora: a W over borrowed memory, written behind the plan's back, is refolded") {
  // A W that is a view of memory the runtime does not own (from_storage: a memory-mapped
  // checkpoint, another framework's buffer) can change without any op of ours running. The
  // fold reads it, never writes it.
  auto model = lora_bert();
  model->eval();
  auto* v = dynamic_cast<nn::LoraLinear*>(
      model->submodule("bert.encoder.layer.1.attention.self.value").get());
  REQUIRE(v != nullptr);
  const Tensor w0 = v->weight.detach().contiguous();
  auto host = std::make_shared<std::vector<float>>(w0.to_vector<float>());
  const std::vector<float> original = *host;
  auto storage = std::make_shared<Storage>(host->data(), host->size() * sizeof(float),
                                           Device::cpu(), host);
  v->weight = Tensor::from_storage(storage, w0.shape(), w0.strides(), 0, DType::f32);
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = small_batch();
  compiled(bert_inputs(eval_inputs(), b));
  compiled(bert_inputs(eval_inputs(), b));
  CHECK(compiled.refolds() == 0);
  CHECK(*host == original);  // folding wrote W' elsewhere, not into the borrowed memory
  for (size_t i = 0; i < host->size(); i += 3) (*host)[i] *= -2.0f;  // no op of ours ran
  const std::vector<float> written = *host;
  Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(compiled.refolds() == 1);
  CHECK(rel_diff(y, eager_outputs(*model, b, false).at("logits")) < 1e-5);
  CHECK(*host == written);
  compiled(bert_inputs(eval_inputs(), b));
  CHECK(compiled.refolds() == 1);
}

TEST_CASE("fold_lora: a layer whose W changed shape is a ShapeError, not a refold") {
  auto model = lora_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = small_batch();
  compiled(bert_inputs(eval_inputs(), b));
  auto* q = dynamic_cast<nn::LoraLinear*>(
      model->submodule("bert.encoder.layer.0.attention.self.query").get());
  REQUIRE(q != nullptr);
  const Shape s = q->weight.shape();
  q->weight = Tensor::zeros({s[0] + 1, s[1]});
  CHECK_THROWS_AS(compiled(bert_inputs(eval_inputs(), b)), ShapeError);
  CHECK(test::error_message([&] { compiled(bert_inputs(eval_inputs(), b)); })
            .starts_with("[fold_lora] expected bert.encoder.layer.0.attention.self.query as compiled, W ("));
}

// On a GPU refresh() refolds W' before every replay (no host copy to compare with): the logits
// follow a W loaded in place there too, and a replay with nothing moved gives the same bits.
TEST_CASE("fold_lora: on a GPU a replay follows a W loaded in place") {
  if (!have_gpu()) return;
  auto model = lora_bert();
  model->eval();
  model->to(Device::cuda(0));
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b = data::to_device(small_batch(), Device::cuda(0));
  Tensor y0 = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(rel_diff(y0, eager_outputs(*model, b, false).at("logits")) < 1e-5);
  const std::string key = "bert.encoder.layer.1.intermediate.dense.weight";
  auto state = model->state_dict();
  state[key] = random_tensor(state.at(key).shape(), 78, -1.0, 1.0, DType::f32).to(Device::cuda(0));
  model->load_state_dict(state);
  Tensor y = compiled(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(rel_diff(y, eager_outputs(*model, b, false).at("logits")) < 1e-5);
  CHECK(max_abs_diff(y, y0) > 1e-4);  // the new W mattered
  CHECK(max_abs_diff(compiled(bert_inputs(eval_inputs(), b)).at("logits"), y) == 0);
  CHECK(compiled.compiles() == 1);
}
