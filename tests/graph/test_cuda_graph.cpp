// tests/graph/test_cuda_graph.cpp — the "cuda_graph" step of graph::compile
// (graph/cuda_graph_plan.h, runtime/cuda_graph.h). On a GPU: bert-tiny eval is captured on its
// third call, later calls are one launch each, the logits follow NEW inputs (they are copied
// in) and equal the eager fused model's; a kept output survives the next launch. Without a GPU
// those cases are skipped (visibly); what runs everywhere: capture refuses a CPU device, and a
// CPU plan never tries it. And the other way round: a compiled TRAINING plan inside the CUDA
// graph of mase-train's whole step (train/graph_step.h, --compile --cuda-graphs), on a GPU.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/compile_report.h"
#include "runtime/cuda_graph.h"
#include "runtime/random.h"
#include "train/graph_step.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

TEST_CASE("cuda_graph: capture refuses a CPU device and a CPU plan never captures") {
  CHECK_THROWS_AS((void)CudaGraph(Device::cpu()), DeviceError);
  auto model = small_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  for (int i = 0; i < 4; ++i) compiled(bert_inputs(eval_inputs(), small_batch()));
  CHECK(compiled.graph_launches() == 0);
  CHECK(compiled.last().captured == nullptr);
  CHECK(compiled.last().cuda_graph_note.empty());
}

TEST_CASE("cuda_graph: the prologue is BERT's embeddings and mask, or all of it with a loss") {
  auto model = tiny_bert();
  model->eval();
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  auto prologue_of = [&](const std::vector<std::string>& names) {
    compiled(bert_inputs(names, tiny_batch()));
    const CompiledGraph& cg = compiled.last();
    size_t prologue = 0;
    for (size_t i = 0; i < cg.plan.steps(); ++i)
      if (reads_on_host(cg.graph, cg.plan.node(i))) prologue = i + 1;
    return std::pair{prologue, cg.plan.steps()};
  };
  const auto [eval_prologue, eval_steps] = prologue_of(eval_inputs());
  CHECK(eval_prologue >= 3);                // word and position embeddings, the mask
  CHECK(5 * eval_prologue < eval_steps);    // the encoder is captured
  const auto [loss_prologue, loss_steps] = prologue_of(train_inputs());
  CHECK(2 * loss_prologue > loss_steps);    // cross_entropy reads the labels at the end
}

TEST_CASE("cuda_graph: bert-tiny eval on a GPU replays as one launch and equals eager") {
  if (!have_gpu()) return;
  auto model = tiny_bert();
  model->eval();
  model->to(Device::cuda(0));
  Compiled compiled = compile_bert(model);
  NoGradGuard ng;
  const data::Batch b1 = data::to_device(tiny_batch(3), Device::cuda(0));
  const data::Batch b2 = data::to_device(tiny_batch(4), Device::cuda(0));
  for (int i = 0; i < 3; ++i) compiled(bert_inputs(eval_inputs(), b1));  // compile, record, capture
  const CompiledGraph& cg = compiled.last();
  INFO("capture note: ", cg.cuda_graph_note);
  REQUIRE(cg.captured != nullptr);
  CHECK(cg.captured->graph->kernels() > 20);
  CHECK(compiled.graph_launches() == 1);
  Tensor y1 = compiled(bert_inputs(eval_inputs(), b1)).at("logits");
  Tensor y2 = compiled(bert_inputs(eval_inputs(), b2)).at("logits");  // new values copied in
  CHECK(compiled.graph_launches() == 3);
  CHECK(compiled.compiles() == 1);
  nn::fuse_kernels(*model);
  const Tensor e1 = eager_outputs(*model, b1, false).at("logits");
  const Tensor e2 = eager_outputs(*model, b2, false).at("logits");
  CHECK(max_abs_diff(y1, e1) <= 1e-5);  // y1 kept across the launch that made y2
  CHECK(max_abs_diff(y2, e2) <= 1e-5);
  CHECK(max_abs_diff(e1, e2) > 1e-3);   // the two batches do give other logits
}

TEST_CASE("cuda_graph: a training step on a GPU is not captured (autograd) and equals eager") {
  if (!have_gpu()) return;
  auto model = tiny_bert();
  model->train();
  model->to(Device::cuda(0));
  Compiled compiled = compile_bert(model);
  const data::Batch b = data::to_device(tiny_batch(), Device::cuda(0));
  std::map<std::string, Tensor> got;
  for (int i = 0; i < 3; ++i)
    got = loss_and_grads(*model,
                         [&] { return compiled(bert_inputs(train_inputs(), b)).at("loss"); });
  CHECK(compiled.graph_launches() == 0);
  CHECK(compiled.arena_runs() == 0);
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  CHECK(max_abs_diff(got.at("loss"), want.at("loss")) <= 1e-5);
}

// mase-graph compile --device cuda (graph/compile_report.cpp): the report compares the compiled
// and eager outputs bit for bit on the host and measures each step's peak on the GPU's own
// allocator (the first GPU run crashed in the comparison and read the CPU's peak: 0 MB).
TEST_CASE("cuda_graph: compile_report on a GPU compares on the host and measures the GPU's peak") {
  if (!have_gpu()) return;
  for (bool train : {false, true}) {
    CAPTURE(train);
    CompileReportOptions o;
    o.device = "cuda";
    o.train = train;
    o.repeat = 2;
    o.batch = 4;
    o.seq = 32;
    const CompileReport r = compile_report(o);
    CHECK(r.outputs_equal);
    CHECK(r.eager_peak_bytes > 0);
    if (!train) CHECK(r.cuda_graph.find("captured as") != std::string::npos);
  }
}

TEST_CASE("cuda_graph: a compiled training plan inside the captured step (--compile --cuda-graphs)") {
  if (!have_gpu()) return;
  // the same 4 steps of one shape, uncaptured through the compiled plan (a), and through
  // GraphStep with that plan as its forward (b): 2 warm-up steps (the first compiles), then a
  // capture of the plan's replay with backward, clip and AdamW, and a replay
  struct Run {  // bert-tiny on the GPU, unfused (the trace must see the unfused model), AdamW
    std::shared_ptr<nn::BertForSequenceClassification> model = tiny_bert();
    std::unique_ptr<train::AdamW> opt;
    std::shared_ptr<Compiled> compiled;
    Run() {
      model->to(Device::cuda());
      model->train();
      opt = std::make_unique<train::AdamW>(model->named_parameters(), train::AdamWOptions{.lr = 1e-3});
      compiled = std::make_shared<Compiled>(compile_bert(model));
    }
  };
  Run plain, graphed;
  Tensor clip_state;
  train::GraphStep gs(*graphed.model, *graphed.opt, Device::cuda(), 1.0, /*warmup=*/2);
  gs.set_forward(compiled_forward(graphed.compiled));
  const train::Forward fa = compiled_forward(plain.compiled);
  for (int i = 0; i < 4; ++i) {
    data::Batch x = tiny_batch(30 + i);
    x.token_type_ids = Tensor::zeros(x.input_ids.shape(), DType::i32);
    const Generator g0 = default_generator();
    const train::StepResult a = train::train_step(*plain.model, *plain.opt, x, Device::cuda(), 1.0, clip_state, fa);
    default_generator() = g0;
    const train::StepResult b = gs.step(x);
    INFO("step " << i);
    CHECK(b.loss == doctest::Approx(a.loss).epsilon(1e-6));
    CHECK(b.grad_norm == doctest::Approx(a.grad_norm).epsilon(1e-5));
  }
  CHECK(gs.stats().capture_error == "");
  CHECK(gs.stats().captures == 1);
  CHECK(gs.stats().replays == 1);
  CHECK(graphed.compiled->compiles() == 1);  // compiled once, in the first warm-up step
  const auto pa = plain.model->named_parameters(), pb = graphed.model->named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    check_close(pb[i].second.detach().to(Device::cpu()), pa[i].second.detach().to(Device::cpu()), 1e-6, 1e-5);
  }
}
