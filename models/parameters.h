// models/parameters.h — how many parameters each part of a model trains, and freezing: the
// parameter passes of Lab 0 (they act on the module tree, so they live here, below train/,
// which prints the report at the start of a run, and graph/).
//
// report_trainable_parameters (analysis) gives one row per submodule (its dotted path, "" for
// the model itself) with the number of trainable parameter elements in it INCLUDING its
// children, and totals. Every parameter counts once: a tensor shared by two modules (tied
// weights) is counted once in each subtree that holds it and once in the total. (The
// original tutorial summed the rows of nested modules and so counted each parameter once per
// ancestor.) bert-tiny (vocab 30,522): 4,386,178; with bert.embeddings frozen: 413,314.
//
// freeze (transform) turns requires_grad off for every parameter whose dotted path matches a
// regular expression (ECMAScript, searched anywhere in the path: "bert.embeddings" matches
// bert.embeddings.word_embeddings.weight; anchor with ^ and $ for more precision). A pattern
// that matches nothing is a ConfigError: it is almost always a typo. unfreeze is the reverse.
// Read next: models/lora.h (LoRA insertion sets what trains).
#pragma once
#include <cstdint>
#include <regex>
#include <string>
#include <vector>

#include "models/module.h"

namespace mase::nn {

struct ParameterRow {
  std::string path;                  // "" = the whole model
  std::string type;                  // type_name(): "BertEmbeddings"
  int64_t trainable = 0, total = 0;  // elements, children included, each tensor once
};

struct ParameterReport {
  std::vector<ParameterRow> rows;  // the model, then every submodule in tree order
  int64_t trainable = 0, total = 0;
  // The table; max_depth >= 0 keeps rows whose path has at most that many dots + 1 parts.
  std::string str(int max_depth = -1) const;
};

ParameterReport report_trainable_parameters(Module& model);

struct FreezeReport {
  std::vector<std::string> changed;  // paths of the parameters whose flag was set
  int64_t elements = 0;              // their total size
  bool trainable = false;            // the flag they now have (false: frozen)
  std::string str() const;           // "froze 5 parameter tensors (3,972,864 elements)"
};

FreezeReport freeze(Module& model, const std::string& pattern);
FreezeReport unfreeze(Module& model, const std::string& pattern);

// A regular expression over module or parameter paths; ConfigError naming `op` if invalid.
std::regex path_regex(const std::string& pattern, const char* op);

// "4,386,178": thousands separated by commas.
std::string with_commas(int64_t n);

}  // namespace mase::nn
