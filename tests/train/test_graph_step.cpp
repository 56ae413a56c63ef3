// tests/train/test_graph_step.cpp — the training step as a CUDA graph (train/graph_step.h):
// replays compute what uncaptured steps compute (same losses, norms and weights, with dropout
// on), and every step after the warm-up of a shape is a replay. GPU only: skipped visibly here.
#include "helpers.h"
#include "models/fusion.h"
#include "runtime/random.h"
#include "train/graph_step.h"

using namespace mase;
using namespace mase::train;
using mase::test::check_close;

namespace {

struct Run {
  std::shared_ptr<nn::BertForSequenceClassification> model;
  std::unique_ptr<AdamW> opt;
  explicit Run() {
    nn::BertConfig cfg = nn::BertConfig::preset("bert-tiny", 100);
    manual_seed(0);
    model = std::make_shared<nn::BertForSequenceClassification>(cfg);
    nn::fuse_kernels(*model);
    model->to(Device::cuda());
    model->train();
    opt = std::make_unique<AdamW>(model->named_parameters(), AdamWOptions{.lr = 1e-3});
  }
};

data::Batch batch_of(int64_t B, int64_t T, uint64_t seed) {
  std::vector<int32_t> ids(B * T), labels(B);
  for (int64_t i = 0; i < B * T; ++i) ids[i] = 1 + static_cast<int32_t>(philox_word(seed, 0, i) % 99);
  for (int64_t b = 0; b < B; ++b) labels[b] = static_cast<int32_t>(philox_word(seed, 1, b) & 1);
  data::Batch x;
  x.input_ids = Tensor::from(ids, {B, T});
  x.attention_mask = Tensor::ones({B, T}, DType::i32);
  x.token_type_ids = Tensor::zeros({B, T}, DType::i32);
  x.labels = Tensor::from(labels, {B});
  x.real_tokens = B * T;
  return x;
}

}  // namespace

TEST_CASE("graph step: replays == uncaptured steps (6 steps, two shapes, dropout on)") {
  if (!test::have_gpu()) return;
  Run eager, graphed;
  Tensor clip_state;
  GraphStep gs(*graphed.model, *graphed.opt, Device::cuda(), 1.0, /*warmup=*/2);
  // shapes: 4 steps of (4, 16) — 2 warm-up, 1 capture + replay, 1 replay — then 2 of (2, 8)
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{4, 16}, {4, 16}, {4, 16}, {4, 16},
                                                           {2, 8},  {2, 8}};
  // the generators of the two runs must draw the same masks: one default generator, so
  // each step of the two runs starts from the same (seed, offset)
  for (size_t i = 0; i < shapes.size(); ++i) {
    const data::Batch x = batch_of(shapes[i].first, shapes[i].second, 10 + i);
    const Generator g0 = default_generator();
    const StepResult a = train_step(*eager.model, *eager.opt, x, Device::cuda(), 1.0, clip_state);
    const Generator g1 = default_generator();
    default_generator() = g0;
    const StepResult b = gs.step(x);
    INFO("step " << i);
    CHECK(default_generator().offset == g1.offset);  // the replay advanced it as the step did
    // the same kernels on the same data and masks; cuBLAS may pick other algorithms under
    // capture, so not asserted bit for bit — a different dropout mask would miss by ~1e-2
    CHECK(b.loss == doctest::Approx(a.loss).epsilon(1e-6));
    CHECK(b.grad_norm == doctest::Approx(a.grad_norm).epsilon(1e-5));
  }
  CHECK(gs.stats().captures == 1);
  CHECK(gs.stats().replays == 2);
  CHECK(gs.stats().eager == 4);      // 2 warm-up steps of each shape
  CHECK(gs.stats().kernels > 50);
  const auto pa = eager.model->named_parameters(), pb = graphed.model->named_parameters();
  for (size_t i = 0; i < pa.size(); ++i) {
    INFO(pa[i].first);
    check_close(pb[i].second.detach().to(Device::cpu()), pa[i].second.detach().to(Device::cpu()), 1e-6, 1e-5);
  }
  CHECK(graphed.opt->step_count(pa[0].first) == 6);
}

TEST_CASE("graph step: on the CPU every step is the uncaptured step") {
  nn::BertConfig cfg = nn::BertConfig::preset("bert-tiny", 100);
  manual_seed(0);
  auto a = std::make_shared<nn::BertForSequenceClassification>(cfg);
  manual_seed(0);
  auto b = std::make_shared<nn::BertForSequenceClassification>(cfg);
  a->train();
  b->train();
  AdamW oa(a->named_parameters(), AdamWOptions{.lr = 1e-3}), ob(b->named_parameters(), AdamWOptions{.lr = 1e-3});
  GraphStep gs(*b, ob, Device::cpu(), 1.0);
  Tensor clip_state;
  for (int i = 0; i < 4; ++i) {
    const data::Batch x = batch_of(2, 8, 20 + i);
    const Generator g0 = default_generator();
    const StepResult r = train_step(*a, oa, x, Device::cpu(), 1.0, clip_state);
    default_generator() = g0;
    const StepResult s = gs.step(x);
    CHECK(s.loss == r.loss);  // the same function on the same data: bit for bit
    CHECK(s.grad_norm == r.grad_norm);
  }
  CHECK(gs.stats().eager == 4);
  CHECK(gs.stats().captures == 0);
  CHECK(gs.stats().capture_error.empty());
  // a forward given to the step (a compiled plan under --compile --cuda-graphs) is the one
  // every step calls
  int calls = 0;
  gs.set_forward([&](const data::Batch& x) {
    ++calls;
    return b->forward(x.input_ids, x.attention_mask, x.token_type_ids, x.labels);
  });
  const StepResult s = gs.step(batch_of(2, 8, 40));
  CHECK(calls == 1);
  CHECK(std::isfinite(s.loss));
}
