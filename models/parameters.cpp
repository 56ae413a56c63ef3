// models/parameters.cpp — the parameter report and freezing (see parameters.h).
#include "models/parameters.h"

#include <algorithm>
#include <array>
#include <sstream>
#include <unordered_set>

namespace mase::nn {
namespace {

// Counts `m`'s parameters (children included), each tensor once.
std::pair<int64_t, int64_t> count(const Module& m) {
  std::unordered_set<const TensorImpl*> seen;
  int64_t trainable = 0, total = 0;
  for (const auto& [path, p] : m.named_parameters()) {
    if (!seen.insert(p.impl()).second) continue;
    total += p.numel();
    if (p.requires_grad()) trainable += p.numel();
  }
  return {trainable, total};
}

FreezeReport set_trainable(Module& model, const std::string& pattern, bool on, const char* op) {
  const std::regex re = path_regex(pattern, op);
  FreezeReport r;
  r.trainable = on;
  bool matched = false;
  for (auto& [path, p] : model.named_parameters()) {
    if (!std::regex_search(path, re)) continue;
    matched = true;
    if (p.requires_grad() == on) continue;
    p.set_requires_grad(on);
    r.changed.push_back(path);
    r.elements += p.numel();
  }
  MASE_CHECK(matched, ConfigError, "[", op, "] pattern '", pattern, "' matches no parameter path ",
             "(paths look like bert.embeddings.word_embeddings.weight)");
  return r;
}

}  // namespace

std::regex path_regex(const std::string& pattern, const char* op) {
  try {
    return std::regex(pattern);
  } catch (const std::regex_error& e) {
    throw ConfigError(
        cat("[", op, "] expected a regular expression, got '", pattern, "': ", e.what()));
  }
}

std::string with_commas(int64_t n) {
  std::string digits = std::to_string(n < 0 ? -n : n), out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

ParameterReport report_trainable_parameters(Module& model) {
  ParameterReport r;
  for (const auto& [path, m] : model.named_modules()) {
    auto [trainable, total] = count(*m);
    r.rows.push_back({path, m->type_name(), trainable, total});
  }
  std::tie(r.trainable, r.total) = count(model);
  return r;
}

std::string ParameterReport::str(int max_depth) const {
  std::vector<std::array<std::string, 3>> shown{{"module", "trainable", "total"}};
  for (const auto& row : rows) {
    const int depth = row.path.empty()
                          ? 0
                          : 1 + static_cast<int>(std::count(row.path.begin(), row.path.end(), '.'));
    if (max_depth >= 0 && depth > max_depth) continue;
    shown.push_back({(row.path.empty() ? std::string("(model)") : row.path) + " (" + row.type + ")",
                     with_commas(row.trainable), with_commas(row.total)});
  }
  std::array<size_t, 3> w{};
  for (const auto& r : shown)
    for (size_t c = 0; c < 3; ++c) w[c] = std::max(w[c], r[c].size());
  std::ostringstream os;  // the name left-aligned, the counts right-aligned
  for (const auto& r : shown)
    os << r[0] << std::string(w[0] - r[0].size() + 2 + w[1] - r[1].size(), ' ') << r[1]
       << std::string(w[2] - r[2].size() + 2, ' ') << r[2] << "\n";
  os << "trainable parameters: " << with_commas(trainable) << " of " << with_commas(total) << "\n";
  return os.str();
}

FreezeReport freeze(Module& model, const std::string& pattern) {
  return set_trainable(model, pattern, false, "freeze");
}

FreezeReport unfreeze(Module& model, const std::string& pattern) {
  return set_trainable(model, pattern, true, "unfreeze");
}

std::string FreezeReport::str() const {
  return cat(trainable ? "unfroze " : "froze ", changed.size(), " parameter tensor",
             changed.size() == 1 ? "" : "s", " (", with_commas(elements), " elements)\n");
}

}  // namespace mase::nn
