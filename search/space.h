// search/space.h — a search space: named parameters and the values a trial gives them.
//
// Three kinds of parameter, as in Optuna (the vocabulary students meet in the original labs):
//   categorical  one of a list of choices, e.g. hidden_size in {128, 192, 256}
//   integer      low..high in steps of `step`, e.g. num_layers 2..8, optionally log-scaled
//   real         low..high, linear or log-scaled, e.g. lr 1e-5..1e-3 (log)
// A trial's values are held in one internal form, a double per parameter: the index of the
// choice for a categorical, the number itself for integer and real. Samplers work only on that
// form (a TPE kernel over an index, a grid over indices); `Params`' accessors turn it back into
// what the objective wants. Parameters are kept sorted by name, so a space and a trial read the
// same whatever order they were declared in, and names are the keys stored in a study.
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace mase::search {

struct Param {
  enum class Kind { categorical, integer, real };
  std::string name;
  Kind kind = Kind::real;
  std::vector<std::string> choices;  // categorical only
  double low = 0, high = 0;          // integer and real
  double step = 0;                   // integer: >= 1; real: 0 (continuous)
  bool log = false;                  // integer and real: sample log(x) uniformly / with kernels

  // Number of distinct values, or 0 for a continuous real.
  int64_t cardinality() const;
  // The internal value as text: the choice, the integer, or the real (%.17g: exact).
  std::string format(double internal) const;
  // Inverse of format (for values read back from a study); throws ConfigError if not a value.
  double parse(const std::string& text) const;
  // Whether an internal value is one this parameter can take.
  bool contains(double internal) const;
};

// The values of one trial, in internal form, keyed by parameter name.
using Values = std::map<std::string, double>;

class Space {
 public:
  // Builders; each throws ConfigError on a duplicate name or an empty / inverted range.
  Space& categorical(const std::string& name, std::vector<std::string> choices);
  Space& integer(const std::string& name, int64_t low, int64_t high, int64_t step = 1,
                 bool log = false);
  Space& real(const std::string& name, double low, double high, bool log = false);

  const std::vector<Param>& params() const { return params_; }  // sorted by name
  const Param& at(const std::string& name) const;               // ConfigError if unknown
  bool empty() const { return params_.empty(); }
  // The number of points of a finite space (a grid), or 0 if some parameter is continuous;
  // INT64_MAX when there are more than int64 counts.
  int64_t grid_size() const;
  // "name=value name=value" in parameter order, for logs and CSV.
  std::string format(const Values& values) const;

 private:
  void add(Param p);
  std::vector<Param> params_;
};

// What an objective reads: typed access to a trial's values.
class Params {
 public:
  Params(const Space& space, Values values) : space_(&space), values_(std::move(values)) {}
  const std::string& category(const std::string& name) const;  // categorical
  int64_t integer(const std::string& name) const;              // integer
  double real(const std::string& name) const;                  // real (or integer, widened)
  const Values& values() const { return values_; }

 private:
  double raw(const std::string& name, Param::Kind kind) const;
  const Space* space_;
  Values values_;
};

}  // namespace mase::search
