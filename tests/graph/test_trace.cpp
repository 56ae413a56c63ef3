// tests/graph/test_trace.cpp — tracing bert-tiny: node kinds and counts for each choice of
// inputs (counted by hand from the model's forward, models/bert*.cpp), names, and a graph
// that runs to the eager outputs bit for bit, in eval and in training, and trains the same.
#include <map>

#include "graph/op_table.h"
#include "graph_helpers.h"
#include "train/adamw.h"

// Inside mase::graph, Node is the graph's (autograd has a mase::Node too).
namespace mase::graph {
namespace {

std::map<OpKind, int> kind_counts(const Graph& g) {
  std::map<OpKind, int> c;
  for (const Node* n : g.nodes()) ++c[n->op];
  return c;
}

int count_target(const Graph& g, const std::string& target) {
  int c = 0;
  for (const Node* n : g.nodes()) c += n->target == target;
  return c;
}

}  // namespace

TEST_CASE("trace: bert-tiny node kinds and counts") {
  auto model = test::tiny_bert();
  model->eval();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, test::tiny_batch());
  auto c = kind_counts(g);
  CHECK(c[OpKind::placeholder] == 3);
  CHECK(c[OpKind::get_attr] == 0);  // every parameter is read inside a leaf module
  // leaf module calls: embeddings 5 (word, token_type, position, LayerNorm, dropout); per layer
  // 11 (query, key, value, attention dense, dropout, LayerNorm, intermediate dense, GELU,
  // output dense, dropout, LayerNorm); pooler 2 (dense, Tanh); classifier dropout + Linear 2
  CHECK(c[OpKind::call_module] == 5 + 2 * 11 + 2 + 2);
  // tensor methods: mask to_dtype + view; per layer 3 views + 3 transposes (split heads),
  // 1 transpose + 1 reshape (merge heads)
  CHECK(c[OpKind::call_method] == 2 + 2 * 8);
  // functions: zeros_like (token types), arange_like (positions), 2 embedding adds, rsub and mul
  // (additive mask), per layer sdpa + 2 residual adds, select (CLS token), cross_entropy
  CHECK(c[OpKind::call_function] == 2 + 2 + 2 + 2 * 3 + 1 + 1);
  CHECK(c[OpKind::output] == 1);
  CHECK(count_target(g, "sdpa") == 2);
  CHECK(g.output_names() == std::vector<std::string>{"logits", "loss"});
  // names: module paths with '_', ops with counters, inputs by name
  CHECK(g.find("bert_encoder_layer_0_attention_self_query") != nullptr);
  CHECK(g.at("bert_encoder_layer_1_output_dense").target == "bert.encoder.layer.1.output.dense");
  CHECK(g.find("add") != nullptr);
  CHECK(g.find("add_5") != nullptr);  // 6 adds: 2 in the embeddings, 2 per layer
  CHECK(g.find("add_6") == nullptr);
  CHECK(g.at("input_ids").op == OpKind::placeholder);
  CHECK(g.at("transpose").op == OpKind::call_method);
  CHECK(g.at("sdpa").op == OpKind::call_function);
  g.lint();
}

TEST_CASE("trace: the three input choices differ where the model differs") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  Graph ids = trace_bert(model, {"input_ids"}, b);
  Graph mask = trace_bert(model, {"input_ids", "attention_mask"}, b);
  Graph labels = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  Graph all = trace_bert(model, {"input_ids", "attention_mask", "token_type_ids", "labels"}, b);
  // without attention_mask the all-ones mask is built inside the graph from input_ids
  CHECK(count_target(ids, "ones_like") == 1);
  CHECK(ids.at("ones_like").args.at(0) == &ids.at("input_ids"));
  CHECK(count_target(mask, "ones_like") == 0);
  CHECK(mask.at("to_dtype").args.at(0) == &mask.at("attention_mask"));
  // the loss only with labels, and then it is the last node before the output
  CHECK(count_target(ids, "cross_entropy") == 0);
  CHECK(count_target(mask, "cross_entropy") == 0);
  CHECK(count_target(labels, "cross_entropy") == 1);
  auto nodes = labels.nodes();
  CHECK(nodes[nodes.size() - 2]->target == "cross_entropy");
  CHECK(labels.output_node()->args.at(1) == nodes[nodes.size() - 2]);
  CHECK(ids.output_names() == std::vector<std::string>{"logits"});
  // token types given: no zeros_like
  CHECK(count_target(labels, "zeros_like") == 1);
  CHECK(count_target(all, "zeros_like") == 0);
  CHECK(ids.size() == mask.size());         // ones_like replaces the placeholder one for one
  CHECK(labels.size() == mask.size() + 2);  // + labels placeholder + cross_entropy
}

TEST_CASE("trace: the graph runs to the eager outputs bit for bit") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  for (const auto& names : std::vector<std::vector<std::string>>{
           {"input_ids"},
           {"input_ids", "attention_mask", "labels"},
           {"input_ids", "attention_mask", "token_type_ids", "labels"}}) {
    Graph g = trace_bert(model, names, b);
    auto in = graph_inputs(g, b);
    auto get = [&](const char* n) { return in.count(n) ? in.at(n) : Tensor(); };
    auto eager = model->forward(get("input_ids"), get("attention_mask"), get("token_type_ids"),
                                get("labels"));
    TensorMap out = g.run(in);
    CHECK(test::bitwise_equal(out.at("logits"), eager.logits));
    if (eager.loss.defined()) CHECK(test::bitwise_equal(out.at("loss"), eager.loss));
  }
}

TEST_CASE("trace: mean pooling reads the mask through the graph, not as a constant") {
  nn::BertConfig c = nn::BertConfig::preset("bert-tiny", 2000);
  c.pooling = "mean";
  manual_seed(1);
  auto model = std::make_shared<nn::BertForSequenceClassification>(c);
  model->eval();
  Graph g = trace_bert(model, {"input_ids", "attention_mask"}, test::tiny_batch(3, 2000));
  CHECK(g.constants().empty());
  CHECK(g.at("attention_mask").users.size() == 2);      // the additive mask and the pooling weights
  const data::Batch other = test::tiny_batch(4, 2000);  // other ids, same shapes
  Tensor mask = other.attention_mask.detach().clone();
  fill_(select(mask, 0, 0).detach(), 0.0);  // an other mask too: sequence 0 padded ...
  fill_(slice(select(mask, 0, 0), 0, 0, 3).detach(), 1.0);  // ... after its 3rd token
  TensorMap out = g.run({{"input_ids", other.input_ids}, {"attention_mask", mask}});
  CHECK(test::bitwise_equal(out.at("logits"), model->forward(other.input_ids, mask).logits));
}

TEST_CASE("trace: a graph in training mode draws the same dropout masks as eager") {
  auto model = test::tiny_bert();
  model->train();
  const data::Batch b = test::tiny_batch();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  manual_seed(11);
  auto eager = model->forward(b.input_ids, b.attention_mask, Tensor(), b.labels);
  manual_seed(11);
  TensorMap out = g.run(graph_inputs(g, b));
  CHECK(test::bitwise_equal(out.at("logits"), eager.logits));
  manual_seed(12);  // another stream, other masks: the check above is not vacuous
  TensorMap other = g.run(graph_inputs(g, b));
  CHECK_FALSE(test::bitwise_equal(other.at("logits"), eager.logits));
}

TEST_CASE("trace: one training step through the graph equals one eager step") {
  auto eager = test::tiny_bert(5), traced = test::tiny_bert(5);  // identical weights
  eager->train();
  traced->train();
  const data::Batch b = test::tiny_batch();
  Graph g = trace_bert(traced, {"input_ids", "attention_mask", "labels"}, b);
  train::AdamW opt_e(eager->named_parameters(), {.lr = 1e-3});
  train::AdamW opt_g(traced->named_parameters(), {.lr = 1e-3});
  std::vector<Tensor> before;
  for (const auto& [name, p] : traced->named_parameters()) before.push_back(p.detach().clone());
  manual_seed(21);
  Tensor loss_e = eager->forward(b.input_ids, b.attention_mask, Tensor(), b.labels).loss;
  backward(loss_e);
  opt_e.step();
  manual_seed(21);
  Tensor loss_g = g.run(graph_inputs(g, b)).at("loss");
  backward(loss_g);
  opt_g.step();
  CHECK(test::bitwise_equal(loss_e, loss_g));
  auto pe = eager->named_parameters(), pg = traced->named_parameters();
  REQUIRE(pe.size() == pg.size());
  size_t changed = 0;
  for (size_t i = 0; i < pe.size(); ++i) {
    INFO(pe[i].first);
    CHECK(pe[i].first == pg[i].first);
    CHECK(test::bitwise_equal(pe[i].second, pg[i].second));
    changed += !test::bitwise_equal(pg[i].second, before[i]);
  }
  CHECK(changed > pe.size() / 2);  // the step did move the weights
}

TEST_CASE("trace: tracing leaves the random stream where it was") {
  auto model = test::tiny_bert();
  model->train();
  manual_seed(9);
  Graph g = trace_bert(model, {"input_ids"}, test::tiny_batch());
  Generator after = default_generator();
  CHECK(after.seed == 9);
  CHECK(after.offset == 0);
}

TEST_CASE("trace: parameters read outside leaves are get_attr and raw tensors are constants") {
  manual_seed(2);
  auto m = std::make_shared<test::Scaled>();
  Tensor x = test::random_tensor({2, 4}, 7, -1, 1, DType::f32);
  Graph g = test::trace_unary(m, x);
  CHECK(g.at("gain").op == OpKind::get_attr);
  CHECK(g.at("gain").target == "gain");
  CHECK(g.at("_tensor_constant0").op == OpKind::get_attr);
  CHECK(g.constants().size() == 1);
  CHECK(g.at("lin").op == OpKind::call_module);
  CHECK(test::bitwise_equal(g.run({{"x", x}}).at("y"), (*m)(x)));
}

// The tracer follows values without keeping them alive: an intermediate is freed when the
// forward lets go of it, as in eager (it kept all of them until 2026-12-01, and a trace then
// held every intermediate of the forward at once: 1.6x an eager forward's time at bert-tiny's
// B 64 x T 256, in fresh pages). A chain of 32 steps of 4 MB each holds about two at a time.
TEST_CASE("trace: intermediates are freed as the forward goes, the chain still recorded") {
  auto m = std::make_shared<test::Scaled>();  // any root; the forward below reads none of it
  const Tensor x = test::random_tensor({1024, 1024}, 3, -1, 1, DType::f32);  // 4 MB
  auto forward = [](const TensorMap& in) {
    Tensor y = in.at("x");
    for (int i = 0; i < 32; ++i) y = add(mul(y, 0.5), 1.0);  // each step's tensors die
    return NamedTensors{{"y", y}};
  };
  const size_t before = allocator_stats().in_use_bytes;
  reset_peak_stats();
  Graph g = trace(m, {{"x", x}}, forward);
  const size_t held = allocator_stats().peak_in_use_bytes - before;
  CHECK(held <= size_t(4) * x.nbytes());  // 32 steps x 2 tensors if they were kept: 256 MB
  int64_t calls = 0;
  for (const Node* n : g.nodes()) calls += n->op == OpKind::call_function;
  CHECK(calls == 64);  // every mul and add, each reading the one before
  CHECK(test::bitwise_equal(g.run({{"x", x}}).at("y"), forward({{"x", x}})[0].second));
}

TEST_CASE("trace: bad input names and inputs are refused") {
  auto model = test::tiny_bert(1, 2000);
  const data::Batch b = test::tiny_batch(3, 2000);
  CHECK_THROWS_AS(trace_bert(model, {"attention_mask"}, b), ConfigError);
  CHECK_THROWS_AS(trace_bert(model, {"input_ids", "mask"}, b), ConfigError);
  CHECK_THROWS_AS(trace_bert(model, {"input_ids", "input_ids"}, b), ConfigError);
  model->eval();
  Graph g = trace_bert(model, {"input_ids"}, b);
  CHECK(test::error_message([&] {
          g.run({{"input_ids", b.input_ids}, {"attention_mask", b.attention_mask}});
        }) ==
        "[graph] expected inputs among input_ids, got 'attention_mask' (trace with it to use "
        "it)");
  CHECK_THROWS_AS(g.run({}), GraphError);
  CHECK_THROWS_AS(g.run({{"input_ids", b.input_ids.to(DType::f32)}}), DTypeError);
  CHECK_THROWS_AS(
      g.run({{"input_ids", test::tiny_batch(3, 2000).input_ids.as_strided({2, 8}, {16, 1}, 0)}}),
      ShapeError);
}

}  // namespace mase::graph
