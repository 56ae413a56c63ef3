// graph/graph.cpp — building, editing and interpreting a Graph (see graph.h).
#include "graph/graph.h"

#include <algorithm>
#include <unordered_set>

#include "graph/op_table.h"

namespace mase::graph {

std::string_view name(OpKind k) {
  switch (k) {
    case OpKind::placeholder:
      return "placeholder";
    case OpKind::get_attr:
      return "get_attr";
    case OpKind::call_function:
      return "call_function";
    case OpKind::call_method:
      return "call_method";
    case OpKind::call_module:
      return "call_module";
    case OpKind::output:
      return "output";
  }
  return "?";
}

OpKind op_kind_from_name(std::string_view s) {
  for (OpKind k : {OpKind::placeholder, OpKind::get_attr, OpKind::call_function,
                   OpKind::call_method, OpKind::call_module, OpKind::output})
    if (name(k) == s) return k;
  throw GraphError(
      cat("[graph] expected a node kind (placeholder, get_attr, call_function, "
          "call_method, call_module, output), got '",
          s, "'"));
}

std::string TensorMeta::str() const { return defined ? cat(shape, " ", dtype) : std::string("-"); }

const AttrValue& Node::attr(std::string_view key) const {
  const AttrValue* v = find_attr(attrs, key);
  if (!v) {
    std::string keys;
    for (const auto& [k, x] : attrs) keys += (keys.empty() ? "" : ", ") + k;
    throw GraphError(cat("[graph] expected node ", name, " to have attr '", key,
                         "', got none (its attrs: ", keys.empty() ? "none" : keys, ")"));
  }
  return *v;
}

std::string node_name_from_path(const std::string& path) {
  std::string s = path;
  for (char& c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') c = '_';
  return s.empty() ? std::string("node") : s;
}

Graph::Graph(nn::ModulePtr root) : root_(std::move(root)) {
  MASE_CHECK(root_ != nullptr, graph::GraphError, "[graph] expected a model, got a null module");
}

// ---- building -------------------------------------------------------------------------------

std::string Graph::unique_name(const std::string& hint) {
  const std::string base = node_name_from_path(hint);
  std::string candidate = base;
  int64_t& n = name_counts_[base];  // add, add_1, add_2, … (skipping names already taken)
  while (by_name_.count(candidate)) candidate = cat(base, "_", ++n);
  return candidate;
}

void Graph::link(Node* user, Node* arg) {
  if (arg && std::find(arg->users.begin(), arg->users.end(), user) == arg->users.end())
    arg->users.push_back(user);
}

void Graph::unlink(Node* user, Node* arg) {
  if (!arg) return;
  // still an arg of `user` elsewhere (add(x, x)): keep the link
  if (std::find(user->args.begin(), user->args.end(), arg) != user->args.end()) return;
  arg->users.erase(std::remove(arg->users.begin(), arg->users.end(), user), arg->users.end());
}

Node* Graph::add_node(OpKind op, std::string target, std::vector<Node*> args, Attrs attrs,
                      const std::string& name_hint) {
  MASE_CHECK(output_ == nullptr, graph::GraphError,
             "[graph] expected nodes before the output, got ",
             name_hint.empty() ? target : name_hint,
             " after it (erase the output node, add the node, then set_output again)");
  auto node = std::make_unique<Node>();
  node->name = unique_name(name_hint.empty() ? target : name_hint);
  node->op = op;
  node->target = std::move(target);
  node->args = std::move(args);
  node->attrs = std::move(attrs);
  Node* n = node.get();
  for (Node* a : n->args) link(n, a);
  by_name_[n->name] = n;
  nodes_.push_back(std::move(node));
  return n;
}

Node* Graph::set_output(const std::vector<std::pair<std::string, Node*>>& outputs) {
  std::vector<Node*> args;
  output_names_.clear();
  for (const auto& [name, node] : outputs) {
    output_names_.push_back(name);
    args.push_back(node);
  }
  Node* out = add_node(OpKind::output, "output", std::move(args));
  output_ = out;
  return out;
}

std::string Graph::add_constant(const Tensor& t, std::string target) {
  for (size_t i = constants_.size(); target.empty() || constants_.count(target); ++i)
    target = cat("_tensor_constant", i);
  constants_[target] = t.detach();
  return target;
}

// ---- editing --------------------------------------------------------------------------------

int64_t Graph::replace_all_uses_with(Node* node, Node* replacement) {
  MASE_CHECK(node && replacement && node != replacement, graph::GraphError,
             "[replace_all_uses_with] expected two different nodes, got ",
             node ? node->name : "null", " and ", replacement ? replacement->name : "null");
  std::vector<Node*> users = node->users;
  for (Node* u : users) {
    std::replace(u->args.begin(), u->args.end(), node, replacement);
    link(u, replacement);
  }
  node->users.clear();
  return static_cast<int64_t>(users.size());
}

void Graph::erase(Node* node) {
  MASE_CHECK(node != nullptr, graph::GraphError, "[erase] expected a node, got null");
  if (!node->users.empty()) {
    std::string names;
    for (Node* u : node->users) names += (names.empty() ? "" : ", ") + u->name;
    throw GraphError(cat("Tried to erase node ", node->name, " but it still had ",
                         node->users.size(), " users in the graph: {", names, "}!"));
  }
  auto it =
      std::find_if(nodes_.begin(), nodes_.end(), [&](const auto& p) { return p.get() == node; });
  MASE_CHECK(it != nodes_.end(), graph::GraphError, "[erase] expected a node of this graph, got ",
             node->name, " (a node of another graph, or one already erased)");
  std::vector<Node*> args = node->args;
  node->args.clear();
  for (Node* a : args) unlink(node, a);
  if (node == output_) {
    output_ = nullptr;
    output_names_.clear();
  }
  by_name_.erase(node->name);
  nodes_.erase(it);
}

int64_t Graph::eliminate_dead_code() {
  int64_t removed = 0;
  const bool training = root_->is_training();
  // one pass from the back: erasing a node can only leave EARLIER nodes (its args) unused,
  // and those are visited after it
  std::vector<Node*> order = nodes();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (n->op == OpKind::placeholder || n->op == OpKind::output || !n->users.empty() ||
        draws_random(*n, training))
      continue;
    erase(n);
    ++removed;
  }
  std::unordered_set<std::string> read;
  for (const auto& n : nodes_)
    if (n->op == OpKind::get_attr) read.insert(n->target);
  std::erase_if(constants_, [&](const auto& kv) { return !read.count(kv.first); });
  return removed;
}

void Graph::lint() const {
  std::unordered_set<const Node*> seen;
  std::unordered_set<std::string> names;
  for (const auto& p : nodes_) {
    const Node* n = p.get();
    MASE_CHECK(names.insert(n->name).second, graph::GraphError,
               "[lint] expected unique node names, got ", n->name, " twice");
    for (const Node* a : n->args) {
      if (!a) continue;
      MASE_CHECK(seen.count(a), graph::GraphError, "[lint] expected ", n->name, "'s arg ",
                 a->name, " before it, got it after it or outside the graph (nodes are in "
                 "execution order: add a value's node before its users)");
      MASE_CHECK(std::find(a->users.begin(), a->users.end(), n) != a->users.end(),
                 graph::GraphError, "[lint] expected ", a->name, " to list ", n->name,
                 " (which reads it) among its users, got it missing (edit args through "
                 "replace_all_uses_with, not by hand)");
    }
    for (const Node* u : n->users)
      MASE_CHECK(std::find(u->args.begin(), u->args.end(), n) != u->args.end(), graph::GraphError,
                 "[lint] expected ", u->name, ", a user of ", n->name, ", to read it, got no ",
                 "such arg (edit args through replace_all_uses_with, not by hand)");
    MASE_CHECK(n->op != OpKind::output || n == nodes_.back().get(), graph::GraphError,
               "[lint] expected the output node last, got ", nodes_.back()->name, " after it");
    seen.insert(n);
  }
  MASE_CHECK(output_ != nullptr, graph::GraphError,
             "[lint] expected an output node, got none (set_output adds it)");
}

// ---- looking --------------------------------------------------------------------------------

std::vector<Node*> Graph::nodes() const {
  std::vector<Node*> out;
  out.reserve(nodes_.size());
  for (const auto& n : nodes_) out.push_back(n.get());
  return out;
}

Node* Graph::find(std::string_view name) const {
  auto it = by_name_.find(std::string(name));
  return it == by_name_.end() ? nullptr : it->second;
}

Node& Graph::at(std::string_view name) const {
  if (Node* n = find(name)) return *n;
  throw GraphError(cat("[graph] expected a node named '", name, "', got none (node names write a ",
                       "module path's dots as '_': bert_embeddings_dropout; find() returns null)"));
}

std::vector<std::string> Graph::input_names() const {
  std::vector<std::string> out;
  for (const auto& n : nodes_)
    if (n->op == OpKind::placeholder) out.push_back(n->target);
  return out;
}

Tensor Graph::get_attr_value(const Node& n) const {
  if (auto it = constants_.find(n.target); it != constants_.end()) return it->second;
  const auto dot = n.target.rfind('.');
  nn::ModulePtr owner =
      dot == std::string::npos ? root_ : root_->submodule(n.target.substr(0, dot));
  const std::string leaf = dot == std::string::npos ? n.target : n.target.substr(dot + 1);
  for (const auto& [name, t] : owner->named_parameters(false))
    if (name == leaf) return t;
  for (const auto& [name, t] : owner->named_buffers(false))
    if (name == leaf) return t;
  throw GraphError(cat("[graph] expected get_attr ", n.name, "'s target '", n.target,
                       "' to be a constant, parameter or buffer of the model, got none (a module ",
                       "replaced since tracing: trace again)"));
}

// ---- running --------------------------------------------------------------------------------

namespace {

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s.empty() ? "none" : s;
}

// The mase::Error in flight again, of the first type in <E, Rest...> it is (Error last: it
// would match them all), with `prefix` before its message.
template <class E, class... Rest>
[[noreturn]] void rethrow_prefixed(const std::string& prefix) {
  try {
    throw;
  } catch (const E& e) {
    throw E(prefix + e.what());
  } catch (...) {
    if constexpr (sizeof...(Rest) > 0) rethrow_prefixed<Rest...>(prefix);
    throw;
  }
}

}  // namespace

void rethrow_in_node(const Node& n) {
  // every type of runtime/error.h and graph/error.h: a new one needs its place here
  rethrow_prefixed<ShapeError, DTypeError, DeviceError, IoError, ConfigError, AutogradError,
                   GraphError, Error>(
      cat("[graph] in node ", n.name, " (", name(n.op), " ", n.target, "): "));
}

TensorMap Graph::run(const TensorMap& inputs, const NodeHook& hook) const {
  MASE_CHECK(output_ != nullptr, graph::GraphError,
             "[graph] expected an output node to run the graph, got none (set_output adds it)");
  const std::vector<std::string> names = input_names();
  for (const auto& [name, t] : inputs)
    MASE_CHECK(std::find(names.begin(), names.end(), name) != names.end(), graph::GraphError,
               "[graph] expected inputs among ", joined(names), ", got '", name,
               "' (trace with it to use it)");
  // position of each node, and the last position that reads it: values are dropped after
  // their last use, so an evaluation holds only the live activations
  std::unordered_map<const Node*, size_t> pos, last_use;
  size_t i = 0;
  for (const auto& n : nodes_) {
    pos[n.get()] = i;
    for (const Node* a : n->args)
      if (a) last_use[a] = i;
    ++i;
  }
  std::vector<Tensor> value(nodes_.size());
  const bool training = root_->is_training();
  TensorMap out;
  i = 0;
  for (const auto& p : nodes_) {
    const Node& n = *p;
    Tensors args;
    args.reserve(n.args.size());
    for (const Node* a : n.args) args.push_back(a ? value[pos.at(a)] : Tensor());
    Tensor v;
    try {
      switch (n.op) {
        case OpKind::placeholder: {
          auto it = inputs.find(n.target);
          MASE_CHECK(it != inputs.end() && it->second.defined(), graph::GraphError,
                     "[graph] expected a tensor for input '", n.target, "', got none (its inputs: ",
                     joined(names), ")");
          v = it->second;
          if (find_attr(n.attrs, "shape")) {
            const Shape traced(attr_ints(n.attrs, "shape"));
            MASE_CHECK(traced == v.shape(), ShapeError, "[graph] expected input ", n.target,
                       " of shape ", traced, " as traced, got ", v.shape(),
                       " (a traced graph is "
                       "specialised to its example's shapes: trace with this shape, or use "
                       "fixed-length batches)");
          }
          if (find_attr(n.attrs, "dtype"))
            MASE_CHECK(mase::name(v.dtype()) == attr_string(n.attrs, "dtype"), DTypeError,
                       "[graph] expected input ", n.target, " of dtype ",
                       attr_string(n.attrs, "dtype"), " as traced, got ", v.dtype(),
                       " (a traced graph is specialised to its example's dtypes)");
          break;
        }
        case OpKind::get_attr:
          v = get_attr_value(n);
          break;
        case OpKind::call_module: {
          MASE_CHECK(args.size() == 1, graph::GraphError, "[graph] expected call_module ",
                     n.name, " to have 1 argument (a module takes one tensor), got ", args.size());
          v = (*root_->submodule(n.target))(args[0]);
          break;
        }
        case OpKind::call_function:
        case OpKind::call_method:
          v = op_info(n.target).run(args, n.attrs, training);
          break;
        case OpKind::output:
          for (size_t k = 0; k < args.size(); ++k) out[output_names_.at(k)] = args[k];
          break;
      }
    } catch (const Error&) {
      if (n.op == OpKind::placeholder) throw;  // its message names the input already
      rethrow_in_node(n);
    }
    if (hook) hook(n, args, v);
    value[i] = std::move(v);
    for (const Node* a : n.args)  // free what no later node reads
      if (a && last_use.at(a) == i) value[pos.at(a)] = Tensor();
    ++i;
  }
  return out;
}

}  // namespace mase::graph
