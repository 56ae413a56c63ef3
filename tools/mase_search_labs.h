// tools/mase_search_labs.h — mase-search's lab commands (Labs 2.1, 2.2, 3.1, 3.2):
//   mase-search tutorial ...        mase-search compress-aware ...      mase-search precision ...
// tools/mase_search.cpp hands argv over when its first argument is one of them.
// Read next: tools/mase_search_labs.cpp (the flags), search/lab_commands.h (what they run).
#pragma once
#include <CLI/CLI.hpp>

#include "search/pruner.h"
#include "train/train_config.h"

namespace mase::tools {

bool is_lab_command(const char* arg);
int lab_main(int argc, char** argv);  // the exit status (tools/cli.h)
// `mase-search importance ...` (tools/mase_search_importance.cpp): the exit status.
int importance_main(int argc, char** argv);

// --pruner none|median|halving|hyperband and the pruners' settings (search/pruner.h,
// search/halving.h); add_pruner adds --eval-every too, for the searches whose trials train.
void add_prune_flags(CLI::App* c, search::PruneOptions& p);
void add_pruner(CLI::App* c, search::PruneOptions& p, train::TrainConfig& base);

}  // namespace mase::tools
