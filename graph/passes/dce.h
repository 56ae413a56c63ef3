// graph/passes/dce.h — dead-code elimination as a pass with a report: the nodes whose values
// nothing reads (and nothing reads transitively) are removed, placeholders and the output stay
// (Graph::eliminate_dead_code does the work; this names what went).
//
// On a freshly traced graph it removes nothing (trace() already ran it); it cleans up after
// passes that leave values unread, e.g. a dropout whose users were rewired but which was not
// erased. The compile pipeline (graph/compile.h) runs it after the fusions.
//
// Random numbers: in training mode a node that draws them (a dropout, sdpa or
// dropout_add_layer_norm with p > 0, any call_module: draws_random in graph/op_table.h) stays
// even when nothing reads it. A dropout takes its mask from the default generator's counter
// and moves the counter on by the tensor's size; eager runs every dropout, read or not, so
// removing an unread one would hand every LATER dropout the mask of an earlier position in the
// stream, and a compiled training run would stop reproducing eager's losses. Removing it and
// advancing the generator by what it would have drawn would be exact too, but needs each
// node's draw count, which a module does not report (LoRA's inner dropout; a stochastic
// quantizer or random pruning mask draws from a stream of its own); keeping the node is exact
// for every drawer and costs one unread op. In eval dropout is the identity and such nodes go.
// trace() runs the same elimination, with the same rule, in the mode it traces in.
// Read next: graph/passes/memory_plan.h.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "graph/graph.h"

namespace mase::graph {

struct DceReport {
  int64_t removed = 0;
  std::vector<std::string> names;  // removed nodes, in graph order
  std::string str() const;         // "dce: removed 1 dead node\n  bert_embeddings_dropout\n"
};
DceReport dead_code_elimination(Graph& g);

}  // namespace mase::graph
