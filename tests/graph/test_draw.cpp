// tests/graph/test_draw.cpp — the node table, the DOT text, and an SVG rendered by `dot`.
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "../models/temp_dir.h"
#include "graph/draw.h"
#include "graph/metadata.h"
#include "graph_helpers.h"

namespace mase::graph {
namespace test_draw {

namespace {

Graph annotated_tiny() {
  auto model = test::tiny_bert(1, 2000);
  model->eval();
  const data::Batch b = test::tiny_batch(3, 2000);
  Graph g = trace_bert(model, {"input_ids", "attention_mask"}, b);
  add_common_metadata(g, graph_inputs(g, b));
  return g;
}

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

}  // namespace

TEST_CASE("draw: the node table has one row per node with op and shape") {
  Graph g = annotated_tiny();
  std::string t = node_table(g);
  CHECK(std::count(t.begin(), t.end(), '\n') == static_cast<long>(g.size()) + 1);  // + header
  auto has = [&](const char* re) { return std::regex_search(t, std::regex(re)); };
  CHECK(has(
      R"(\nbert_encoder_layer_0_attention_self_query +call_module +linear +\(2, 16, 128\) f32 +bert_embeddings_dropout\n)"));
  CHECK(has(
      R"(\nsdpa +call_function +scaled_dot_product_attention +\(2, 2, 16, 64\) f32 +transpose, transpose_1, transpose_2, view\n)"));
  CHECK(has(R"(\noutput +output +output +\(2, 2\) f32 +classifier\n)"));
}

TEST_CASE("draw: DOT has a box per node, an edge per use, and parameters on modules") {
  Graph g = annotated_tiny();
  std::string dot = to_dot(g);
  CHECK(dot.rfind("digraph mase_graph {", 0) == 0);
  size_t edges = 0;
  for (const Node* n : g.nodes())
    for (const Node* a : n->args) edges += a != nullptr;
  size_t arrows = 0;
  for (size_t p = dot.find(" -> "); p != std::string::npos; p = dot.find(" -> ", p + 1)) ++arrows;
  CHECK(arrows == edges);
  CHECK(dot.find("\"attention_mask\" -> \"to_dtype\"") != std::string::npos);
  CHECK(dot.find("weight (128, 128) float[32]") != std::string::npos);
  CHECK(dot.find("call_module Linear  [module_related_func: linear]") != std::string::npos);
}

TEST_CASE("draw: an SVG rendered by dot") {
  Graph g = annotated_tiny();
  test::TempDir dir;
  draw(g, dir.file("g.dot"));
  CHECK(slurp(dir.file("g.dot")) == to_dot(g));
  CHECK_THROWS_AS(draw(g, dir.file("g.jpeg")), ConfigError);
  if (!have_dot()) {
    test::skip("Graphviz's dot is not installed");
    return;
  }
  draw(g, dir.file("g.svg"));
  std::string svg = slurp(dir.file("g.svg"));
  CHECK(svg.find("<svg") != std::string::npos);
  CHECK(svg.find("bert_encoder_layer_1_output_LayerNorm") != std::string::npos);
  CHECK(std::distance(std::filesystem::directory_iterator(dir.path), {}) ==
        2);  // no temporaries left
}

}  // namespace test_draw
}  // namespace mase::graph
