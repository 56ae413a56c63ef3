// graph/op_table.cpp — name -> re-run function for every recorded op (see op_table.h).
// One line per op, grouped as autograd/ops.h groups them.
#include "graph/op_table.h"

#include <cmath>
#include <sstream>

#include "autograd/ops.h"
#include "graph/passes/recompute_gelu.h"

namespace mase::graph {
namespace {

using Args = const Tensors&;
using A = const Attrs&;

// The optional rows_period / rows_stride / rows_first attrs of a narrowed dropout
// (graph/passes/narrow_cls.h): which rows of the dropout stream the op's rows are.
RowMap row_map(A a) {
  RowMap m;
  if (!find_attr(a, "rows_period")) return m;
  m.period = attr_int(a, "rows_period");
  m.stride = attr_int(a, "rows_stride");
  m.first = attr_int(a, "rows_first");
  return m;
}

constexpr OpKind fn = OpKind::call_function;
constexpr OpKind method = OpKind::call_method;

std::vector<OpInfo> build_table() {
  // (name, kind, mase_type, mase_op, run)
  std::vector<OpInfo> t = {
      // elementwise binary (ops/binary.cpp)
      {"add", fn, "builtin_func", "add", [](Args x, A, bool) { return add(x[0], x[1]); }},
      {"sub", fn, "builtin_func", "sub", [](Args x, A, bool) { return sub(x[0], x[1]); }},
      {"mul", fn, "builtin_func", "mul", [](Args x, A, bool) { return mul(x[0], x[1]); }},
      {"div", fn, "builtin_func", "div", [](Args x, A, bool) { return div(x[0], x[1]); }},
      {"add_scalar", fn, "builtin_func", "add",
       [](Args x, A a, bool) { return add(x[0], attr_double(a, "scalar")); }},
      {"sub_scalar", fn, "builtin_func", "sub",
       [](Args x, A a, bool) { return sub(x[0], attr_double(a, "scalar")); }},
      {"rsub_scalar", fn, "builtin_func", "sub",
       [](Args x, A a, bool) { return rsub(attr_double(a, "scalar"), x[0]); }},
      {"mul_scalar", fn, "builtin_func", "mul",
       [](Args x, A a, bool) { return mul(x[0], attr_double(a, "scalar")); }},
      {"div_scalar", fn, "builtin_func", "div",
       [](Args x, A a, bool) { return div(x[0], attr_double(a, "scalar")); }},
      // elementwise unary (ops/unary.cpp, ops/gelu.cpp)
      {"neg", fn, "builtin_func", "neg", [](Args x, A, bool) { return neg(x[0]); }},
      {"exp", fn, "builtin_func", "exp", [](Args x, A, bool) { return exp(x[0]); }},
      {"log", fn, "builtin_func", "log", [](Args x, A, bool) { return log(x[0]); }},
      {"sqrt", fn, "builtin_func", "sqrt", [](Args x, A, bool) { return sqrt(x[0]); }},
      {"tanh", fn, "module_related_func", "tanh", [](Args x, A, bool) { return tanh(x[0]); }},
      {"relu", fn, "module_related_func", "relu", [](Args x, A, bool) { return relu(x[0]); }},
      {"gelu", fn, "module_related_func", "gelu", [](Args x, A, bool) { return gelu(x[0]); }},
      // fused (ops/gelu.cpp, ops/layer_norm.cpp): what a BERT block runs after the fusion pass
      // (models/fusion.h); a model traced before fusing shows their parts instead
      {"bias_gelu", fn, "module_related_func", "bias_gelu",
       [](Args x, A, bool) { return bias_gelu(x[0], x[1]); }},
      // graph/passes/recompute_gelu.h: bias_gelu then linear, the GELU output recomputed in
      // backward (a compile pass for training inserts it; no model records it)
      {"bias_gelu_linear", fn, "module_related_func", "linear",
       [](Args x, A, bool) {
         return bias_gelu_linear(x[0], x[1], x[2], x.size() > 3 ? x[3] : Tensor());
       }},
      // bias_gelu(linear(x, W), b) with GELU in the GEMM's store (ops/matmul.cpp): a fused BERT
      // traced for inference under --precision bf16 on AMX records it
      {"linear_gelu", fn, "module_related_func", "linear",
       [](Args x, A, bool) { return linear_gelu(x[0], x[1], x[2]); }},
      {"dropout_add_layer_norm", fn, "module_related_func", "dropout_add_layer_norm",
       [](Args x, A a, bool training) {
         const size_t b = x.size() == 5 ? 1 : 0;  // inputs: x, [x_bias], residual, weight, bias
         return dropout_add_layer_norm(x[0], b ? x[1] : Tensor(), x[1 + b], x[2 + b], x[3 + b],
                                       attr_double(a, "p"), training, attr_double(a, "eps"),
                                       default_generator(), row_map(a));
       }},
      // matrix products (ops/matmul.cpp)
      {"matmul", fn, "builtin_func", "matmul", [](Args x, A, bool) { return matmul(x[0], x[1]); }},
      {"linear", fn, "module_related_func", "linear",
       [](Args x, A, bool) { return linear(x[0], x[1], x.size() > 2 ? x[2] : Tensor()); }},
      // reductions (ops/reduce.cpp)
      {"sum", fn, "builtin_func", "sum",
       [](Args x, A a, bool) { return sum(x[0], attr_ints(a, "dims"), attr_bool(a, "keepdim")); }},
      {"mean", fn, "builtin_func", "mean",
       [](Args x, A a, bool) { return mean(x[0], attr_ints(a, "dims"), attr_bool(a, "keepdim")); }},
      {"amax", fn, "builtin_func", "amax",
       [](Args x, A a, bool) { return amax(x[0], attr_int(a, "dim"), attr_bool(a, "keepdim")); }},
      // softmax family, normalisation, lookups, losses
      {"softmax", fn, "module_related_func", "softmax",
       [](Args x, A, bool) { return softmax(x[0]); }},
      {"log_softmax", fn, "module_related_func", "log_softmax",
       [](Args x, A, bool) { return log_softmax(x[0]); }},
      {"layer_norm", fn, "module_related_func", "layer_norm",
       [](Args x, A a, bool) { return layer_norm(x[0], x[1], x[2], attr_double(a, "eps")); }},
      {"embedding", fn, "module_related_func", "embedding",
       [](Args x, A, bool) { return embedding(x[0], x[1]); }},
      {"cross_entropy", fn, "module_related_func", "cross_entropy",
       [](Args x, A a, bool) { return cross_entropy(x[0], x[1], attr_int(a, "ignore_index")); }},
      {"dropout", fn, "module_related_func", "dropout",
       [](Args x, A a, bool training) { return dropout(x[0], attr_double(a, "p"), training); }},
      {"where", fn, "builtin_func", "where",
       [](Args x, A, bool) { return where(x[0], x[1], x[2]); }},
      {"sdpa", fn, "module_related_func", "scaled_dot_product_attention",
       [](Args x, A a, bool training) {
         return sdpa(x[0], x[1], x[2], x[3], attr_double(a, "dropout_p"), training,
                     default_generator(), row_map(a));
       }},
      // shapes and views (ops/view.cpp): tensor methods in torch, so call_method
      {"reshape", method, "implicit_func", "reshape",
       [](Args x, A a, bool) { return reshape(x[0], Shape(attr_ints(a, "shape"))); }},
      {"view", method, "implicit_func", "view",
       [](Args x, A a, bool) { return view(x[0], Shape(attr_ints(a, "shape"))); }},
      {"transpose", method, "implicit_func", "transpose",
       [](Args x, A a, bool) { return transpose(x[0], attr_int(a, "dim0"), attr_int(a, "dim1")); }},
      {"permute", method, "implicit_func", "permute",
       [](Args x, A a, bool) { return permute(x[0], attr_ints(a, "dims")); }},
      {"squeeze", method, "implicit_func", "squeeze",
       [](Args x, A a, bool) { return squeeze(x[0], attr_int(a, "dim")); }},
      {"unsqueeze", method, "implicit_func", "unsqueeze",
       [](Args x, A a, bool) { return unsqueeze(x[0], attr_int(a, "dim")); }},
      {"expand", method, "implicit_func", "expand",
       [](Args x, A a, bool) { return expand(x[0], Shape(attr_ints(a, "shape"))); }},
      {"contiguous", method, "implicit_func", "contiguous",
       [](Args x, A, bool) { return contiguous(x[0]); }},
      {"to_dtype", method, "implicit_func", "to",
       [](Args x, A a, bool) { return to_dtype(x[0], dtype_from_name(attr_string(a, "dtype"))); }},
      // indexing: x[:, 0] is operator.getitem in torch.fx, a function
      {"slice", fn, "implicit_func", "getitem",
       [](Args x, A a, bool) {
         return slice(x[0], attr_int(a, "dim"), attr_int(a, "start"), attr_int(a, "end"),
                      attr_int(a, "step"));
       }},
      {"select", fn, "implicit_func", "getitem",
       [](Args x, A a, bool) { return select(x[0], attr_int(a, "dim"), attr_int(a, "index")); }},
      {"concat", fn, "builtin_func", "cat",
       [](Args x, A a, bool) { return concat(x, attr_int(a, "dim")); }},
      // tensors made from another's shape (ops/factory.cpp)
      {"ones_like", fn, "builtin_func", "ones_like",
       [](Args x, A a, bool) { return ones_like(x[0], dtype_from_name(attr_string(a, "dtype"))); }},
      {"zeros_like", fn, "builtin_func", "zeros_like",
       [](Args x, A a, bool) {
         return zeros_like(x[0], dtype_from_name(attr_string(a, "dtype")));
       }},
      {"arange_like", fn, "builtin_func", "arange",
       [](Args x, A a, bool) {
         return arange_like(x[0], attr_int(a, "dim"), dtype_from_name(attr_string(a, "dtype")));
       }},
  };
  return t;
}

template <class T>
const T& typed_attr(const Attrs& attrs, std::string_view key, const char* type) {
  const AttrValue* v = find_attr(attrs, key);
  if (!v) throw GraphError(cat("[graph] expected attr '", key, "', got none"));
  if (const T* p = std::get_if<T>(v)) return *p;
  throw GraphError(cat("[graph] expected attr '", key, "' to be ", type, ", got ", attr_str(*v)));
}

}  // namespace

const std::vector<OpInfo>& op_table() {
  static const std::vector<OpInfo> table = build_table();
  return table;
}

const OpInfo* find_op(std::string_view name) {
  for (const OpInfo& op : op_table())
    if (op.name == name) return &op;
  return nullptr;
}

const OpInfo& op_info(std::string_view name) {
  if (const OpInfo* op = find_op(name)) return *op;
  throw GraphError(cat("[graph] expected an op of graph/op_table.cpp, got '", name,
                       "' (add an entry: name -> function(args, attrs) so that graphs can ",
                       "run it)"));
}

const AttrValue* find_attr(const Attrs& attrs, std::string_view key) {
  for (const auto& [k, v] : attrs)
    if (k == key) return &v;
  return nullptr;
}

int64_t attr_int(const Attrs& a, std::string_view key) {
  return typed_attr<int64_t>(a, key, "an int");
}
bool attr_bool(const Attrs& a, std::string_view key) { return typed_attr<bool>(a, key, "a bool"); }
std::string attr_string(const Attrs& a, std::string_view key) {
  return typed_attr<std::string>(a, key, "a string");
}

double attr_double(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  if (v && std::holds_alternative<int64_t>(*v)) return static_cast<double>(std::get<int64_t>(*v));
  return typed_attr<double>(a, key, "a number");
}

std::vector<int64_t> attr_ints(const Attrs& a, std::string_view key) {
  const AttrValue* v = find_attr(a, key);
  if (v && std::holds_alternative<int64_t>(*v)) return {std::get<int64_t>(*v)};
  return typed_attr<std::vector<int64_t>>(a, key, "a list of ints");
}

std::string attr_str(const AttrValue& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, bool>)
          os << (x ? "true" : "false");
        else if constexpr (std::is_same_v<T, std::vector<int64_t>>)
          os << Shape(x);
        else if constexpr (std::is_same_v<T, double>)
          os.precision(9), os << x;
        else
          os << x;
      },
      v);
  return os.str();
}

bool draws_random(const Node& n, bool training) {
  if (!training) return false;
  if (n.op == OpKind::call_module) return true;
  if (n.op != OpKind::call_function) return false;
  const char* key = n.target == "sdpa"                                              ? "dropout_p"
                    : n.target == "dropout" || n.target == "dropout_add_layer_norm" ? "p"
                                                                                    : nullptr;
  return key && (!find_attr(n.attrs, key) || attr_double(n.attrs, key) > 0.0);
}

DType dtype_from_name(std::string_view s) {
  for (DType t : {DType::f32, DType::f64, DType::i32, DType::i8, DType::u8})
    if (name(t) == s) return t;
  throw GraphError(cat("[graph] expected a dtype (f32, f64, i32, i8, u8), got '", s, "'"));
}

}  // namespace mase::graph
