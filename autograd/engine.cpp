// autograd/engine.cpp — the tape and backward() (see engine.h).
#include "autograd/engine.h"

#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "autograd/ops.h"
#include "runtime/profiler.h"

namespace mase {

namespace {
thread_local OpObserver* t_observer = nullptr;
}  // namespace

NoGradGuard::NoGradGuard() : prev_(grad_enabled()) { set_grad_enabled(false); }
NoGradGuard::~NoGradGuard() { set_grad_enabled(prev_); }

OpObserver* set_op_observer(OpObserver* observer) {
  OpObserver* prev = t_observer;
  t_observer = observer;
  return prev;
}

Tensor record_composite(std::string_view op, const Tensors& inputs,
                        const std::function<Tensor()>& body, Attrs attrs) {
  OpObserver* observer = t_observer;
  if (!observer) {
    if (!profile::active()) return body();
    Tensor out;
    {
      profile::Nested nested;  // the body's ops are this op's time (runtime/profiler.h)
      out = body();
    }
    profile::op_done(op, /*backward=*/false);
    return out;
  }
  struct Restore {  // put the observer back even when the body throws
    OpObserver* o;
    ~Restore() { t_observer = o; }
  };
  Tensor out;
  {
    Restore restore{observer};
    t_observer = nullptr;
    profile::Nested nested;
    out = body();
  }
  profile::op_done(op, /*backward=*/false);
  observer->on_op(op, inputs, attrs, out);
  return out;
}

bool any_requires_grad(const Tensors& inputs) {
  if (!grad_enabled()) return false;
  for (const Tensor& t : inputs)
    if (t.defined() && t.requires_grad()) return true;
  return false;
}

Tensor record(std::string_view op, const Tensors& inputs, Tensor out, BackwardFn backward,
              Attrs attrs) {
  if (t_observer) t_observer->on_op(op, inputs, attrs, out);
  profile::op_done(op, /*backward=*/false);  // the step profiler's stamp (when one is on)
  if (!any_requires_grad(inputs)) return out;
  for (const Tensor& t : inputs)  // an op must return a new handle (a view is fine)
    MASE_CHECK(!out.is_same(t), AutogradError, "[", op, "] returned its input handle; use detach()");
  auto node = std::make_shared<Node>();
  node->op = std::string(op);
  node->backward = std::move(backward);
  node->next.reserve(inputs.size());
  node->input_shapes.reserve(inputs.size());
  for (const Tensor& t : inputs) {
    Edge e;
    if (t.defined() && t.requires_grad()) {
      if (t.grad_fn()) e.fn = t.grad_fn();
      else e.leaf = t;
    }
    node->next.push_back(std::move(e));
    node->input_shapes.push_back(t.defined() ? t.shape() : Shape{});
  }
  out.set_requires_grad(true);
  out.set_grad_fn(std::move(node));
  return out;
}

namespace {

// d/d leaf accumulates in place into leaf.grad (allocated on the first backward only, so a
// training step in steady state allocates nothing here).
void accumulate_leaf(const Tensor& leaf, const Tensor& g) {
  if (!leaf.grad().defined()) leaf.set_grad(g.clone());  // a private copy: g may be shared
  else accumulate_(leaf.grad(), g);
}

// Post-order of the Nodes reachable from `root` (inputs before the ops that use them).
// The list owns its Nodes: freeing a Node's edges during backward must not free the Nodes
// still waiting their turn.
std::vector<std::shared_ptr<Node>> topological_order(const std::shared_ptr<Node>& root) {
  std::vector<std::shared_ptr<Node>> order;
  std::unordered_set<Node*> seen{root.get()};
  std::vector<std::pair<std::shared_ptr<Node>, size_t>> stack{{root, 0}};  // iterative DFS
  while (!stack.empty()) {
    auto& [node, i] = stack.back();
    if (i < node->next.size()) {
      std::shared_ptr<Node> child = node->next[i++].fn;
      if (child && seen.insert(child.get()).second) stack.push_back({std::move(child), 0});
    } else {
      order.push_back(node);
      stack.pop_back();
    }
  }
  return order;
}

}  // namespace

void backward(const Tensor& root, const Tensor& seed, bool retain_graph) {
  MASE_CHECK(root.defined(), AutogradError, "[backward] called on an undefined tensor");
  MASE_CHECK(root.requires_grad(), AutogradError,
             "[backward] expected a tensor that requires grad, got one with no history "
             "(did the forward run under NoGradGuard, or do no parameters require grad?)");
  Tensor dout = seed;
  if (!dout.defined()) {
    MASE_CHECK(root.numel() == 1, AutogradError,
               "[backward] expected a scalar (1 element) or an explicit seed gradient, got shape ",
               root.shape(), " (pass seed = d(loss)/d(root))");
    dout = Tensor::ones(root.shape(), root.dtype(), root.device());
  }
  MASE_CHECK(dout.shape() == root.shape(), ShapeError, "[backward] expected a seed of shape ",
             root.shape(), ", got ", dout.shape());
  MASE_CHECK(dout.device() == root.device(), DeviceError, "[backward] expected a seed on ",
             root.device(), ", got one on ", dout.device());
  MASE_CHECK(dout.dtype() == root.dtype(), DTypeError, "[backward] expected a seed of dtype ",
             root.dtype(), ", got ", dout.dtype());

  NoGradGuard no_grad;  // backward functions must not record new graph
  if (root.is_leaf()) {
    accumulate_leaf(root, dout);
    return;
  }
  std::unordered_map<Node*, Tensor> grads{{root.grad_fn().get(), dout}};
  std::vector<std::shared_ptr<Node>> order = topological_order(root.grad_fn());
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* node = it->get();
    auto g = grads.find(node);
    if (g == grads.end()) continue;  // no gradient reached this op
    Tensor d = std::move(g->second);
    grads.erase(g);
    std::optional<profile::Nested> nested;  // the ops below are this node's backward time
    if (profile::active()) nested.emplace();
    MASE_CHECK(node->backward != nullptr, AutogradError, "[backward] the graph through '",
               node->op, "' was already freed by an earlier backward (call backward once per "
               "forward, or pass retain_graph=true)");
    Tensors dins = node->backward(d);
    MASE_CHECK(dins.size() == node->next.size(), AutogradError, "[backward of ", node->op,
               "] expected ", node->next.size(), " gradients, got ", dins.size());
    for (size_t i = 0; i < dins.size(); ++i) {
      const Edge& e = node->next[i];
      if (!e.connected() || !dins[i].defined()) continue;
      MASE_CHECK(dins[i].shape() == node->input_shapes[i], ShapeError, "[backward of ", node->op,
                 "] gradient of input ", i, " has shape ", dins[i].shape(), ", expected ",
                 node->input_shapes[i]);
      if (e.fn) {
        auto [slot, fresh] = grads.try_emplace(e.fn.get(), dins[i]);
        if (!fresh) slot->second = add(slot->second, dins[i]);
      } else {
        accumulate_leaf(e.leaf, dins[i]);
      }
    }
    if (nested) {
      nested.reset();
      profile::op_done(node->op, /*backward=*/true);
    }
    if (!retain_graph) {  // free saved tensors and the links to earlier ops
      node->backward = nullptr;
      node->next.clear();
    }
  }
}

}  // namespace mase
