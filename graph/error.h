// graph/error.h — GraphError: misuse of a graph (erasing a node that is still used, a node
// or input that does not exist, an op the interpreter does not know, a malformed export).
#pragma once
#include "runtime/error.h"

namespace mase::graph {

struct GraphError : Error {
  using Error::Error;
};

}  // namespace mase::graph
