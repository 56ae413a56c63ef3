// tests/search/test_objectives.cpp — the architecture objective on the made-up IMDb of
// tests/train/trainer_fixture.h, and the running-best plot.
// Oracles: the trial's saved config.json and safetensors (the architecture really changed),
// BERT's parameter count by hand, final.json (the value is the run's test accuracy), hand-made
// trial lists for the running best.
#include <doctest/doctest.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include "search/objectives.h"
#include "search/plot.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::search;
using mase::test::read_json_file;
using mase::test::TrainFixture;
namespace fs = std::filesystem;

namespace {
// BERT for sequence classification with vocabulary V, positions P, hidden H, intermediate I,
// L layers, 2 labels: embeddings (word, position, token type, LayerNorm), per layer Q K V and
// the attention output (H x H + H each), two LayerNorms, the FFN (H x I + I, I x H + H); the
// pooler (H x H + H) and the classifier (2 H + 2).
int64_t bert_params(int64_t V, int64_t P, int64_t H, int64_t I, int64_t L) {
  int64_t emb = V * H + P * H + 2 * H + 2 * H;
  int64_t layer = 4 * (H * H + H) + 2 * H + (H * I + I) + (I * H + H) + 2 * H;
  return emb + L * layer + (H * H + H) + (2 * H + 2);
}
}  // namespace

TEST_CASE("architecture objective: the trial's architecture is trained and its accuracy returned") {
  TrainFixture fx;
  train::TrainConfig base = fx.config("unused");
  base.epochs = 1;
  base.ckpt_every = 0;
  Space space;
  space.categorical("num_layers", {"1", "2"})
      .categorical("hidden_size", {"16", "24"})
      .integer("num_heads", 2, 4, 2)
      .categorical("intermediate_size", {"40"});
  Objective f = architecture_objective(space, base, fx.dir.path / "trials");

  // num_layers 2 (index 1), hidden 24 (index 1), heads 4, intermediate 40
  Params p(space, {{"num_layers", 1}, {"hidden_size", 1}, {"num_heads", 4}, {"intermediate_size", 0}});
  Outcome o = f(p, 3);
  const fs::path run = fx.dir.path / "trials" / "trial-0003";
  auto cfg = read_json_file(run / "config.json");
  CHECK(cfg["num_hidden_layers"] == 2);
  CHECK(cfg["hidden_size"] == 24);
  CHECK(cfg["num_attention_heads"] == 4);
  CHECK(cfg["intermediate_size"] == 40);
  auto final_json = read_json_file(run / "final.json");
  CHECK(o.value == final_json["test_accuracy"].get<double>());
  CHECK(o.state == TrialState::complete);
  CHECK(o.attrs.at("run") == run.string());
  CHECK(std::stoll(o.attrs.at("parameters")) == bert_params(fx.vocab_size, 64, 24, 40, 2));
  CHECK(std::stod(o.attrs.at("test_loss")) == doctest::Approx(final_json["test_loss"].get<double>()));

  // hidden 16 with 4 heads is fine; hidden 24 with 2 heads too; an architecture BertConfig
  // refuses is an error of that trial, not a changed model.
  Space bad;
  bad.categorical("hidden_size", {"18"}).categorical("num_heads", {"4"});
  Objective g = architecture_objective(bad, base, fx.dir.path / "bad");
  CHECK_THROWS_WITH_AS(g(Params(bad, {{"hidden_size", 0}, {"num_heads", 0}}), 0),
                       doctest::Contains("divisible"), ConfigError);
}

TEST_CASE("architecture objective: spaces and configs it cannot serve are refused at once") {
  TrainFixture fx;
  train::TrainConfig base = fx.config("unused");
  Space s;
  s.categorical("dropout", {"0.1"});
  CHECK_THROWS_WITH_AS(architecture_objective(s, base, fx.dir.path),
                       doctest::Contains("no parameter 'dropout'"), ConfigError);
  Space r;
  r.real("hidden_size", 16, 64);
  CHECK_THROWS_AS(architecture_objective(r, base, fx.dir.path), ConfigError);
  Space words;
  words.categorical("num_layers", {"two"});
  Objective f = architecture_objective(words, base, fx.dir.path / "w");
  CHECK_THROWS_WITH_AS(f(Params(words, {{"num_layers", 0}}), 0),
                       doctest::Contains("expected integer choices"), ConfigError);
  base.init = "somewhere";
  CHECK_THROWS_AS(architecture_objective(lab2_space(), base, fx.dir.path), ConfigError);
}

TEST_CASE("lab 2 space: the tutorial's choices, 3 x 4 x 5 x 5 = 300 points") {
  Space s = lab2_space();
  CHECK(s.grid_size() == 300);
  CHECK(s.at("num_heads").choices == std::vector<std::string>{"2", "4", "8", "16"});
}

namespace {
TrialRecord rec(int64_t n, TrialState s, double v) {
  TrialRecord r;
  r.trial.number = n;
  r.trial.state = s;
  r.trial.value = v;
  return r;
}
}  // namespace

TEST_CASE("plot: running best by hand, a gnuplot SVG with its data and script, and a PNG") {
  std::vector<TrialRecord> t = {rec(0, TrialState::failed, 9), rec(1, TrialState::complete, 0.5),
                                rec(2, TrialState::complete, 0.4), rec(3, TrialState::running, 0),
                                rec(4, TrialState::complete, 0.7)};
  auto up = running_best(t, Direction::maximize);
  CHECK(std::isnan(up[0]));  // a failed trial's value does not count
  CHECK(up[1] == 0.5);
  CHECK(up[2] == 0.5);
  CHECK(up[3] == 0.5);
  CHECK(up[4] == 0.7);
  auto down = running_best(t, Direction::minimize);
  CHECK(down[2] == 0.4);
  CHECK(down[4] == 0.4);

  mase::test::TempDir dir;
  const std::string svg = (dir.path / "best.svg").string();
  plot_running_best({{"random", t}, {"tpe", {rec(0, TrialState::complete, 0.6)}}},
                    Direction::maximize, "accuracy", svg);
  std::ifstream in(svg);
  std::stringstream all;
  all << in.rdbuf();
  CHECK(all.str().find("<svg") != std::string::npos);
  CHECK(all.str().find("tpe") != std::string::npos);  // the legend
  std::ifstream d(svg + ".dat");
  std::stringstream dat;
  dat << d.rdbuf();
  CHECK(dat.str() == "# random: trial best_so_far\n1 0.5\n2 0.5\n3 0.5\n4 0.7\n\n\n"
                     "# tpe: trial best_so_far\n0 0.6\n\n\n");
  CHECK_THROWS_AS(plot_running_best({}, Direction::maximize, "a", svg), ConfigError);
  // the extension picks the terminal: a .png is a PNG (it used to hold SVG text), others refused
  const std::string png = (dir.path / "best.png").string();
  plot_running_best({{"random", t}}, Direction::maximize, "accuracy", png);
  std::ifstream p(png, std::ios::binary);
  std::string magic(4, '\0');
  p.read(magic.data(), 4);
  CHECK(magic == "\x89PNG");
  CHECK_THROWS_AS(plot_running_best({{"random", t}}, Direction::maximize, "a",
                                    (dir.path / "best.jpeg").string()),
                  ConfigError);
  std::ifstream g(svg + ".gp");
  std::stringstream gp;
  gp << g.rdbuf();
  CHECK(gp.str().find("dashtype 2") != std::string::npos);  // equal curves stay apart
  CHECK(gp.str().find("set xtics 1") != std::string::npos);  // whole-number trial ticks
}

TEST_CASE("architecture objective with a pruner: stopped at its first evaluation below the bar") {
  // A completed trial set by hand reached accuracy 1.0 at every step a real trial evaluates
  // (so the median there is 1.0): the trial below it is pruned at its first evaluation, its
  // accuracy there its value; the run folder has no final.json. (The lab commands' objective
  // has the same case: tests/search/test_lab_objectives.cpp.)
  TrainFixture fx;
  train::TrainConfig base = fx.config("unused");
  base.epochs.reset();
  base.max_steps = 6;
  base.eval_every = 2;
  base.ckpt_every = 0;
  Space space;
  space.categorical("num_layers", {"1"}).categorical("hidden_size", {"16"});
  Study study = Study::open((fx.dir.path / "p.db").string(), "p", space, Direction::maximize,
                            make_sampler("random", 0), 0);
  auto done = study.ask();
  REQUIRE(done);
  for (int64_t step : {2, 4}) study.report(done->number, step, 1.0);
  study.tell(done->number, TrialState::complete, 1.0);
  MedianPruner mp;
  mp.n_startup_trials = 1;
  Objective f = architecture_objective(space, base, fx.dir.path / "trials", nullptr,
                                       std::make_shared<const Pruning>(study, mp));
  auto t = study.ask();
  REQUIRE(t);
  const Outcome o = f(Params(space, t->values), t->number);
  CHECK(o.state == TrialState::pruned);
  CHECK(o.attrs.at("pruned_at_step") == "2");
  const TrialRecord r = study.trials().back();
  REQUIRE(r.intermediate.size() == 1);
  CHECK(o.value == r.intermediate.at(2));
  CHECK_FALSE(fs::exists(fs::path(o.attrs.at("run")) / "final.json"));
  base.eval_every = 0;  // nothing to judge: refused up front
  CHECK_THROWS_AS(architecture_objective(space, base, fx.dir.path / "q", nullptr,
                                         std::make_shared<const Pruning>(study, mp)),
                  ConfigError);
}
