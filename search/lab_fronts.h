// search/lab_fronts.h — what the lab commands print about studies of two objectives
// (`precision --objectives accuracy,bits`, `tutorial | compress-aware --objectives
// accuracy,params`, `custom --directions`): each study's Pareto front, the hypervolume it
// dominates from a reference point, and the reference of the architecture searches — the
// parameter count of the largest model of their space.
//
//   front     tutorial-nsga2: hypervolume 0.4213 (accuracy x M parameters, from accuracy 0.5,
//             2658946 parameters: the space's largest model): trial 3 (0.7, 1204226 parameters)
// Read next: search/nsga2.h (hypervolume), search/lab_commands.h (the commands).
#pragma once
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "data/tokenizer.h"
#include "search/nsga2.h"
#include "search/study.h"
#include "train/train_config.h"

namespace mase::search {

// An objective's value as printed: a whole number without exponent (1234567 parameters, not
// cat's 1.23457e+06), anything else as cat prints it (6 significant digits).
std::string value_text(double v);

// Where the hypervolume is measured from. The objectives are multiplied by `scale` (one factor
// each; empty: none) before the area is taken, so that it reads in `units`: parameters in
// millions make an area of accuracy x M parameters, not of 10^6-sized numbers.
struct FrontReference {
  nsga2::Point point;        // in the objectives' own units
  std::string text;          // "accuracy 0.5, 32 bits"
  std::vector<double> scale = {};
  std::string units = "";    // "accuracy x M parameters"; "" says nothing
};

// One line per study: "front     <study>: [hypervolume H (from <text>): ]trial 3 (0.81,
// 12.5<unit>), ..." (`unit` after the last value), or "... no complete trial".
void print_fronts(const std::vector<Study>& studies, const std::string& unit, std::FILE* out,
                  const std::optional<FrontReference>& reference = std::nullopt);

// The hypervolume of `study`'s front from `reference` (scaled as it says); 0 with no front.
double front_hypervolume(const Study& study, const FrontReference& reference);

// The trainable parameters of the largest model an architecture space holds: each of
// num_layers, hidden_size and intermediate_size at its largest value (base's where the space
// has no such parameter), every Linear kept (Identity has none). The head count changes no
// parameter count (Q, K and V are H x H whatever the heads): one head, so that any hidden
// size is valid. Builds the model once (its random init: a second for the tutorial's 8 x 512
// x 2048). `tokenizer` gives the embedding's vocabulary, as the trials'.
int64_t largest_model_parameters(const Space& space, train::TrainConfig base,
                                 const data::Tokenizer& tokenizer);

// The architecture searches' reference: accuracy 0.5 (chance on the label-balanced test set)
// and `largest` parameters; the area in accuracy x millions of parameters.
FrontReference parameters_reference(int64_t largest);

}  // namespace mase::search
