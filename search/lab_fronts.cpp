// search/lab_fronts.cpp — the fronts of studies of two objectives, printed; the architecture
// searches' reference point. Read lab_fronts.h first.
#include "search/lab_fronts.h"

#include <algorithm>
#include <cmath>

#include "runtime/error.h"
#include "search/trial_pipeline.h"

namespace mase::search {

std::string value_text(double v) {
  char text[32];
  if (std::isfinite(v) && v == std::rint(v) && std::fabs(v) < 1e15) {
    std::snprintf(text, sizeof text, "%.0f", v);
    return text;
  }
  return cat(v);
}

namespace {

// The hypervolume of `front` (trials of a study with these directions), as front_hypervolume.
double hypervolume_of(const std::vector<TrialRecord>& front,
                      const std::vector<Direction>& directions, const FrontReference& reference) {
  auto scaled = [&](nsga2::Point p) {
    for (size_t k = 0; k < p.size() && k < reference.scale.size(); ++k) p[k] *= reference.scale[k];
    return p;
  };
  std::vector<nsga2::Point> points;
  for (const TrialRecord& r : front) points.push_back(scaled(r.trial.objectives));
  return nsga2::hypervolume(points, directions, scaled(reference.point));
}

}  // namespace

double front_hypervolume(const Study& study, const FrontReference& reference) {
  return hypervolume_of(study.pareto_front(), study.directions(), reference);
}

void print_fronts(const std::vector<Study>& studies, const std::string& unit, std::FILE* out,
                  const std::optional<FrontReference>& reference) {
  for (const Study& study : studies) {
    const std::vector<TrialRecord> trials = study.pareto_front();  // read once
    std::string front;
    for (const TrialRecord& r : trials) {
      std::string values;
      for (double v : r.trial.objectives) values += cat(values.empty() ? "" : ", ", value_text(v));
      front += cat(front.empty() ? "" : ", ", "trial ", r.trial.number, " (", values, unit, ")");
    }
    std::string hv;
    if (reference) {
      char number[48];
      std::snprintf(number, sizeof number, "%.4f",
                    hypervolume_of(trials, study.directions(), *reference));
      hv = cat("hypervolume ", number, " (",
               reference->units.empty() ? "" : reference->units + ", ", "from ",
               reference->text, "): ");
    }
    std::fprintf(out, "front     %s: %s%s\n", study.name().c_str(), hv.c_str(),
                 front.empty() ? "no complete trial" : front.c_str());
  }
}

namespace {

// The largest value of an architecture parameter (choices read as integers); 0 when absent.
int64_t largest(const Space& space, const std::string& name) {
  for (const Param& p : space.params()) {
    if (p.name != name) continue;
    if (p.kind == Param::Kind::integer)
      return static_cast<int64_t>(p.low + p.step * static_cast<double>(p.cardinality() - 1));
    int64_t most = 0;
    for (const std::string& c : p.choices) most = std::max<int64_t>(most, std::stoll(c));
    return most;
  }
  return 0;
}

}  // namespace

int64_t largest_model_parameters(const Space& space, train::TrainConfig base,
                                 const data::Tokenizer& tokenizer) {
  for (const Param& p : space.params())
    MASE_CHECK(p.kind != Param::Kind::real, ConfigError, "[search] the largest model of the "
               "space: expected integer or categorical '", p.name, "', got a real parameter");
  if (const int64_t v = largest(space, "num_layers")) base.num_layers = v;
  if (const int64_t v = largest(space, "hidden_size")) base.hidden_size = v;
  if (const int64_t v = largest(space, "intermediate_size")) base.intermediate_size = v;
  base.num_heads = 1;  // divides any hidden size; no parameter depends on it
  return new_model(base, tokenizer)->num_parameters(true);
}

FrontReference parameters_reference(int64_t largest) {
  return {{0.5, static_cast<double>(largest)},
          cat("accuracy 0.5, ", largest, " parameters: the space's largest model"),
          {1.0, 1e-6},
          "accuracy x M parameters"};
}

}  // namespace mase::search
