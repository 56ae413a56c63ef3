// tests/op_names.h — OpNames: the names of the ops recorded while it lives, in order (what a
// tracer would see), restoring the observer it replaced when it goes.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "autograd/engine.h"

namespace mase::test {

struct OpNames : OpObserver {
  std::vector<std::string> ops;
  OpObserver* prev = set_op_observer(this);
  ~OpNames() override { set_op_observer(prev); }
  void on_op(std::string_view op, const Tensors&, const Attrs&, const Tensor&) override {
    ops.emplace_back(op);
  }
};

}  // namespace mase::test
