// graph/trace.cpp — the tracer (both observers) and the BERT entry point (see trace.h).
#include "graph/trace.h"

#include <unordered_map>

#include "graph/op_table.h"

namespace mase::graph {
namespace {

class Tracer : public OpObserver, public nn::ModuleObserver {
 public:
  Tracer(Graph& g) : g_(g) {
    for (const auto& [path, m] : g.root().named_modules())
      module_path_.try_emplace(m.get(), path);  // a module registered twice: its first path
    for (const auto& [path, t] : g.root().named_parameters())
      param_path_.try_emplace(t.impl(), path);
    for (const auto& [path, t] : g.root().named_buffers()) param_path_.try_emplace(t.impl(), path);
  }

  void bind(const Tensor& t, Node* n) { value_[t.impl()] = {t.weak(), n}; }

  // The node whose value `t` is: a traced one, a parameter (get_attr), or a new constant.
  Node* node_of(const Tensor& t) {
    if (!t.defined()) return nullptr;
    if (auto it = value_.find(t.impl()); it != value_.end() && !it->second.alive.expired())
      return it->second.node;
    Node* n;
    if (auto p = param_path_.find(t.impl()); p != param_path_.end())
      n = g_.add_node(OpKind::get_attr, p->second, {});
    else
      n = g_.add_node(OpKind::get_attr, g_.add_constant(t), {});
    bind(t, n);
    return n;
  }

  void on_op(std::string_view op, const Tensors& inputs, const Attrs& attrs,
             const Tensor& out) override {
    if (in_leaf_ > 0) return;          // inside a call_module: not recorded
    const OpInfo& info = op_info(op);  // an op the interpreter cannot run is refused here
    std::vector<Node*> args;
    for (const Tensor& t : inputs) args.push_back(node_of(t));
    bind(out, g_.add_node(info.kind, info.name, std::move(args), attrs));
  }

  Tensor on_call(nn::Module& m, const Tensor& x, const std::function<Tensor()>& run) override {
    auto path = module_path_.find(&m);
    if (in_leaf_ > 0 || !m.is_leaf() || path == module_path_.end()) return run();
    Node* arg = node_of(x);
    ++in_leaf_;
    Tensor y;
    try {
      y = run();
    } catch (...) {
      --in_leaf_;
      throw;
    }
    --in_leaf_;
    if (y.is_same(x)) y = y.detach();  // a module that returns its input: a value of its own
    bind(y, g_.add_node(OpKind::call_module, path->second, {arg}));
    return y;
  }

 private:
  Graph& g_;
  int in_leaf_ = 0;
  std::unordered_map<const nn::Module*, std::string> module_path_;
  std::unordered_map<const TensorImpl*, std::string> param_path_;
  // Values are followed by TensorImpl address, but not kept alive: an intermediate is freed
  // when the model lets go of it, as in eager, so the trace reuses memory as eager does (it
  // kept every one until 2026-12-01: a trace then cost about 1.5x an eager forward, fresh pages
  // for every tensor). A value that died cannot be read again; a new tensor at its address is
  // told from it by the weak reference, expired (with make_shared, the address is not even
  // reused while the weak reference holds the block).
  struct Bound {
    std::weak_ptr<const TensorImpl> alive;
    Node* node = nullptr;
  };
  std::unordered_map<const TensorImpl*, Bound> value_;
};

// Installs both observers for the scope (and restores whatever was there).
struct Observing {
  Observing(Tracer& t) : prev_op(set_op_observer(&t)), prev_module(nn::set_module_observer(&t)) {}
  ~Observing() {
    set_op_observer(prev_op);
    nn::set_module_observer(prev_module);
  }
  OpObserver* prev_op;
  nn::ModuleObserver* prev_module;
};

}  // namespace

Graph trace(nn::ModulePtr root, const NamedTensors& inputs, const ForwardFn& forward) {
  Graph g(std::move(root));
  Tracer tracer(g);
  TensorMap by_name;
  for (const auto& [name, t] : inputs) {
    MASE_CHECK(t.defined(), graph::GraphError, "[trace] expected a defined tensor for input '",
               name, "', got an undefined one");
    MASE_CHECK(!by_name.count(name), graph::GraphError, "[trace] expected each input once, got '",
               name, "' twice");
    Tensor own = t.detach();  // a handle of its own: two inputs never share an identity
    Attrs attrs{{"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                {"dtype", std::string(mase::name(t.dtype()))}};
    tracer.bind(own, g.add_node(OpKind::placeholder, name, {}, std::move(attrs)));
    by_name[name] = own;
  }
  NamedTensors outputs;
  {
    NoGradGuard no_grad;        // ops still report to observers without building autograd graphs
    KeepDefaultGenerator keep;  // dropout in training mode draws masks: leave the stream
    Observing observing(tracer);
    outputs = forward(by_name);
  }
  std::vector<std::pair<std::string, Node*>> outs;
  for (const auto& [name, t] : outputs) {
    MASE_CHECK(t.defined(), graph::GraphError, "[trace] expected a defined tensor for output '",
               name, "', got an undefined one (the forward returned an empty Tensor)");
    outs.push_back({name, tracer.node_of(t)});
  }
  g.set_output(outs);
  g.eliminate_dead_code();
  g.lint();
  return g;
}

// ---- BERT -----------------------------------------------------------------------------------

const std::vector<std::string>& bert_input_names() {
  static const std::vector<std::string> names{"input_ids", "attention_mask", "token_type_ids",
                                              "labels"};
  return names;
}

NamedTensors bert_inputs(const std::vector<std::string>& names, const data::Batch& batch) {
  const TensorMap all{{"input_ids", batch.input_ids},
                      {"attention_mask", batch.attention_mask},
                      {"token_type_ids", batch.token_type_ids},
                      {"labels", batch.labels}};
  NamedTensors out;
  bool has_ids = false;
  std::string given;
  for (const std::string& n : names) {
    auto it = all.find(n);
    MASE_CHECK(it != all.end(), ConfigError,
               "[trace] expected inputs among input_ids, "
               "attention_mask, token_type_ids, labels, got '",
               n, "'");
    for (const auto& [seen, t] : out)
      MASE_CHECK(seen != n, ConfigError, "[trace] expected each input name once, got '", n,
                 "' twice");
    MASE_CHECK(it->second.defined(), ConfigError, "[trace] expected the batch to hold input '", n,
               "', got none (leave it out of the names, or fill the batch's ", n, ")");
    has_ids |= n == "input_ids";
    given += (given.empty() ? "" : ", ") + n;
    out.push_back({n, it->second});
  }
  MASE_CHECK(has_ids, ConfigError, "[trace] expected input_ids among the inputs, got ",
             given.empty() ? std::string("none") : given, " (BERT needs it)");
  return out;
}

Graph trace_bert(const std::shared_ptr<nn::BertForSequenceClassification>& model,
                 const std::vector<std::string>& input_names, const data::Batch& example) {
  MASE_CHECK(model != nullptr, ConfigError, "[trace] expected a model, got null");
  auto forward = [model](const TensorMap& in) {
    auto get = [&](const char* n) {
      auto it = in.find(n);
      return it == in.end() ? Tensor() : it->second;
    };
    nn::SequenceClassifierOutput out = model->forward(get("input_ids"), get("attention_mask"),
                                                      get("token_type_ids"), get("labels"));
    NamedTensors result{{"logits", out.logits}};
    if (out.loss.defined()) result.push_back({"loss", out.loss});
    return result;
  };
  return trace(model, bert_inputs(input_names, example), forward);
}

TensorMap graph_inputs(const Graph& graph, const data::Batch& batch) {
  TensorMap out;
  for (const auto& [name, t] : bert_inputs(graph.input_names(), batch)) out[name] = t;
  return out;
}

data::Batch example_batch(int64_t batch_size, int64_t seq_len, int64_t vocab_size, uint64_t seed,
                          int64_t pad) {
  MASE_CHECK(batch_size >= 1 && seq_len >= 1 && vocab_size >= 2 && pad >= 0 && pad < seq_len,
             ConfigError,
             "[example_batch] expected batch >= 1, seq_len >= 1, vocab >= 2, "
             "0 <= pad < seq_len, got ",
             batch_size, ", ", seq_len, ", ", vocab_size, ", ", pad);
  Generator gen(seed);
  std::vector<double> u = rand({batch_size, seq_len}, gen).to_vector<double>();  // U[0, 1)
  std::vector<int32_t> ids(u.size()), mask(u.size(), 1), labels(batch_size);
  for (size_t i = 0; i < u.size(); ++i)  // ids in [1, vocab): never [PAD] = 0
    ids[i] = 1 + std::min<int32_t>(static_cast<int32_t>(u[i] * double(vocab_size - 1)),
                                   static_cast<int32_t>(vocab_size - 2));
  if (batch_size > 1)
    for (int64_t t = seq_len - pad; t < seq_len; ++t) {
      mask[seq_len + t] = 0;
      ids[seq_len + t] = 0;  // [PAD]
    }
  for (int64_t b = 0; b < batch_size; ++b) labels[b] = static_cast<int32_t>(b % 2);
  data::Batch batch;
  batch.input_ids = Tensor::from(ids, {batch_size, seq_len});
  batch.attention_mask = Tensor::from(mask, {batch_size, seq_len});
  batch.token_type_ids = Tensor::zeros({batch_size, seq_len}, DType::i32);
  batch.labels = Tensor::from(labels, {batch_size});
  batch.real_tokens = batch_size * seq_len - (batch_size > 1 ? pad : 0);
  return batch;
}

}  // namespace mase::graph
