// tests/graph/test_dropout.cpp — editing a graph: erase with users (torch.fx's message),
// replace_all_uses_with, dead-code elimination, and the dropout passes (6 -> 0 for bert-tiny,
// outputs unchanged in eval).
#include "graph/passes/dropout.h"
#include "graph_helpers.h"

namespace mase::graph {

TEST_CASE("dropout: bert-tiny has 6 dropout nodes") {
  auto model = test::tiny_bert();
  model->eval();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, test::tiny_batch());
  CountDropoutReport r = count_dropout(g);
  // embeddings; per layer the attention output and the FFN output; the classifier's
  CHECK(r.count == 6);
  CHECK(r.names == std::vector<std::string>{"bert_embeddings_dropout",
                                            "bert_encoder_layer_0_attention_output_dropout",
                                            "bert_encoder_layer_0_output_dropout",
                                            "bert_encoder_layer_1_attention_output_dropout",
                                            "bert_encoder_layer_1_output_dropout", "dropout"});
  CHECK(r.str().rfind("count_dropout: 6 dropout nodes\n  bert_embeddings_dropout\n", 0) == 0);
}

TEST_CASE("dropout: erasing a node that still has users names it and its users") {
  auto model = test::tiny_bert();
  model->eval();
  Graph g = trace_bert(model, {"input_ids", "attention_mask"}, test::tiny_batch());
  Node& drop = g.at("bert_embeddings_dropout");
  // the embeddings' output feeds layer 0's query, key, value and its residual add
  CHECK(test::error_message([&] { g.erase(&drop); }) ==
        "Tried to erase node bert_embeddings_dropout but it still had 4 users in the graph: "
        "{bert_encoder_layer_0_attention_self_query, bert_encoder_layer_0_attention_self_key, "
        "bert_encoder_layer_0_attention_self_value, add_2}!");
  CHECK_THROWS_AS(g.erase(&drop), GraphError);
  CHECK(g.find("bert_embeddings_dropout") != nullptr);  // nothing changed
  g.lint();
}

TEST_CASE("dropout: replace_all_uses_with then erase") {
  auto model = test::tiny_bert();
  model->eval();
  Graph g = trace_bert(model, {"input_ids"}, test::tiny_batch());
  Node& drop = g.at("bert_embeddings_dropout");
  Node* ln = drop.args.at(0);
  const size_t before = g.size();
  CHECK(g.replace_all_uses_with(&drop, ln) == 4);
  CHECK(drop.users.empty());
  CHECK(ln->users.size() == 5);  // the dropout (still its user until erased) + the 4 moved
  g.erase(&drop);
  CHECK(ln->users.size() == 4);
  CHECK(g.size() == before - 1);
  CHECK(g.at("bert_encoder_layer_0_attention_self_query").args.at(0) == ln);
  g.lint();
}

TEST_CASE("dropout: remove_dropout leaves none and the eval outputs unchanged") {
  auto model = test::tiny_bert();
  model->eval();
  const data::Batch b = test::tiny_batch();
  Graph g = trace_bert(model, {"input_ids", "attention_mask", "labels"}, b);
  TensorMap before = g.run(graph_inputs(g, b));
  const size_t nodes = g.size();
  RemoveDropoutReport r = remove_dropout(g);
  CHECK(r.removed == 6);
  // users: embeddings 4 (query, key, value, residual add); per layer 1 + 1 (the residual adds);
  // the classifier dropout 1 (the classifier)
  CHECK(r.rewired_uses == 4 + 2 * (1 + 1) + 1);
  CHECK(g.size() == nodes - 6);
  CHECK(count_dropout(g).count == 0);
  g.lint();
  TensorMap after = g.run(graph_inputs(g, b));
  CHECK(test::bitwise_equal(after.at("logits"), before.at("logits")));
  CHECK(test::bitwise_equal(after.at("loss"), before.at("loss")));
  // in training mode the graph without dropout is deterministic: two runs agree
  model->train();
  manual_seed(1);
  Tensor t1 = g.run(graph_inputs(g, b)).at("logits");
  manual_seed(2);
  Tensor t2 = g.run(graph_inputs(g, b)).at("logits");
  // attention-probability dropout is the sdpa node's dropout_p: still active in training
  CHECK_FALSE(test::bitwise_equal(t1, t2));
  model->eval();
}

TEST_CASE("dropout: dead code elimination removes what nothing reads") {
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  Graph g = trace_bert(model, {"input_ids", "labels"}, test::tiny_batch(3, 2000));
  // drop the loss from the outputs: cross_entropy loses its only user
  Node* out = g.output_node();
  Node* logits = out->args.at(0);
  Node* loss = out->args.at(1);
  g.erase(out);
  g.set_output({{"logits", logits}});
  CHECK(loss->users.empty());
  CHECK(g.eliminate_dead_code() == 1);
  CHECK(g.find("cross_entropy") == nullptr);
  CHECK(g.find("labels") != nullptr);  // placeholders stay
  g.lint();
}

}  // namespace mase::graph
