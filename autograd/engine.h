// autograd/engine.h — reverse-mode automatic differentiation: the tape and backward().
//
// How it works (micrograd's idea at tensor granularity):
//  * Every op (autograd/ops/*.cpp) computes its output with a kernel, then calls record():
//    if grad mode is on and an input requires grad, the output gets a Node — its grad_fn —
//    holding the op's backward function (a lambda capturing what it needs, written right
//    below the forward) and one Edge per input saying where that input's gradient goes.
//  * backward(loss) sorts the Nodes reachable from loss topologically, then walks them from
//    the loss down: each Node turns d loss/d output into d loss/d input for every input, and
//    the gradients arriving at the same Node are summed (a tensor used twice gets both).
//    Leaves (parameters, inputs with requires_grad) accumulate into their .grad().
//  * After backward the backward functions are released, freeing saved activations; a second
//    backward through the same graph is an AutogradError (unless retain_graph).
//
// Rules for writing a backward lambda: capture inputs by value (handles are cheap); never
// capture the op's own output (a cycle: output -> grad_fn -> output); capture out.detach().
// Return one gradient per input, shaped like that input, or an undefined Tensor for an input
// that needs none. Backward runs in no-grad mode, so it may freely call other ops.
#pragma once
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "runtime/tensor.h"

namespace mase {

using Tensors = std::vector<Tensor>;
using BackwardFn = std::function<Tensors(const Tensor& dout)>;

// The non-tensor arguments of an op call (dims, scalars, flags). They let graph/ re-run and
// export a traced op; they are also printed by the graph tools.
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>>;
using Attrs = std::vector<std::pair<std::string, AttrValue>>;

struct Edge {
  std::shared_ptr<Node> fn;  // the input came from an op: send the gradient there
  Tensor leaf;               // the input is a leaf requiring grad: accumulate into leaf.grad()
  bool connected() const { return fn || leaf.defined(); }
};

struct Node {
  std::string op;                  // "matmul", "softmax", ...
  std::vector<Edge> next;          // one per input of the op
  std::vector<Shape> input_shapes; // each returned gradient must have this shape
  BackwardFn backward;             // null once the graph has been freed
};

// ---- grad mode ----------------------------------------------------------------------------
// grad_enabled() / set_grad_enabled(): runtime/tensor.h (thread-local; true by default)
struct NoGradGuard {  // RAII: no graph is recorded while it lives (evaluation, optimizer steps)
  NoGradGuard();
  ~NoGradGuard();
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;
 private:
  bool prev_;
};

// True when an op on these inputs must record a Node.
bool any_requires_grad(const Tensors& inputs);

// Attach `backward` to `out` (see the file comment). Returns `out`. `attrs` describe the call
// for observers (graph tracing); they do not affect autograd.
Tensor record(std::string_view op, const Tensors& inputs, Tensor out, BackwardFn backward,
              Attrs attrs = {});

// Back-propagate from `root`. `seed` is d(something)/d(root); it may be omitted only when
// root has one element (then it is 1). Gradients accumulate into the leaves' .grad().
void backward(const Tensor& root, const Tensor& seed = Tensor(), bool retain_graph = false);

// ---- observing ops (graph/ traces models through this) -----------------------------------------
struct OpObserver {
  virtual ~OpObserver() = default;
  virtual void on_op(std::string_view op, const Tensors& inputs, const Attrs& attrs,
                     const Tensor& out) = 0;
};
// Install an observer for this thread (nullptr removes it); returns the previous one.
OpObserver* set_op_observer(OpObserver* observer);
// The observer installed on this thread, or nullptr. Code with a fast path that records no op
// (quant/integer_linear.h) checks it, so a traced model shows the ops a graph can re-run.
OpObserver* op_observer();

// A composite op — one whose body is other ops, like sdpa today (matmul, softmax, dropout, …)
// — shows to observers as ONE op: `body` runs with the observer hidden, then the observer is
// told about `op` on `inputs` (undefined ones allowed) with `attrs`. Autograd is untouched:
// the gradient flows through the ops of the body. Without an observer this is just body().
Tensor record_composite(std::string_view op, const Tensors& inputs,
                        const std::function<Tensor()>& body, Attrs attrs = {});

}  // namespace mase
