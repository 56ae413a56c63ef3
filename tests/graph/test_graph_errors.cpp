// tests/graph/test_graph_errors.cpp — what a student reads when a graph fails: an error thrown
// by a node while a graph or a compiled plan runs names that node and keeps its type; graph/'s
// own messages say what was expected and what was got.
#include <fstream>
#include <functional>
#include <regex>
#include <typeinfo>

#include "../models/temp_dir.h"
#include "graph/compile.h"
#include "graph/export.h"
#include "graph_helpers.h"

using namespace mase;
using namespace mase::graph;

namespace {

// A leaf module that throws whatever `fault` throws, once it is set (traced without one).
struct Faulty : nn::Module {
  std::function<void()> fault;
  std::string type_name() const override { return "Faulty"; }
  Tensor forward(const Tensor& x) override {
    if (fault) fault();
    return relu(x);
  }
};

// y = transpose(faulty(lin(x)), 0, 1): a call_module node that can fail, then a call_method.
struct WithFaulty : nn::Module {
  nn::ModulePtr lin, faulty;
  WithFaulty() {
    register_module("lin", lin, nn::ModulePtr(std::make_shared<nn::Linear>(4, 3)));
    register_module("faulty", faulty, nn::ModulePtr(std::make_shared<Faulty>()));
  }
  std::string type_name() const override { return "WithFaulty"; }
  bool is_leaf() const override { return false; }
  Tensor forward(const Tensor& x) override { return transpose((*faulty)((*lin)(x)), 0, 1); }
  void set_fault(std::function<void()> f) { static_cast<Faulty&>(*faulty).fault = std::move(f); }
};

struct Caught {
  const std::type_info* type = nullptr;
  std::string what;
};
template <class F>
Caught caught(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return {&typeid(e), e.what()};
  }
  return {};
}

// Each error type a module can throw: the run's error is of that very type, its message the
// node and then the module's own message.
template <class Run>
void check_each_type(WithFaulty& m, Run&& run) {
  const std::string node = "[graph] in node faulty (call_module faulty): ";
  auto check = [&]<class E>(const E& thrown) {
    m.set_fault([thrown] { throw thrown; });
    const Caught c = caught(run);
    m.set_fault(nullptr);
    INFO(thrown.what());
    REQUIRE(c.type != nullptr);
    CHECK(*c.type == typeid(E));
    CHECK(c.what == node + thrown.what());
  };
  check(ShapeError("[faulty] expected (3), got (4)"));
  check(IoError("[faulty] expected a readable file, got none"));
  check(AutogradError("[faulty] expected a graph, got a freed one"));
  check(Error("[faulty] expected nothing, got a plain Error"));
}

}  // namespace

TEST_CASE("graph errors: a failing node is named and its error keeps its type (Graph::run)") {
  auto m = std::make_shared<WithFaulty>();
  const Tensor x = test::random_tensor({5, 4}, 1, -1.0, 1.0, DType::f32);
  Graph g = test::trace_unary(m, x);
  NoGradGuard ng;
  check_each_type(*m, [&] { g.run({{"x", x}}); });
  // an op's own error (a call_method here), made by editing its attrs
  g.at("transpose").attrs = {{"dim0", int64_t(0)}, {"dim1", int64_t(5)}};
  const Caught c = caught([&] { g.run({{"x", x}}); });
  REQUIRE(c.type != nullptr);
  CHECK(*c.type == typeid(ShapeError));
  CHECK(c.what.starts_with("[graph] in node transpose (call_method transpose): [transpose] "));
}

TEST_CASE("graph errors: a failing node is named and its error keeps its type (compiled plan)") {
  auto m = std::make_shared<WithFaulty>();
  const Tensor x = test::random_tensor({5, 4}, 1, -1.0, 1.0, DType::f32);
  Compiled compiled = compile(m, [m](const TensorMap& in) {
    return NamedTensors{{"y", (*m)(in.at("x"))}};
  });
  NoGradGuard ng;
  compiled({{"x", x}});  // traced and planned without a fault
  check_each_type(*m, [&] { compiled({{"x", x}}); });
  check_each_type(*m, [&] { compiled.last().plan.run({{"x", x}}); });
}

// The house form, runtime/error.h: "[tag] expected …, got … (hint)". Each of these once said
// only what went wrong ("[graph] no node named 'x'", "[lint] duplicate node name x", …).
TEST_CASE("graph errors: graph/'s messages say what was expected and what was got") {
  auto m = std::make_shared<WithFaulty>();
  const Tensor x = test::random_tensor({5, 4}, 1, -1.0, 1.0, DType::f32);
  Graph g = test::trace_unary(m, x);
  Graph other = test::trace_unary(m, x);
  graph::Node* lin = g.find("lin");
  REQUIRE(lin != nullptr);
  test::TempDir dir;
  {
    std::ofstream f(dir.file("graph.json"));
    f << R"({"format": "mase-graph", "version": 99})";
  }
  const std::regex house(R"(^\[[a-z_]+\] expected .+, got .+)");
  auto check = [&]<class E>(const std::string& what, const std::function<void()>& f, const E&,
                            const std::string& got) {
    INFO(what);
    const Caught c = caught(f);
    REQUIRE(c.type != nullptr);
    CHECK(*c.type == typeid(E));
    INFO(c.what);
    CHECK(std::regex_search(c.what, house));
    CHECK(c.what.find(got) != std::string::npos);
  };
  const GraphError graph_error("");
  check("at", [&] { g.at("bert.lin"); }, graph_error, "got none (node names write");
  check("attr", [&] { lin->attr("p"); }, graph_error, "got none (its attrs: none)");
  check("replace_all_uses_with", [&] { g.replace_all_uses_with(lin, lin); }, graph_error,
        "got lin and lin");
  check("erase", [&] { g.erase(other.find("output")); }, graph_error, "got output (a node of");
  check("run", [&] { g.run({{"y", x}}); }, graph_error, "expected inputs among x, got 'y'");
  check("op_info", [] { op_info("mystery"); }, graph_error, "got 'mystery'");
  check("bert_inputs", [] { bert_inputs({"attention_mask"}, test::tiny_batch()); },
        ConfigError(""), "got attention_mask (BERT needs it)");
  check("load_graph", [&] { load_graph(dir.path.string()); }, IoError(""),
        "got mase-graph version 99");
  Compiled compiled = compile(m, [m](const TensorMap& in) {
    return NamedTensors{{"y", (*m)(in.at("x"))}};
  });
  check("last", [&] { compiled.last(); }, graph_error, "got none (call the compiled model first)");
  // lint: an arg edited by hand, behind the users' backs
  g.find("transpose")->args = {g.find("x")};
  check("lint", [&] { g.lint(); }, graph_error, "got no such arg (edit args through");
}
