// tests/graph/test_compile_train.cpp — mase-train --compile (train/forward.h with
// graph::compiled_forward): a bert-tiny run on the made-up IMDb of tests/train/trainer_fixture.h
// takes the same losses, evaluates the same and saves the same weights as the eager run, bit for
// bit on the CPU, with one plan per batch shape and mode; --eval-only through it likewise, and
// with --quant (the QuantizedLinears kept in the graph). With narrow_cls on (the default) the
// same within fp32 rounding.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "train/trainer_fixture.h"

using namespace mase;
using namespace mase::train;
using mase::test::TrainFixture;
using mase::test::weights_of;

namespace {

// A ForwardFactory as mase-train builds it for --compile, keeping the Compiled for the checks.
ForwardFactory compiling(std::vector<std::shared_ptr<graph::Compiled>>& keep,
                         graph::CompileOptions options = {}) {
  return [&keep, options](const std::shared_ptr<nn::BertForSequenceClassification>& m) {
    keep.push_back(std::make_shared<graph::Compiled>(graph::compile_bert(m, options)));
    return graph::compiled_forward(keep.back());
  };
}

// bert-tiny (L2 H128 A2 I512) on the fixture's vocabulary, 6 steps, an evaluation at step 3;
// bucketing on, so batches come in several lengths (one plan each).
TrainConfig tiny_run(const TrainFixture& fx, const std::string& name) {
  TrainConfig c = fx.config(name);
  c.model = "bert-tiny";
  c.max_steps = 6;
  c.eval_every = 3;
  c.lr = 1e-3;
  return c;
}

// The two runs logged six losses each, equal bit for bit.
void check_six_losses_bitwise(const TrainResult& a, const TrainResult& b) {
  REQUIRE(a.losses.size() == 6);
  REQUIRE(b.losses.size() == 6);
  for (size_t i = 0; i < 6; ++i) {
    CAPTURE(i);
    CHECK(std::memcmp(&a.losses[i], &b.losses[i], sizeof(double)) == 0);
  }
}

}  // namespace

TEST_CASE("mase-train --compile: bert-tiny takes the eager run's losses bit for bit") {
  TrainFixture fx;
  std::vector<std::shared_ptr<graph::Compiled>> compiled;
  // without narrow_cls, which changes the work (a Linear over fewer rows: next case)
  const graph::CompileOptions bitwise{{"narrow_cls"}};
  const TrainResult eager = train_new(tiny_run(fx, "eager"), fx.null);
  const TrainResult comp =
      train_new(tiny_run(fx, "compiled"), fx.null, {}, nullptr, compiling(compiled, bitwise));
  REQUIRE(eager.status == TrainStatus::completed);
  REQUIRE(comp.status == TrainStatus::completed);
  check_six_losses_bitwise(eager, comp);
  CHECK(eager.losses.front() != eager.losses.back());  // it trained: the steps differ
  CHECK(std::memcmp(&eager.eval.loss, &comp.eval.loss, sizeof(double)) == 0);
  CHECK(eager.eval.accuracy == comp.eval.accuracy);
  CHECK(weights_of(fx.run("eager") / "model.safetensors") ==
        weights_of(fx.run("compiled") / "model.safetensors"));
  // the run went through the plans: train and eval signatures, replayed
  REQUIRE(compiled.size() == 1);
  const graph::Compiled& c = *compiled[0];
  CHECK(c.compiles() >= 2);
  CHECK(c.replays() > 0);
  CHECK(c.summary().starts_with("compile: "));
  CHECK(c.summary().find(" train, ") != std::string::npos);

  // --eval-only through a compiled plan: the eager evaluation's numbers
  TrainConfig e = fx.config("unused");
  e.init = fx.run("compiled").string();
  e.vocab = "";
  e.max_len = 0;
  const EvalResult ev_eager = eval_only(e, fx.null);
  const EvalResult ev_comp = eval_only(e, fx.null, compiling(compiled, bitwise));
  CHECK(std::memcmp(&ev_eager.loss, &ev_comp.loss, sizeof(double)) == 0);
  CHECK(ev_eager.accuracy == ev_comp.accuracy);
  CHECK(compiled.size() == 2);
  CHECK(compiled[1]->compiles() >= 1);

  // PTQ through a compiled plan (--eval-only --quant … --compile): the integer Linears of the
  // eager evaluation cannot be traced, so the compiled graph keeps the QuantizedLinears (their
  // own integer path) — the eager integer evaluation's numbers within fp32 reassociation, and
  // a line that says which layers ran
  test::write_bytes(fx.dir.path / "int8.json",
                    R"({"by": "type", "default": {"config": {"name": "integer", "data_in_width": 8,
                        "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4,
                        "bias_width": 8, "bias_frac_width": 4}}})");
  e.quant = (fx.dir.path / "int8.json").string();
  const EvalResult q_eager = eval_only(e, fx.null);
  std::FILE* log = std::tmpfile();
  const EvalResult q_comp = eval_only(e, log, compiling(compiled, bitwise));
  std::rewind(log);
  std::string text(1 << 16, '\0');
  text.resize(std::fread(text.data(), 1, text.size(), log));
  std::fclose(log);
  CHECK(text.find("the compiled graph keeps its QuantizedLinears") != std::string::npos);
  CHECK(q_comp.loss == doctest::Approx(q_eager.loss).epsilon(1e-5));
  CHECK(q_comp.accuracy == q_eager.accuracy);
  CHECK(q_eager.loss != ev_eager.loss);  // quantized
}

// --pad-multiple (mase-train sets 16 with --compile): lengths rounded up to multiples of 16,
// so the fixture's lengths (up to max_len 32) make at most 2 shapes a mode, and a plan is
// replayed far more often than compiled; eager with the same padding takes the same losses bit
// for bit. Padding itself moves an evaluation only by rounding (masked positions add zeros);
// in training it also moves the dropout masks, drawn per (row, position): another trajectory.
TEST_CASE("mase-train --compile with --pad-multiple 16: 2 shapes a mode, eager's padded losses") {
  TrainFixture fx;
  std::vector<std::shared_ptr<graph::Compiled>> compiled;
  const graph::CompileOptions bitwise{{"narrow_cls"}};
  TrainConfig e16 = tiny_run(fx, "eager16"), c16 = tiny_run(fx, "compiled16");
  e16.pad_multiple = c16.pad_multiple = 16;
  const TrainResult exact = train_new(tiny_run(fx, "eager"), fx.null);
  const TrainResult eager = train_new(e16, fx.null);
  const TrainResult comp = train_new(c16, fx.null, {}, nullptr, compiling(compiled, bitwise));
  REQUIRE(comp.status == TrainStatus::completed);
  check_six_losses_bitwise(eager, comp);
  CHECK(std::memcmp(&eager.eval.loss, &comp.eval.loss, sizeof(double)) == 0);
  CHECK(eager.losses[0] != exact.losses[0]);  // the dropout masks moved with the positions
  REQUIRE(compiled.size() == 1);
  CHECK(compiled[0]->compiles() <= 4);  // lengths 16 and 32, train and eval
  CHECK(compiled[0]->replays() > compiled[0]->compiles());
  // one model evaluated with exact and with padded lengths: the same within rounding
  TrainConfig ev = fx.config("unused");
  ev.init = fx.run("eager16").string();
  ev.vocab = "";
  ev.max_len = 0;
  const EvalResult at_exact = eval_only(ev, fx.null);
  ev.pad_multiple = 16;
  const EvalResult padded = eval_only(ev, fx.null);
  CHECK(padded.loss == doctest::Approx(at_exact.loss).epsilon(1e-6));
  CHECK(padded.accuracy == at_exact.accuracy);
  CHECK(padded.tokens == at_exact.tokens);  // real tokens: padding is not counted
}

TEST_CASE("mase-train --compile: with narrow_cls the losses stay eager's within fp32 rounding") {
  TrainFixture fx;
  std::vector<std::shared_ptr<graph::Compiled>> compiled;
  const TrainResult eager = train_new(tiny_run(fx, "eager"), fx.null);
  const TrainResult comp = train_new(tiny_run(fx, "compiled"), fx.null, {}, nullptr, compiling(compiled));
  REQUIRE(comp.status == TrainStatus::completed);
  REQUIRE(comp.losses.size() == eager.losses.size());
  for (size_t i = 0; i < comp.losses.size(); ++i) {
    CAPTURE(i);
    CHECK(comp.losses[i] == doctest::Approx(eager.losses[i]).epsilon(1e-5));
  }
  CHECK(comp.eval.loss == doctest::Approx(eager.eval.loss).epsilon(1e-5));
  CHECK(comp.eval.accuracy == eager.eval.accuracy);
  // every plan of the run narrowed its last layer, training and eval alike; the last call
  // was an eval, whose plan has linear_gelu where training's has linear + bias_gelu
  REQUIRE(compiled.size() == 1);
  CHECK(compiled[0]->last().narrowed_nodes == 11);
}
