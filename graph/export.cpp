// graph/export.cpp — graph.json + model.safetensors, both ways (see export.h).
#include "graph/export.h"

#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "graph/metadata.h"
#include "runtime/atomic_file.h"
#include "models/module_registry.h"
#include "models/safetensors.h"
#include "quant/checkpoint.h"

namespace mase::graph {
namespace {

using nlohmann::json;
constexpr int kVersion = 1;

json attr_to_json(const AttrValue& v) {
  return std::visit(
      [](const auto& x) -> json {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, int64_t>)
          return {{"i", x}};
        else if constexpr (std::is_same_v<T, bool>)
          return {{"b", x}};
        else if constexpr (std::is_same_v<T, std::string>)
          return {{"s", x}};
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          return {{"ints", x}};
        else if (std::isfinite(x))
          return {{"f", x}};  // nlohmann writes doubles round-trip exact
        else
          return {{"f", std::isnan(x) ? "nan" : (x > 0 ? "inf" : "-inf")}};
      },
      v);
}

AttrValue attr_from_json(const json& j) {
  if (j.contains("i")) return j.at("i").get<int64_t>();
  if (j.contains("b")) return j.at("b").get<bool>();
  if (j.contains("s")) return j.at("s").get<std::string>();
  if (j.contains("ints")) return j.at("ints").get<std::vector<int64_t>>();
  const json& f = j.at("f");
  if (f.is_string()) {
    const std::string s = f.get<std::string>();
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
    return s == "inf" ? std::numeric_limits<double>::infinity()
                      : -std::numeric_limits<double>::infinity();
  }
  return f.get<double>();
}

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

}  // namespace

// ---- ModuleTree -----------------------------------------------------------------------------

ModuleTree& ModuleTree::subtree(const std::string& name) {
  for (const auto& [n, m] : named_children()) {
    if (n != name) continue;
    auto* tree = dynamic_cast<ModuleTree*>(m.get());
    MASE_CHECK(tree, graph::GraphError, "[load_graph] expected '", name,
               "' to hold other modules, got a ", m->type_name(),
               " (graph.json places modules inside a leaf: a malformed export)");
    return *tree;
  }
  children_slots_.emplace_back();
  register_module(name, children_slots_.back(), nn::ModulePtr(std::make_shared<ModuleTree>()));
  return dynamic_cast<ModuleTree&>(*children_slots_.back());
}

void ModuleTree::place(const std::string& path, nn::ModulePtr m) {
  const auto dot = path.find('.');
  if (dot != std::string::npos) return subtree(path.substr(0, dot)).place(path.substr(dot + 1), m);
  for (const auto& [n, existing] : named_children())
    MASE_CHECK(n != path, graph::GraphError, "[load_graph] expected one module at '", path,
               "', got two (a malformed export)");
  children_slots_.emplace_back();
  register_module(path, children_slots_.back(), std::move(m));
}

void ModuleTree::place_tensor(const std::string& path, Tensor t, bool parameter) {
  const auto dot = path.find('.');
  if (dot != std::string::npos)
    return subtree(path.substr(0, dot)).place_tensor(path.substr(dot + 1), t, parameter);
  tensor_slots_.emplace_back();
  const bool grad = t.requires_grad();
  if (parameter)
    register_parameter(path, tensor_slots_.back(), std::move(t), grad);
  else
    register_buffer(path, tensor_slots_.back(), std::move(t));
}

// ---- export ---------------------------------------------------------------------------------

void export_graph(const Graph& g, const std::string& dir) {
  json nodes = json::array(), modules = json::object(), tensors = json::object();
  std::map<std::string, Tensor> weights;
  for (const Node* n : g.nodes()) {
    json args = json::array();
    for (const Node* a : n->args) args.push_back(a ? json(a->name) : json(nullptr));
    json attrs = json::array();
    for (const auto& [k, v] : n->attrs) attrs.push_back({k, attr_to_json(v)});
    nodes.push_back({{"name", n->name},
                     {"op", std::string(name(n->op))},
                     {"target", n->target},
                     {"args", args},
                     {"attrs", attrs},
                     {"meta", n->meta.empty() ? json(nullptr) : to_json(n->meta)}});
    if (n->op == OpKind::call_module && !modules.contains(n->target)) {
      nn::ModulePtr m = g.root().submodule(n->target);
      json config = m->to_json();
      MASE_CHECK(!config.is_null(), graph::GraphError, "[export] expected module ", n->target,
                 " (", m->type_name(), ") to have a config to be rebuilt from, got none (give ",
                 "it to_json() and register a factory: models/module_registry.h)");
      modules[n->target] = {{"type", m->type_name()}, {"config", config}};
      for (const auto& [p, t] : m->named_parameters()) {
        weights[join(n->target, p)] = t;
        tensors[join(n->target, p)] = {{"kind", "parameter"}, {"trainable", t.requires_grad()}};
      }
      for (const auto& [b, t] : m->named_buffers()) {
        weights[join(n->target, b)] = t;
        tensors[join(n->target, b)] = {{"kind", "buffer"}, {"trainable", false}};
      }
    } else if (n->op == OpKind::get_attr && !tensors.contains(n->target)) {
      Tensor t = g.get_attr_value(*n);
      const bool constant = g.constants().count(n->target) > 0;
      bool parameter = false;
      for (const auto& [p, pt] : g.root().named_parameters()) parameter |= p == n->target;
      weights[n->target] = t;
      tensors[n->target] = {{"kind", constant    ? "constant"
                                     : parameter ? "parameter"
                                                 : "buffer"},
                            {"trainable", t.requires_grad()}};
    }
  }
  json doc{
      {"format", "mase-graph"},      {"version", kVersion}, {"training", g.root().is_training()},
      {"outputs", g.output_names()}, {"nodes", nodes},      {"modules", modules},
      {"tensors", tensors}};
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  MASE_CHECK(!ec, IoError, "[export] expected to create the folder ", dir, ", got: ",
             ec.message());
  nn::save_safetensors((std::filesystem::path(dir) / "model.safetensors").string(), weights,
                       {{"format", "pt"}, {"producer", "mase-graph"}});
  write_text_atomic((std::filesystem::path(dir) / "graph.json").string(), doc.dump(1) + "\n");
}

// ---- load -----------------------------------------------------------------------------------

void register_all_module_types() {
  // models/' leaves (and LoraLinear) are built in; layers above models/ add their call here
  quant::register_module_types();  // QuantizedLinear, PrunedLinear, MxInt8Linear
}

Graph load_graph(const std::string& dir) {
  const auto json_path = (std::filesystem::path(dir) / "graph.json").string();
  std::ifstream f(json_path);
  MASE_CHECK(f.good(), IoError, "[load_graph] expected a readable ", json_path, ", got none ",
             "(export a graph with export_graph or mase-graph --export)");
  json doc;
  try {
    doc = json::parse(f);
  } catch (const json::exception& e) {
    throw IoError(cat("[load_graph] expected JSON in ", json_path, ", got: ", e.what()));
  }
  MASE_CHECK(doc.value("format", "") == "mase-graph" && doc.value("version", 0) == kVersion,
             IoError, "[load_graph] expected format mase-graph version ", kVersion, " in ",
             json_path, ", got ", doc.value("format", "no format"), " version ",
             doc.value("version", 0), " (export it again with this build)");
  register_all_module_types();
  try {
    auto root = std::make_shared<ModuleTree>();
    for (const auto& [path, m] : doc.at("modules").items())
      root->place(path, nn::make_module(m.at("type").get<std::string>(), m.at("config")));
    // tensors: the modules' own are loaded into them; the others are placed in the tree
    nn::SafetensorsFile file =
        nn::load_safetensors((std::filesystem::path(dir) / "model.safetensors").string());
    std::map<std::string, Tensor> state = root->state_dict();
    std::map<std::string, Tensor> constants;
    std::set<std::string> listed;
    for (const auto& [path, info] : doc.at("tensors").items()) {
      listed.insert(path);
      auto src = file.tensors.find(path);
      MASE_CHECK(src != file.tensors.end(), IoError, "[load_graph] expected tensor '", path,
                 "' in model.safetensors, got none (graph.json and model.safetensors from ",
                 "different exports?)");
      const std::string kind = info.at("kind").get<std::string>();
      Tensor t;
      if (auto it = state.find(path); it != state.end()) {
        MASE_CHECK(it->second.shape() == src->second.shape(), IoError,
                   "[load_graph] expected tensor ", path, " of shape ", it->second.shape(),
                   " (its module's), got ", src->second.shape(), " in model.safetensors");
        NoGradGuard ng;
        copy_(it->second, src->second);
        t = it->second;
      } else if (kind == "constant") {
        constants[path] = src->second;
        continue;
      } else {
        t = src->second;
        root->place_tensor(path, t, kind == "parameter");
      }
      if (kind == "parameter") t.set_requires_grad(info.at("trainable").get<bool>());
    }
    for (const auto& [path, t] : state)
      MASE_CHECK(listed.count(path), IoError, "[load_graph] expected graph.json to list tensor '",
                 path, "' (its module has it), got none");
    root->train(doc.at("training").get<bool>());

    Graph g(root);
    for (const auto& [name, t] : constants) g.add_constant(t, name);
    std::vector<std::string> outputs = doc.at("outputs").get<std::vector<std::string>>();
    for (const json& jn : doc.at("nodes")) {
      const std::string name = jn.at("name").get<std::string>();
      std::vector<Node*> args;
      for (const json& a : jn.at("args"))
        args.push_back(a.is_null() ? nullptr : &g.at(a.get<std::string>()));
      Node* n;
      const OpKind op = op_kind_from_name(jn.at("op").get<std::string>());
      if (op == OpKind::output) {
        MASE_CHECK(args.size() == outputs.size(), graph::GraphError,
                   "[load_graph] expected the output node to have one arg per output name (",
                   outputs.size(), "), got ", args.size());
        std::vector<std::pair<std::string, Node*>> named;
        for (size_t i = 0; i < args.size(); ++i) named.push_back({outputs[i], args[i]});
        n = g.set_output(named);
      } else {
        Attrs attrs;
        for (const json& a : jn.at("attrs"))
          attrs.push_back({a.at(0).get<std::string>(), attr_from_json(a.at(1))});
        n = g.add_node(op, jn.at("target").get<std::string>(), std::move(args), std::move(attrs),
                       name);
      }
      MASE_CHECK(n->name == name, graph::GraphError,
                 "[load_graph] expected unique node names, got '", name, "' twice");
      n->meta = node_meta_from_json(jn.at("meta"));
    }
    g.lint();
    return g;
  } catch (const json::exception& e) {
    throw IoError(cat("[load_graph] expected ", json_path, " as export_graph writes it, got: ",
                      e.what()));
  }
}

}  // namespace mase::graph
