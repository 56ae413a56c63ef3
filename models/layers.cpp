// models/layers.cpp — leaf modules (see layers.h).
#include "models/layers.h"

#include <cmath>

#include "models/init.h"

namespace mase::nn {

Linear::Linear(int64_t in, int64_t out, bool with_bias) : in_features(in), out_features(out) {
  MASE_CHECK(in > 0 && out > 0, ConfigError, "[Linear] expected positive sizes, got in=", in,
             ", out=", out);
  register_parameter("weight", weight, Tensor::empty({out, in}));
  kaiming_uniform_(weight, std::sqrt(5.0));
  if (with_bias) {
    register_parameter("bias", bias, Tensor::empty({out}));
    double bound = 1.0 / std::sqrt(static_cast<double>(in));
    uniform_(bias, -bound, bound);
  }
}
Linear::Linear(Tensor w, Tensor b) {
  MASE_CHECK(w.defined() && w.ndim() == 2, ShapeError, "[Linear] expected weight (out, in), got ",
             w.defined() ? to_string(w.shape()) : "an undefined tensor");
  in_features = w.size(1);
  out_features = w.size(0);
  MASE_CHECK(!b.defined() || (b.ndim() == 1 && b.size(0) == out_features), ShapeError,
             "[Linear] expected bias (", out_features, "), got ",
             b.defined() ? to_string(b.shape()) : "");
  const bool wg = w.requires_grad(), bg = b.defined() && b.requires_grad();
  register_parameter("weight", weight, std::move(w), wg);
  if (b.defined()) register_parameter("bias", bias, std::move(b), bg);
}
nlohmann::json Linear::to_json() const {
  return {{"in_features", in_features}, {"out_features", out_features}, {"bias", bias.defined()}};
}
std::string Linear::extra_repr() const {
  return cat("in_features=", in_features, ", out_features=", out_features, ", bias=",
             bias.defined() ? "true" : "false");
}
Tensor Linear::forward(const Tensor& x) { return linear(x, weight, bias); }

Embedding::Embedding(int64_t n, int64_t d) : num_embeddings(n), embedding_dim(d) {
  MASE_CHECK(n > 0 && d > 0, ConfigError, "[Embedding] expected positive sizes, got ", n, " x ", d);
  register_parameter("weight", weight, Tensor::empty({n, d}));
  normal_(weight, 0.0, 1.0);
}
nlohmann::json Embedding::to_json() const {
  return {{"num_embeddings", num_embeddings}, {"embedding_dim", embedding_dim}};
}
std::string Embedding::extra_repr() const { return cat(num_embeddings, ", ", embedding_dim); }
Tensor Embedding::forward(const Tensor& ids) { return embedding(ids, weight); }

LayerNorm::LayerNorm(int64_t d, double e) : dim(d), eps(e) {
  MASE_CHECK(d > 0, ConfigError, "[LayerNorm] expected a positive size, got ", d);
  MASE_CHECK(e >= 0, ConfigError, "[LayerNorm] expected eps >= 0, got ", e);  // NaN fails too
  register_parameter("weight", weight, Tensor::ones({d}));
  register_parameter("bias", bias, Tensor::zeros({d}));
}
nlohmann::json LayerNorm::to_json() const { return {{"normalized_shape", dim}, {"eps", eps}}; }
std::string LayerNorm::extra_repr() const { return cat("(", dim, "), eps=", eps); }
Tensor LayerNorm::forward(const Tensor& x) { return layer_norm(x, weight, bias, eps); }

Dropout::Dropout(double prob) : p(prob) {
  MASE_CHECK(p >= 0.0 && p <= 1.0, ConfigError, "[Dropout] expected p in [0, 1], got ", p);
}
nlohmann::json Dropout::to_json() const { return {{"p", p}}; }
std::string Dropout::extra_repr() const { return cat("p=", p); }
Tensor Dropout::forward(const Tensor& x) { return dropout(x, p, is_training()); }

Tensor Identity::forward(const Tensor& x) {
  // a new handle with identity gradient (an op may not return its input handle)
  return contiguous(x);
}

void ModuleList::push_back(ModulePtr m) {
  items_.push_back(std::make_unique<ModulePtr>());
  register_module(std::to_string(items_.size() - 1), *items_.back(), std::move(m));
}

}  // namespace mase::nn
