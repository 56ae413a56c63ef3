// graph/graph.h — the graph IR: a list of Nodes in execution order, and the interpreter.
//
// The vocabulary is torch.fx's (and so MASE's), so a student moving between the two
// recognises every word. Each Node is one step of the model's forward:
//   placeholder     an input of the graph, target = its name ("input_ids")
//   get_attr        a tensor read from the model (target = parameter path) or a constant
//                   kept by the graph (target = "_tensor_constant0")
//   call_module     one call of a leaf module, target = its path in the model
//                   ("bert.encoder.layer.0.attention.self.query"); what happens inside the
//                   module is not in the graph
//   call_function   one op of autograd/ops.h, target = its name ("add", "sdpa")
//   call_method     the same for the tensor-method-like ops (view, reshape, transpose, …)
//   output          the graph's results, named by output_names() ("logits", "loss")
// A node's args are the nodes whose values it consumes (nullptr stands for an absent tensor,
// e.g. sdpa without a mask); its attrs are the op's other arguments (dims, scalars, flags), as
// the op reported them to the tracer; users are the nodes that consume it (each once).
// Names are unique and readable: bert_encoder_layer_0_attention_self_query, add, add_1, …
//
// The Graph holds the model (root) it was traced from: call_module and parameter get_attr
// nodes resolve there when the graph runs, so the graph and the model share parameters (a
// graph trains the model's tensors) and a module replaced in the model (LoRA, quantization)
// is what the graph calls next time.
//
// run() interprets the nodes in order: call_function / call_method through the one op table
// (graph/op_table.h), call_module by calling the module. The ops are the eager ones, so on
// the CPU the outputs equal the eager model's bit for bit, and autograd works through a run
// (the graph can be trained). A traced graph is specialised to the example's shapes (view
// shapes are recorded as numbers): inputs of other shapes are a ShapeError.
//
// Read next: graph/trace.h (how a graph is captured), graph/metadata.h, graph/passes/.
#pragma once
#include <functional>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "autograd/engine.h"
#include "graph/error.h"
#include "models/module.h"

namespace mase::graph {

enum class OpKind { placeholder, get_attr, call_function, call_method, call_module, output };
std::string_view name(OpKind k);               // "call_module"
OpKind op_kind_from_name(std::string_view s);  // GraphError for an unknown name

// ---- metadata (filled by add_common_metadata, graph/metadata.h) --------------------------
struct TensorMeta {
  bool defined = false;  // false: an absent tensor argument
  Shape shape;
  DType dtype = DType::f32;
  std::string str() const;  // "(2, 16, 128) f32" or "-"
  bool operator==(const TensorMeta&) const = default;
};

struct ParamMeta {
  std::string name;  // "weight" (call_module: relative to the module) or the path (get_attr)
  Shape shape;
  DType dtype = DType::f32;
  nn::Precision precision;  // type and widths: float[32], fixed[8, 4], …
  bool trainable = false;
  bool operator==(const ParamMeta&) const = default;
};

// MASE's "common" metadata of one node.
struct NodeMeta {
  std::string mase_type;    // module_related_func, module, builtin_func, implicit_func,
                            // placeholder, get_attr, output
  std::string mase_op;      // linear, dropout, layer_norm, gelu, embedding, add, view, …
  std::string module_type;  // call_module: the module's type_name() ("Linear")
  std::vector<TensorMeta> args, results;
  std::vector<ParamMeta> parameters;
  bool empty() const { return mase_type.empty(); }
  bool operator==(const NodeMeta&) const = default;
};

struct Node {
  std::string name;
  OpKind op = OpKind::call_function;
  std::string target;
  std::vector<Node*> args;   // inputs, in the op's order; nullptr = absent tensor
  Attrs attrs;               // the op's non-tensor arguments
  std::vector<Node*> users;  // consumers, each once, in the order they were linked
  NodeMeta meta;
  // The attr `key` (GraphError when absent): graph/op_table.h has typed accessors.
  const AttrValue& attr(std::string_view key) const;
};

using TensorMap = std::map<std::string, Tensor>;
// Called after each node runs (metadata, debugging): the node, its argument values (undefined
// for absent ones) and its value (undefined for the output node).
using NodeHook = std::function<void(const Node&, const Tensors& args, const Tensor& value)>;

class Graph {
 public:
  explicit Graph(nn::ModulePtr root);
  Graph(Graph&&) = default;
  Graph& operator=(Graph&&) = default;
  Graph(const Graph&) = delete;  // nodes point at each other: no accidental copies
  Graph& operator=(const Graph&) = delete;

  // ---- building -------------------------------------------------------------------------
  // Appends a node named after `name_hint` (made unique: add, add_1, …; '.' becomes '_').
  Node* add_node(OpKind op, std::string target, std::vector<Node*> args, Attrs attrs = {},
                 const std::string& name_hint = "");
  // Appends the output node consuming `outputs` (name -> node). One per graph.
  Node* set_output(const std::vector<std::pair<std::string, Node*>>& outputs);
  // Keeps `t` in the graph as a constant; returns its get_attr target: `target` when given
  // (a reload), else a fresh "_tensor_constant0", "_tensor_constant1", …
  std::string add_constant(const Tensor& t, std::string target = "");

  // ---- editing (torch.fx's names) -------------------------------------------------------
  // Every use of `node` becomes a use of `replacement`; returns how many users were moved.
  int64_t replace_all_uses_with(Node* node, Node* replacement);
  // Removes `node`. GraphError if something still uses it, as torch.fx:
  //   Tried to erase node bert_embeddings_dropout but it still had 4 users in the graph:
  //   {a, b, c, d}!
  void erase(Node* node);
  // Removes the nodes whose values nothing uses (placeholders and the output stay), and
  // constants no node reads. Returns how many nodes went. In training mode (the root's) a
  // node that draws random numbers stays even when unread (draws_random, graph/op_table.h):
  // removing it would shift every later dropout mask off eager's (graph/passes/dce.h).
  int64_t eliminate_dead_code();
  // GraphError unless args/users agree, every arg comes earlier, names are unique and the
  // output is last.
  void lint() const;

  // ---- looking ---------------------------------------------------------------------------
  std::vector<Node*> nodes() const;  // in execution order
  size_t size() const { return nodes_.size(); }
  Node* find(std::string_view name) const;       // nullptr when absent
  Node& at(std::string_view name) const;         // GraphError when absent
  std::vector<std::string> input_names() const;  // placeholder targets, in order
  const std::vector<std::string>& output_names() const { return output_names_; }
  Node* output_node() const { return output_; }
  nn::Module& root() const { return *root_; }
  const nn::ModulePtr& root_ptr() const { return root_; }
  const std::map<std::string, Tensor>& constants() const { return constants_; }
  // The tensor a get_attr node reads (a constant, or a parameter/buffer of root by path).
  Tensor get_attr_value(const Node& n) const;

  // ---- running ---------------------------------------------------------------------------
  // Interprets the graph on `inputs` (one per placeholder, by name; an input the graph does
  // not have is a GraphError, so a mask is never silently ignored). Returns the outputs by
  // name. Training mode (dropout) is the root module's: graph.root().train() / .eval().
  TensorMap run(const TensorMap& inputs, const NodeHook& hook = {}) const;

 private:
  std::string unique_name(const std::string& hint);
  void link(Node* user, Node* arg);
  void unlink(Node* user, Node* arg);

  nn::ModulePtr root_;
  std::list<std::unique_ptr<Node>> nodes_;  // stable addresses
  std::unordered_map<std::string, Node*> by_name_;
  std::map<std::string, int64_t> name_counts_;
  std::map<std::string, Tensor> constants_;
  std::vector<std::string> output_names_;
  Node* output_ = nullptr;
};

// Called in a catch block while node `n` runs (Graph::run, Plan::run): rethrows the
// mase::Error in flight as the same type (a ShapeError stays a ShapeError, so callers' catch
// clauses still work) with the node in front of its message —
//   [graph] in node add_7 (call_function add): [add] expected shapes that broadcast, got …
// so that the failing node of a 300-node graph is named. Other exceptions go on unchanged.
[[noreturn]] void rethrow_in_node(const Node& n);

// "bert.encoder.layer.0" -> "bert_encoder_layer_0": a readable node name from a path.
std::string node_name_from_path(const std::string& path);

}  // namespace mase::graph
