// graph/metadata.cpp — the common metadata pass and its JSON form (see metadata.h).
#include "graph/metadata.h"

#include <cctype>
#include <map>

#include "graph/op_table.h"
#include "runtime/random.h"

namespace mase::graph {
namespace {

TensorMeta tensor_meta(const Tensor& t) {
  if (!t.defined()) return {};
  return {true, t.shape(), t.dtype()};
}

// Precision of the tensor at `path` (relative to `m`), asked of the module that owns it.
nn::Precision precision_of(nn::Module& m, const std::string& path) {
  const auto dot = path.rfind('.');
  if (dot == std::string::npos) return m.precision(path);
  return m.submodule(path.substr(0, dot))->precision(path.substr(dot + 1));
}

std::string snake_case(const std::string& type) {
  std::string s;
  for (size_t i = 0; i < type.size(); ++i) {
    const unsigned char c = static_cast<unsigned char>(type[i]);
    const bool boundary =
        i > 0 && std::isupper(c) && std::islower(static_cast<unsigned char>(type[i - 1]));
    if (boundary) s += '_';
    s += static_cast<char>(std::tolower(c));
  }
  return s;
}

}  // namespace

std::pair<std::string, std::string> module_mase_op(const nn::Module& m) {
  // The standard layers (torch.nn's), as MASE names them. Wrappers that compute a Linear
  // (quantized, pruned) could be listed here as "linear" for the metadata; the graph passes
  // do not read mase_op (they match module types: rewrite.h's module_exactly).
  static const std::map<std::string, std::string> standard{
      {"Linear", "linear"},   {"Embedding", "embedding"}, {"LayerNorm", "layer_norm"},
      {"Dropout", "dropout"}, {"GELU", "gelu"},           {"Tanh", "tanh"},
      {"ReLU", "relu"},       {"Identity", "identity"}};
  auto it = standard.find(m.type_name());
  if (it != standard.end()) return {"module_related_func", it->second};
  return {"module", snake_case(m.type_name())};
}

void add_common_metadata(Graph& g, const TensorMap& example) {
  std::map<const Node*, NodeMeta> metas;
  auto hook = [&](const Node& n, const Tensors& args, const Tensor& value) {
    NodeMeta m;
    for (const Tensor& a : args) m.args.push_back(tensor_meta(a));
    if (n.op != OpKind::output) m.results.push_back(tensor_meta(value));
    switch (n.op) {
      case OpKind::placeholder:
        m.mase_type = m.mase_op = "placeholder";
        break;
      case OpKind::output:
        m.mase_type = m.mase_op = "output";
        break;
      case OpKind::get_attr: {  // a constant, a parameter or a buffer of the model
        bool parameter = false;
        for (const auto& [path, p] : g.root().named_parameters()) parameter |= path == n.target;
        m.mase_type = "get_attr";
        m.mase_op = g.constants().count(n.target) ? "constant" : parameter ? "parameter" : "buffer";
        m.parameters.push_back(
            {n.target, value.shape(), value.dtype(),
             parameter ? precision_of(g.root(), n.target) : nn::dtype_precision(value.dtype()),
             value.requires_grad()});
        break;
      }
      case OpKind::call_function:
      case OpKind::call_method: {
        const OpInfo& info = op_info(n.target);
        m.mase_type = info.mase_type;
        m.mase_op = info.mase_op;
        break;
      }
      case OpKind::call_module: {
        nn::ModulePtr mod = g.root().submodule(n.target);
        std::tie(m.mase_type, m.mase_op) = module_mase_op(*mod);
        m.module_type = mod->type_name();
        for (const auto& [name, p] : mod->named_parameters())
          m.parameters.push_back(
              {name, p.shape(), p.dtype(), precision_of(*mod, name), p.requires_grad()});
        break;
      }
    }
    metas[&n] = std::move(m);
  };
  {
    KeepDefaultGenerator keep;  // dropout in training mode draws masks: leave the stream
    NoGradGuard no_grad;
    g.run(example, hook);
  }
  for (Node* n : g.nodes()) n->meta = metas.at(n);
}

// ---- JSON -----------------------------------------------------------------------------------

namespace {

nlohmann::json tensor_json(const TensorMeta& t) {
  if (!t.defined) return nullptr;
  return {{"shape", std::vector<int64_t>(t.shape.begin(), t.shape.end())},
          {"dtype", std::string(mase::name(t.dtype))}};
}

TensorMeta tensor_from_json(const nlohmann::json& j) {
  if (j.is_null()) return {};
  return {true, Shape(j.at("shape").get<std::vector<int64_t>>()),
          dtype_from_name(j.at("dtype").get<std::string>())};
}

}  // namespace

nlohmann::json to_json(const NodeMeta& m) {
  nlohmann::json j{{"mase_type", m.mase_type}, {"mase_op", m.mase_op}};
  if (!m.module_type.empty()) j["module_type"] = m.module_type;
  j["args"] = nlohmann::json::array();
  for (const auto& a : m.args) j["args"].push_back(tensor_json(a));
  j["results"] = nlohmann::json::array();
  for (const auto& r : m.results) j["results"].push_back(tensor_json(r));
  j["parameters"] = nlohmann::json::array();
  for (const auto& p : m.parameters)
    j["parameters"].push_back({{"name", p.name},
                               {"shape", std::vector<int64_t>(p.shape.begin(), p.shape.end())},
                               {"dtype", std::string(mase::name(p.dtype))},
                               {"type", p.precision.type},
                               {"precision", p.precision.widths},
                               {"trainable", p.trainable}});
  return j;
}

NodeMeta node_meta_from_json(const nlohmann::json& j) {
  try {
    NodeMeta m;
    if (j.is_null() || j.empty()) return m;
    m.mase_type = j.at("mase_type").get<std::string>();
    m.mase_op = j.at("mase_op").get<std::string>();
    m.module_type = j.value("module_type", "");
    for (const auto& a : j.at("args")) m.args.push_back(tensor_from_json(a));
    for (const auto& r : j.at("results")) m.results.push_back(tensor_from_json(r));
    for (const auto& p : j.at("parameters"))
      m.parameters.push_back(
          {p.at("name").get<std::string>(),
           Shape(p.at("shape").get<std::vector<int64_t>>()),
           dtype_from_name(p.at("dtype").get<std::string>()),
           {p.at("type").get<std::string>(), p.at("precision").get<std::vector<int64_t>>()},
           p.at("trainable").get<bool>()});
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw GraphError(cat("[graph] expected node metadata as export_graph writes it, got ",
                         j.dump(), ": ", e.what()));
  }
}

}  // namespace mase::graph
