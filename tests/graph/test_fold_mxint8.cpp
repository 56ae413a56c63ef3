// tests/graph/test_fold_mxint8.cpp — constant folding of MXINT8 weights
// (graph/passes/fold_mxint8.h): every MxInt8Linear becomes linear(x, constant, bias), the
// outputs and gradients equal the eager MXINT8 model's bit for bit, a budget leaves the rest
// packed, and compile runs the pass by default.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/fold_mxint8.h"
#include "quant/mxint8_linear.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

std::shared_ptr<nn::BertForSequenceClassification> mxint8_bert() {
  auto model = small_bert();
  (void)quant::mxint8_weights(*model);  // 2 x 6 encoder Linears, the pooler, the classifier
  return model;
}

}  // namespace

TEST_CASE("fold_mxint8: folds every MXINT8 weight and equals the eager model bitwise") {
  auto model = mxint8_bert();
  model->eval();
  const data::Batch b = small_batch();
  Graph g = trace_bert(model, eval_inputs(), b);
  FoldReport r = fold_mxint8(g);
  CHECK(r.folded == 14);
  CHECK(r.skipped == 0);
  CHECK(r.folded_bytes == size_t(4) * (2 * (4 * 24 * 24 + 2 * 24 * 40) + 24 * 24 + 2 * 24));
  CHECK(count_target(g, "linear") == 14);
  CHECK(g.constants().size() == 14);
  nn::fuse_kernels(*model);  // leaves the MXINT8 blocks on the reference path
  NoGradGuard ng;
  CHECK(bitwise_equal(g.run(graph_inputs(g, b)).at("logits"),
                      eager_outputs(*model, b, false).at("logits")));
}

TEST_CASE("fold_mxint8: a budget folds the first layers only") {
  auto model = mxint8_bert();
  Graph g = trace_bert(model, eval_inputs(), small_batch());
  FoldReport r = fold_mxint8(g, 3 * 24 * 24 * 4);  // room for three 24 x 24 weights
  CHECK(r.folded == 3);
  CHECK(r.skipped == 11);
  CHECK(r.str().starts_with("fold_mxint8: folded 3 MXINT8 weights"));
}

TEST_CASE("fold_mxint8: compiled training gives eager's loss and gradients") {
  auto model = mxint8_bert();
  model->train();
  const data::Batch b = small_batch();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});  // eager's bits (narrow_cls: its test)
  auto got = loss_and_grads(
      *model, [&] { return compiled(bert_inputs(train_inputs(), b)).at("loss"); });
  std::vector<std::string> ran;
  for (const PassRun& p : compiled.last().passes) ran.push_back(p.name);
  CHECK(ran == std::vector<std::string>{"fuse_bias_gelu", "fuse_add_norm", "fold_mxint8",
                                        "recompute_gelu", "dce"});
  CHECK(count_target(compiled.last().graph, "linear") == 14);
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(got, want);
}
