// tools/mase-graph — trace a BERT into a graph, annotate it, run passes, print, draw, export.
//
//   mase-graph --model bert-tiny --inputs input_ids,attention_mask,labels --print
//   mase-graph --model bert-tiny --inputs input_ids --draw bert.svg
//   mase-graph --model bert-tiny --pass count_dropout --pass remove_dropout --pass count_dropout --check
//   mase-graph --model bert-tiny --pass report_parameters --pass 'freeze:^bert\.embeddings'
//       --pass report_parameters
//   mase-graph --init runs/imdb --pass insert_lora --lora-rank 8 --pass report_parameters
//       --export out/
//   mase-graph --reload out/ --print --run
//   mase-graph compile --model bert-tiny --batch 2 --seq 16 --mode train --repeat 5
//   mase-graph compile --model bert-small --batch 8 --seq 128 --freeze   # weights packed once
//
// Steps, in this order: build the model (a preset with seeded HF init, or --init DIR: a
// checkpoint folder, compressed or not: quant/checkpoint.h) in eval mode (--train for
// training mode), make an example batch
// (--batch-size × --seq-len random ids, --pad positions of the second sequence padded),
// trace it with --inputs, annotate it (the common metadata pass), run each --pass in order,
// then --print / --draw / --export / --check / --run. --reload DIR starts from an exported graph
// instead (no model: model passes and --check are not available).
// `mase-graph compile` (Lab 4.1) compiles the model for one signature and prints the first-call
// split, eager vs compiled per step, what each pass bought and the memory plan
// (graph/compile_report.h); --no-pass NAME turns one pass off, --freeze packs the weights of
// an eval plan once (graph/passes/freeze_weights.h). Exit 1 if outputs differ.
// Everything is a thin layer over graph/ (trace.h, metadata.h, draw.h, export.h,
// passes/dropout.h) and models/ (parameters.h, lora.h).
// Bad flags: one line on stderr, exit 2; other errors (an erase that fails): exit 1.
#include <CLI/CLI.hpp>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include "graph/compile_report.h"
#include "graph/draw.h"
#include "graph/export.h"
#include "graph/metadata.h"
#include "graph/op_table.h"
#include "graph/passes/dce.h"
#include "graph/passes/dropout.h"
#include "graph/passes/fuse_add_norm.h"
#include "graph/passes/narrow_cls.h"
#include "graph/passes/fuse_bias_gelu.h"
#include "graph/passes/fuse_linear_gelu.h"
#include "graph/trace.h"
#include "models/checkpoint.h"
#include "models/lora.h"
#include "models/parameters.h"
#include "quant/checkpoint.h"
#include "runtime/atomic_file.h"
#include "search/curve_plot.h"
#include "tools/cli.h"

using namespace mase;

namespace {

struct Options {
  std::string model = "bert-tiny", init, reload;
  int64_t vocab_size = 30522;
  uint64_t seed = 0;
  std::vector<std::string> inputs{"input_ids"};
  int64_t batch_size = 2, seq_len = 16, pad = 0;
  bool train = false, print = false, check = false, run = false;
  std::vector<std::string> passes;
  nn::LoraConfig lora;
  int report_depth = -1;
  std::string draw, export_dir;
};

const char* kPasses =
    "count_dropout, remove_dropout, fuse_bias_gelu, fuse_linear_gelu, fuse_add_norm, "
    "narrow_cls, dce, "
    "report_parameters, freeze:REGEX, unfreeze:REGEX, insert_lora, fuse_lora, erase:NODE";

// "name" or "name:argument"
std::pair<std::string, std::string> split_pass(const std::string& p) {
  const auto colon = p.find(':');
  if (colon == std::string::npos) return {p, ""};
  return {p.substr(0, colon), p.substr(colon + 1)};
}

std::string float_list(const Tensor& t) {
  std::string s;
  for (float v : t.to_vector<float>()) s += (s.empty() ? "" : ", ") + cat(v);
  return "[" + s + "]";
}

// Runs one pass; returns true when the model or graph changed (metadata to redo).
bool run_pass(const std::string& spec, graph::Graph& g, const Options& o, bool have_model) {
  auto [name, arg] = split_pass(spec);
  const bool model_pass = name == "report_parameters" || name == "report_trainable_parameters" ||
                          name == "freeze" || name == "unfreeze" || name == "insert_lora" ||
                          name == "fuse_lora";
  MASE_CHECK(have_model || !model_pass, ConfigError, "--pass ", name,
             " acts on the model, which a reloaded graph does not have (its modules only)");
  const bool takes_arg = name == "freeze" || name == "unfreeze" || name == "erase";
  MASE_CHECK(takes_arg == !arg.empty(), ConfigError, "--pass ", spec, ": ",
             takes_arg ? "expected name:ARGUMENT" : "this pass takes no argument");
  nn::Module& model = g.root();
  if (name == "count_dropout") {
    std::cout << graph::count_dropout(g).str();
    return false;
  }
  if (name == "remove_dropout") {
    std::cout << graph::remove_dropout(g).str();
    return true;
  }
  if (name == "fuse_bias_gelu" || name == "fuse_add_norm") {  // Lab 4: graph/compile.h
    auto r = name == "fuse_bias_gelu" ? graph::fuse_bias_gelu(g) : graph::fuse_add_norm(g);
    std::cout << r.str();
    return true;
  }
  if (name == "fuse_linear_gelu") {  // after fuse_bias_gelu; an eval pass, as narrow_cls
    MASE_CHECK(!o.train, ConfigError, "--pass fuse_linear_gelu is an eval pass: a training "
               "graph keeps linear and bias_gelu apart for recompute_gelu (drop --train)");
    std::cout << graph::fuse_linear_gelu(g).str();
    return true;
  }
  if (name == "narrow_cls") {  // Lab 4: the last layer on the [CLS] token only
    MASE_CHECK(!o.train, ConfigError, "--pass narrow_cls is an eval pass: in training a "
               "one-token dropout would draw other masks than the model's (drop --train)");
    std::cout << graph::narrow_cls(g).str();
    return true;
  }
  if (name == "dce") {
    std::cout << graph::dead_code_elimination(g).str();
    return true;
  }
  if (name == "report_parameters" || name == "report_trainable_parameters") {
    std::cout << nn::report_trainable_parameters(model).str(o.report_depth);
    return false;
  }
  if (name == "freeze" || name == "unfreeze") {
    auto r = name == "freeze" ? nn::freeze(model, arg) : nn::unfreeze(model, arg);
    std::cout << name << " '" << arg << "': " << r.str();
    return true;
  }
  if (name == "insert_lora") {
    std::cout << nn::insert_lora(model, o.lora).str();
    return true;
  }
  if (name == "fuse_lora") {
    std::cout << nn::fuse_lora(model).str();
    return true;
  }
  if (name == "erase") {
    g.erase(&g.at(arg));  // throws when the node still has users
    std::cout << "erased " << arg << "\n";
    return true;
  }
  throw ConfigError(cat("--pass ", spec, ": unknown pass (expected one of: ", kPasses, ")"));
}

// --export writes graph.json and model.safetensors into a new or empty folder, or over an
// earlier export; a folder holding anything else (a mase-train run, an HF model) is refused:
// its model.safetensors would be replaced by this graph's weights.
void check_export_folder(const std::string& dir) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(dir, ec)) return;
  MASE_CHECK(fs::is_directory(dir, ec), ConfigError, "[export] expected a folder, got ", dir,
             " (a file) (pick another --export folder)");
  for (const fs::directory_entry& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    MASE_CHECK(name == "graph.json" || name == "model.safetensors", ConfigError,
               "[export] expected an empty folder or an earlier export, got ", dir, " holding ",
               name, " (a mase-train run or a model folder? its model.safetensors would be "
               "replaced: pick another --export folder)");
  }
}

// Lab 4.1 as a figure: each timed variant's speed-up over eager fused (CPU time per step), one
// bar each, the line at 1 where a variant is no faster than eager. `path` .svg or .png, its
// numbers in `path`.dat and its gnuplot script in `path`.gp (search/curve_plot.h draws).
void plot_speedups(const graph::CompileReport& r, const std::string& path) {
  MASE_CHECK(r.times.size() > 1, ConfigError, "[plot] the report has no timed variants");
  search::BarChart chart;
  chart.title = cat(r.options.model, ", batch ", r.options.batch, ", seq ", r.options.seq, ", ",
                    r.options.train ? "train" : "eval", ", ", r.options.device,
                    ": speed-up over eager fused");
  chart.ylabel = "speed-up (CPU time per step)";
  chart.series.push_back({"speed-up", {}});
  const double eager = r.times[1].cpu_median_s;
  for (const graph::TimedVariant& t : r.times) {
    chart.categories.push_back(t.name);
    chart.series[0].values.push_back(eager / t.cpu_median_s);
  }
  chart.reference = 1;
  search::plot_bars(chart, path);
}

// A reloaded graph's example batch: its traced input shape and its word embedding's vocabulary.
data::Batch reload_example(const graph::Graph& g, const Options& o) {
  Shape ids(graph::attr_ints(g.at("input_ids").attrs, "shape"));
  MASE_CHECK(ids.size() == 2, ConfigError, "--reload: expected input_ids (B, T), got ", ids);
  int64_t vocab = o.vocab_size;
  for (const auto& [path, m] : g.root().named_modules())
    if (auto* e = dynamic_cast<nn::Embedding*>(m.get()); e && path.ends_with("word_embeddings"))
      vocab = e->num_embeddings;
  // the graph's T is fixed by its trace: --pad must leave a real token in the sequence
  MASE_CHECK(o.pad < ids[1], ConfigError, "[--reload] expected --pad below the graph's ",
             "sequence length ", ids[1], ", got ", o.pad, " (it was traced with T = ", ids[1], ")");
  return graph::example_batch(ids[0], ids[1], vocab, o.seed, o.pad);
}

int run(const Options& o) {
  std::shared_ptr<nn::BertForSequenceClassification> model;
  data::Batch example;
  graph::Graph g = [&] {
    if (!o.reload.empty()) {
      graph::Graph loaded = graph::load_graph(o.reload);
      example = reload_example(loaded, o);
      return loaded;
    }
    if (!o.init.empty()) {  // a compressed model (compression.json) comes back compressed
      model = std::filesystem::exists(std::filesystem::path(o.init) / "compression.json")
                  ? quant::load_compressed(o.init)
                  : nn::from_pretrained(o.init);
    } else {
      manual_seed(o.seed);
      model = std::make_shared<nn::BertForSequenceClassification>(
          nn::BertConfig::preset(o.model, o.vocab_size));
    }
    model->train(o.train);
    example =
        graph::example_batch(o.batch_size, o.seq_len, model->config().vocab_size, o.seed, o.pad);
    return graph::trace_bert(model, o.inputs, example);
  }();
  const graph::TensorMap in = graph::graph_inputs(g, example);
  if (model) graph::add_common_metadata(g, in);
  for (const std::string& p : o.passes)
    if (run_pass(p, g, o, model != nullptr)) graph::add_common_metadata(g, in);
  if (o.print) std::cout << graph::node_table(g);
  if (!o.draw.empty()) {
    graph::draw(g, o.draw);
    std::cout << "drew " << g.size() << " nodes to " << o.draw << "\n";
  }
  if (!o.export_dir.empty()) {
    graph::export_graph(g, o.export_dir);
    std::cout << "exported " << g.size() << " nodes to " << o.export_dir
              << "/graph.json and model.safetensors\n";
  }
  if (o.check) {
    MASE_CHECK(model != nullptr, ConfigError,
               "--check compares with the model, which --reload has not");
    auto get = [&](const char* n) { return in.count(n) ? in.at(n) : Tensor(); };
    NoGradGuard ng;
    Tensor eager =
        model
            ->forward(get("input_ids"), get("attention_mask"), get("token_type_ids"), get("labels"))
            .logits;
    Tensor traced = g.run(in).at("logits");
    double worst = 0;
    auto a = eager.to_vector<float>(), b = traced.to_vector<float>();
    for (size_t i = 0; i < a.size(); ++i) worst = std::max(worst, double(std::abs(a[i] - b[i])));
    std::cout << "check: graph logits vs eager model logits, max |difference| = " << worst << "\n";
  }
  if (o.run) {
    NoGradGuard ng;
    for (const auto& [name, t] : g.run(in))
      std::cout << name << " " << t.shape() << " = " << float_list(t) << "\n";
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "mase-graph: trace a BERT into a compute graph; annotate, print, draw, run passes, export"};
  app.footer(
      "Examples:\n"
      "  mase-graph --model bert-tiny --inputs input_ids,attention_mask,labels --print\n"
      "  mase-graph --model bert-tiny --inputs input_ids --draw bert.svg\n"
      "  mase-graph --pass count_dropout --pass remove_dropout --pass count_dropout --check\n"
      "  mase-graph --pass report_parameters --pass 'freeze:^bert\\.embeddings' --pass "
      "report_parameters\n"
      "  mase-graph --pass insert_lora --lora-rank 8 --lora-alpha 16 --pass report_parameters\n"
      "  mase-graph --inputs input_ids,attention_mask --export out/ && mase-graph --reload out/ "
      "--run\n"
      "  mase-graph --pass fuse_bias_gelu --pass fuse_add_norm --print --check\n"
      "  mase-graph --pass fuse_bias_gelu --pass fuse_linear_gelu --print --check\n"
      "  mase-graph --inputs input_ids,attention_mask --pass narrow_cls --print --check\n"
      "  mase-graph compile --model bert-tiny --batch 2 --seq 16 --mode train --repeat 5\n"
      "  mase-graph compile --model bert-small --batch 8 --seq 128 --lora-rank 8 --repeat 5\n"
      "  mase-graph compile --model bert-small --batch 8 --seq 128 --device cuda --repeat 50\n"
      "Passes (in the order given): count_dropout, remove_dropout, fuse_bias_gelu,\n"
      "  fuse_linear_gelu (after fuse_bias_gelu), fuse_add_norm, narrow_cls, dce (Lab 4:\n"
      "  docs/lab4.md), report_parameters,\n"
      "  freeze:REGEX, unfreeze:REGEX (over parameter paths), insert_lora (--lora-* flags),\n"
      "  fuse_lora, erase:NODE (fails while the node has users). Walkthrough: docs/lab0.md.");
  Options o;
  app.add_option("--model", o.model,
                 "preset: bert-tiny, bert-mini, bert-small, bert-medium, bert-base");
  app.add_option("--vocab-size", o.vocab_size, "vocabulary size of the preset")
      ->check(CLI::Range(2, 1 << 24));
  app.add_option("--init", o.init,
                 "a checkpoint folder (config.json + model.safetensors) instead of a preset; "
                 "with a compression.json (mase-train --quant/--prune/--mxint8-weights) the "
                 "quantized, pruned or MXINT8 layers come back as they were trained")
      ->check(cli::nonempty("a checkpoint folder"));
  app.add_option("--reload", o.reload, "start from a graph exported with --export")
      ->check(cli::nonempty("a folder of an --export"));
  app.add_option("--seed", o.seed, "seed of the preset's init and of the example batch")
      ->check(cli::seed_check());
  app.add_option("--inputs", o.inputs,
                 "comma-separated: input_ids[,attention_mask][,token_type_ids][,labels]")
      ->delimiter(',');
  app.add_option("--batch-size", o.batch_size, "example batch: sequences")
      ->check(CLI::Range(1, 4096));
  app.add_option("--seq-len", o.seq_len, "example batch: tokens per sequence")
      ->check(CLI::Range(1, 1 << 16));
  app.add_option("--pad", o.pad,
                 "example batch: padded positions at the end of the second sequence")
      ->check(CLI::Range(0, 1 << 20));
  app.add_flag("--train", o.train, "trace in training mode (dropout active)");
  app.add_option("--pass", o.passes,
                 std::string("a pass to run (repeatable, in order): ") + kPasses);
  app.add_option("--lora-rank", o.lora.rank, "insert_lora: rank r")->check(CLI::Range(1, 1 << 20));
  app.add_option("--lora-alpha", o.lora.alpha,
                 "insert_lora: alpha (the update is scaled by alpha/r)");
  app.add_option("--lora-dropout", o.lora.dropout, "insert_lora: dropout on the adapter's input");
  app.add_option("--lora-targets", o.lora.targets, "insert_lora: regex over module paths");
  app.add_option("--report-depth", o.report_depth, "report_parameters: deepest module level shown");
  app.add_flag("--print", o.print, "print the node table (name, kind, op, output shape, args)");
  app.add_option("--draw", o.draw,
                 "draw the graph to a .svg, .png, .pdf (via Graphviz) or .dot file")
      ->check(cli::nonempty("a file .svg, .png, .pdf or .dot"));
  app.add_option("--export", o.export_dir, "export graph.json + model.safetensors to this folder")
      ->check(cli::nonempty("a folder"));
  app.add_flag("--check", o.check, "compare the graph's logits with the eager model's");
  app.add_flag("--run", o.run, "run the graph on the example batch and print its outputs");
  graph::CompileReportOptions co;
  std::string mode = "eval";
  CLI::App* comp = app.add_subcommand(
      "compile", "compile for one input signature and compare with eager (Lab 4.1, docs/lab4.md)");
  comp->footer(  // its own, or CLI11 shows the parent's examples under `compile --help`
      "Examples:\n"
      "  mase-graph compile --model bert-tiny --batch 2 --seq 16 --mode train --repeat 5\n"
      "  mase-graph compile --model bert-small --batch 1 --seq 128 --freeze --repeat 50\n"
      "  mase-graph compile --model bert-small --batch 8 --seq 128 --no-pass narrow_cls\n"
      "  mase-graph compile --model bert-small --batch 32 --seq 256 --precision bf16 --freeze\n"
      "  mase-graph compile --model bert-small --batch 8 --seq 128 --lora-rank 8 --repeat 5\n"
      "  mase-graph compile --model bert-small --batch 8 --seq 128 --device cuda --repeat 50\n"
      "The report: first call (trace, passes, plan, first run) against steady state, eager\n"
      "against compiled, and what each pass bought. Walkthrough: docs/lab4.md.");
  comp->add_option("--model", co.model, "preset: bert-tiny, bert-mini, bert-small, bert-medium, bert-base");
  comp->add_option("--batch", co.batch, "sequences per batch")->check(CLI::Range(1, 4096));
  comp->add_option("--seq", co.seq, "tokens per sequence")->check(CLI::Range(1, 512));
  comp->add_option("--mode", mode, "eval (forward, no grad) or train (forward + backward)")
      ->check(CLI::IsMember({"eval", "train"}));
  comp->add_option("--no-pass", co.disabled,
                   "turn a pass off (repeatable): remove_dropout, fold_lora, fuse_bias_gelu, "
                   "fuse_linear_gelu, fuse_add_norm, fold_mxint8, narrow_cls, recompute_gelu, dce, freeze_weights, "
                   "memory_plan, arena, cuda_graph")
      ->check(CLI::IsMember(graph::compile_pass_names()));
  comp->add_flag("--freeze", co.freeze,
                 "eval on the CPU: the weights will not change, so pack every Linear weight "
                 "once for oneDNN (pass freeze_weights; outputs within fp32 rounding)");
  comp->add_flag("--mxint8-weights", co.mxint8_weights,
                 "store every Linear's weight as MXINT8 first (as mase-train --mxint8-weights)");
  comp->add_option("--lora-rank", co.lora_rank,
                   "LoRA adapters of this rank on the encoder's Linears first (eval: fold_lora)")
      ->check(CLI::Range(0, 1 << 20));
  comp->add_option("--device", co.device, "cpu or cuda[:N] (CUDA eval: the cuda_graph step)")
      ->capture_default_str();
  comp->add_option("--precision", co.precision,
                   "GEMM arithmetic: fp32 (default), bf16 (bf16 operands, fp32 sums: on AMX "
                   "tiles where the CPU has them) or tf32 (CUDA only)")
      ->check(CLI::IsMember({"fp32", "bf16", "tf32"}));
  comp->add_option("--repeat", co.repeat, "timed steps per variant (median)")
      ->check(CLI::Range(1, 10000));
  std::string csv;
  comp->add_option("--csv", csv, "also write the report's numbers as CSV (first call, passes, "
                   "steps, memory) to this file")
      ->check(cli::file_to_write("a CSV file"));
  std::string plot;
  comp->add_option("--plot", plot, "also draw each variant's speed-up over eager as a bar chart "
                   "(.svg or .png; its numbers and gnuplot script beside it)")
      ->check(cli::file_to_write("a file .svg or .png"));
  comp->add_option("--seed", co.seed, "seed of the model's init and of the batch")
      ->check(cli::seed_check());
  comp->add_option("--threads", co.threads, "threads (default: the runtime's)")
      ->check(CLI::Range(1, 256));
  if (auto status = cli::parse(app, "mase-graph", argc, argv)) return *status;
  if (comp->parsed())
    return cli::run("mase-graph", [&] {
      if (!plot.empty()) search::check_plot_path(plot, "--plot");  // before the slow part
      const std::string flag = cli::flag_outside(app, {});  // given before the word "compile"
      MASE_CHECK(flag.empty(), ConfigError, flag, " is a flag of mase-graph itself, not of "
                 "compile (put compile's flags after it; see mase-graph compile --help)");
      MASE_CHECK(!co.freeze || mode == "eval", ConfigError, "--freeze packs the weights for "
                 "eval (training changes them every step); drop it or use --mode eval");
      co.train = mode == "train";
      co.progress = true;
      const graph::CompileReport r = graph::compile_report(co);
      std::cout << r.str();
      if (!csv.empty()) {  // the same numbers for a table or a plot
        write_text_atomic(csv, r.csv());
        std::cout << "csv: " << csv << "\n";
      }
      if (!plot.empty()) {
        plot_speedups(r, plot);
        std::cout << "plot: " << plot << " (data " << plot << ".dat, script " << plot << ".gp)\n";
      }
      return r.outputs_equal ? 0 : 1;
    });
  return cli::run("mase-graph", [&] {
    // (with --reload the graph's traced T bounds --pad: reload_example checks it)
    MASE_CHECK(!o.reload.empty() || o.pad < o.seq_len, ConfigError, "--pad ", o.pad,
               " must be below --seq-len ", o.seq_len);
    MASE_CHECK(o.reload.empty() || o.init.empty(), ConfigError,
               "--reload and --init exclude each other");
    // refused before any work: checks that need only the flags and the file system
    MASE_CHECK(!o.check || o.reload.empty(), ConfigError,
               "--check compares with the model, which --reload has not");
    MASE_CHECK(!o.check || !o.train, ConfigError,
               "[check] expected eval mode, got --train (the eager model's dropout draws other "
               "masks than the graph's run: the difference would be noise)");
    if (!o.export_dir.empty()) check_export_folder(o.export_dir);
    // flags a mode does not read would be silently ignored
    if (!o.reload.empty())  // the reloaded graph brings its model and its traced input shape
      for (const char* f : {"--model", "--vocab-size", "--seq-len", "--batch-size", "--inputs",
                            "--train"})  // (--pad and --seed still shape the example batch)
        MASE_CHECK(app.count(f) == 0, ConfigError, f, " has no effect with --reload (the "
                   "exported graph brings its modules and its traced input shape; drop it)");
    const bool lora_pass =
        std::find(o.passes.begin(), o.passes.end(), "insert_lora") != o.passes.end();
    for (const char* f : {"--lora-rank", "--lora-alpha", "--lora-dropout", "--lora-targets"})
      MASE_CHECK(app.count(f) == 0 || lora_pass, ConfigError, f, " sets the adapters of --pass "
                 "insert_lora, which is not given (add it, or drop ", f, ")");
    const bool report_pass =
        std::find(o.passes.begin(), o.passes.end(), "report_parameters") != o.passes.end() ||
        std::find(o.passes.begin(), o.passes.end(), "report_trainable_parameters") != o.passes.end();
    MASE_CHECK(app.count("--report-depth") == 0 || report_pass, ConfigError, "--report-depth "
               "sets the depth of --pass report_parameters, which is not given (add it, or drop "
               "--report-depth)");
    if (!o.init.empty())  // the checkpoint brings its architecture and vocabulary
      for (const char* f : {"--model", "--vocab-size"})
        MASE_CHECK(app.count(f) == 0, ConfigError, f, " has no effect with --init (the "
                   "checkpoint's config.json brings the architecture; drop it)");
    MASE_CHECK(o.print || o.check || o.run || !o.draw.empty() || !o.export_dir.empty() ||
                   !o.passes.empty(),
               ConfigError, "expected something to do: --print, --draw FILE, --export DIR, "
               "--check, --run or --pass NAME (or the compile command; see --help)");
    return run(o);
  });
}
