// tests/train/test_steady_state.cpp — a training step in steady state asks the OS for no
// memory: after warm-up steps (which create the gradients, the AdamW state and fill the
// caching allocator's free lists), every later step — forward with dropout, backward,
// clip_grad_norm, AdamW, zero_grad — is served from the cache (runtime/allocator.h), with the
// fused paths on and off. mase-bench --e2e checks the same at BERT's real sizes.
#include "helpers.h"
#include "models/bert.h"
#include "models/fusion.h"
#include "runtime/allocator.h"
#include "train/adamw.h"
#include "train/clip_grad_norm.h"

using namespace mase;

TEST_CASE("steady state: training steps of a small BERT allocate nothing from the OS") {
  for (bool fused : {true, false}) {
    INFO("fusions " << (fused ? "on" : "off"));
    nn::BertConfig c = nn::BertConfig::preset("bert-tiny", 200);
    c.max_position_embeddings = 64;
    manual_seed(0);
    auto model = std::make_shared<nn::BertForSequenceClassification>(c);
    if (fused) nn::fuse_kernels(*model);
    train::AdamW opt(model->named_parameters());
    std::vector<int32_t> ids(4 * 48);
    for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<int32_t>(1 + i % 199);
    Tensor input = Tensor::from(ids, {4, 48}), mask = Tensor::ones({4, 48}, DType::i32);
    Tensor labels = Tensor::from(std::vector<int32_t>{0, 1, 1, 0}, {4});
    auto train_step = [&] {
      Tensor loss = model->forward(input, mask, Tensor(), labels).loss;
      backward(loss);
      train::clip_grad_norm(opt, 1.0);
      opt.step();
      opt.zero_grad();
    };
    empty_cache();  // so that warm-up must get its memory from the OS: the counter is live
    const uint64_t start = allocator_stats().os_allocs;
    train_step();
    train_step();
    const uint64_t warm = allocator_stats().os_allocs;
    CHECK(warm > start);
    for (int i = 0; i < 3; ++i) train_step();
    CHECK(allocator_stats().os_allocs == warm);
  }
}
