// graph/passes/dropout.h — Lab 0's first passes: count the dropout nodes (analysis), and
// remove them (transform).
//
// A pass is a function from a graph (or a model) and its arguments to a report struct with
// named fields: an analysis pass takes a const Graph& and only reads; a transform pass takes
// Graph& and changes it in place. (MASE's passes returned a (graph, info) pair that users
// often unpacked wrongly; a report struct cannot be misread.) Each report prints with str().
//
// What counts as a dropout: a call_module node whose module is an nn::Dropout, or a
// call_function dropout node (a functional dropout outside any module). BERT's attention-
// probability dropout is not a node: it is the dropout_p attr of the sdpa node (as in HF's
// sdpa attention), so bert-tiny has 6 — embeddings, per layer the attention output and the
// FFN output, and the classifier's.
//
// remove_dropout rewires every user of a dropout node to the dropout's input FIRST and then
// erases the node (erasing first fails: Graph::erase refuses a node that still has users).
// In eval mode dropout is the identity, so the outputs do not change.
// Read next: models/parameters.h and models/lora.h (the passes that act on the model).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

struct CountDropoutReport {
  int64_t count = 0;
  std::vector<std::string> names;  // node names, in graph order
  std::string str() const;
};
CountDropoutReport count_dropout(const Graph& g);

struct RemoveDropoutReport {
  int64_t removed = 0;
  std::vector<std::string> names;  // the erased nodes
  int64_t rewired_uses = 0;        // uses moved to the dropouts' inputs
  std::string str() const;
};
RemoveDropoutReport remove_dropout(Graph& g);

bool is_dropout(const Graph& g, const Node& n);

}  // namespace mase::graph
