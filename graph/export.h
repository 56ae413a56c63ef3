// graph/export.h — save a graph with its weights and metadata to a folder, and load it back.
//
//   <dir>/graph.json          {"format": "mase-graph", "version": 1, "training": false,
//                              "outputs": ["logits", "loss"],
//                              "nodes": [{"name", "op", "target", "args", "attrs", "meta"}, …],
//                              "modules": {"<path>": {"type": "Linear", "config": {…}}, …},
//                              "tensors": {"<path>": {"kind": "parameter" | "buffer" |
//                                                     "constant", "trainable": bool}, …}}
//   <dir>/model.safetensors   exactly the tensors "tensors" lists, by path
//
// Only what the graph uses is exported: the modules of its call_module nodes (each as its
// type_name() and to_json() config), their parameters and buffers (pruning masks are
// buffers, so they travel too), the parameters of get_attr nodes, and constants. Attrs keep
// their types ({"i": 3}, {"f": 0.1}, {"b": true}, {"s": "f32"}, {"ints": [2, 16]}); doubles
// are written so that they read back bit for bit.
//
// load_graph rebuilds each module with nn::make_module(type, config) (models/module_registry.h
// — a new module type registers a factory there), places it at its path in a tree of
// ModuleTree containers (the reloaded graph's root), loads every tensor (shapes checked,
// trainable flags restored) and the nodes with their metadata. The reloaded graph runs to the
// same outputs, bit for bit. Malformed folders are IoError / GraphError naming the problem.
// Read next: graph/passes/dropout.h.
#pragma once
#include <deque>
#include <string>

#include "graph/graph.h"

namespace mase::graph {

// Writes the folder (created if needed; each file written atomically). GraphError for a
// call_module whose module cannot be rebuilt (its to_json() is null).
void export_graph(const Graph& g, const std::string& dir);

Graph load_graph(const std::string& dir);

// Called by load_graph before rebuilding modules: registers the factories of module types
// defined above models/ (a quant/ wrapper adds its registration call here).
void register_all_module_types();

// The container a reloaded graph's modules live in: children and tensors by name, nothing
// else (a leaf's parent in the original model had a forward; here the graph is the forward).
class ModuleTree : public nn::Module {
 public:
  std::string type_name() const override { return "ModuleTree"; }
  bool is_leaf() const override { return false; }
  // Puts `m` at the dotted `path` below this tree, creating ModuleTrees on the way.
  void place(const std::string& path, nn::ModulePtr m);
  // Adds tensor `t` at the dotted `path` as a parameter (or a buffer).
  void place_tensor(const std::string& path, Tensor t, bool parameter);

 private:
  ModuleTree& subtree(const std::string& name);
  std::deque<nn::ModulePtr> children_slots_;  // deques: stable addresses for the registry
  std::deque<Tensor> tensor_slots_;
};

}  // namespace mase::graph
