// graph/passes/dce.h — dead-code elimination as a pass with a report: the nodes whose values
// nothing reads (and nothing reads transitively) are removed, placeholders and the output stay
// (Graph::eliminate_dead_code does the work; this names what went).
//
// On a freshly traced graph it removes nothing (trace() already ran it); it cleans up after
// passes that leave values unread, e.g. a dropout whose users were rewired but which was not
// erased. The compile pipeline (graph/compile.h) runs it after the fusions.
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
