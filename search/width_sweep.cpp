// search/width_sweep.cpp — Lab 1.1's points. Read width_sweep.h first.
#include "search/width_sweep.h"

#include <filesystem>
#include <optional>

#include "quant/passes.h"
#include "runtime/error.h"
#include "search/sweep_model.h"

namespace mase::search {
namespace fs = std::filesystem;
using nlohmann::json;

json integer_config(int64_t width, int64_t frac) {
  return {{"by", "type"},
          {"default",
           {{"config",
             {{"name", "integer"},
              {"data_in_width", width}, {"data_in_frac_width", frac},
              {"weight_width", width}, {"weight_frac_width", frac},
              {"bias_width", width}, {"bias_frac_width", frac}}}}}};
}


SweepPlan width_sweep_plan(const WidthSweepOptions& opt) {
  const train::TrainConfig& b = opt.base;
  SweepPlan plan = sweep_files(opt.dir, opt.study, opt.plots);
  std::vector<std::string> widths;
  for (int64_t w : opt.widths) widths.push_back(std::to_string(w));
  plan.space.categorical("width", widths).categorical("mode", {"ptq", "qat"});
  for (const std::string& mode : opt.curves)
    for (size_t i = 0; i < widths.size(); ++i)
      plan.points.push_back({{"mode", mode == "ptq" ? 0 : 1}, {"width", double(i)}});
  plan.objective = {{"sweep", "lab1.1 width"},
                    {"model_dir", fs::weakly_canonical(fs::absolute(b.init)).string()},
                    {"format", "integer"}, {"frac_width", opt.frac.str()},
                    {"test_subset", b.test_subset}, {"max_len", b.max_len},
                    {"qat_steps", opt.qat_steps}, {"train_subset", b.train_subset},
                    {"batch_size", b.batch_size}, {"lr", b.lr ? json(*b.lr) : json()},
                    {"seed", b.seed}};
  const int64_t qat_steps = opt.qat_steps;
  plan.layout.x_param = "width";
  plan.layout.label_params = {"mode"};
  plan.layout.curve_label = [qat_steps](const Params& p) {
    return p.category("mode") == "ptq" ? std::string("PTQ") : cat("QAT, ", qat_steps, " steps");
  };
  plan.layout.attr_columns = {"frac_width", "test_loss", "seconds", "run"};
  const std::string frac = opt.frac.half ? "width/2" : cat(opt.frac.fixed);
  plan.text.title = cat("Lab 1.1: ", model_label(b.init), ", every Linear integer(width, frac ", frac,
                        ")\n", budget_text(b, "QAT", qat_steps));
  std::string curves;
  for (const std::string& c : opt.curves) curves += (curves.empty() ? "" : ",") + c;
  plan.summary = cat("Lab 1.1: ", opt.widths.size(), " widths x {", curves, "}, frac width ",
                     opt.frac.str(), ", model ", b.init);
  plan.text.xlabel = "fixed-point width (bits)";
  return plan;
}

int run_width_sweep(const WidthSweepOptions& opt, std::FILE* out) {
  const SweepPlan plan = width_sweep_plan(opt);
  std::optional<PassEvaluator> ptq;  // loaded at the first PTQ point that is not done yet
  const fs::path runs = fs::path(opt.dir) / opt.study;
  auto evaluate = [&](const Params& p) -> Outcome {
    const int64_t width = std::stoll(p.category("width")), frac = opt.frac.frac(width);
    const json config = integer_config(width, frac);
    Outcome o;
    if (p.category("mode") == "ptq") {
      if (!ptq) ptq.emplace(opt.base, out);
      o = eval_outcome(ptq->evaluate([&](nn::Module& m) { (void)quant::quantize(m, config); }));
    } else {
      o = train_outcome(opt.base, opt.qat_steps, config, "quant",
                        runs / cat("qat-w", width, "-f", frac), out);
    }
    o.attrs["frac_width"] = cat(frac);
    return o;
  };
  return run_sweep(plan, evaluate, out);
}

}  // namespace mase::search
