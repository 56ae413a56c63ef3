// train/evaluate.cpp — see evaluate.h.
#include "train/evaluate.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <numeric>
#include <random>

#include "autograd/engine.h"

namespace mase::train {

EvalResult evaluate(nn::BertForSequenceClassification& model, const data::TokenizedSplit& split,
                    const EvalOptions& opt) {
  // before the window size below divides by it (the Batcher checks it only after)
  MASE_CHECK(opt.batch_size >= 1, ConfigError, "[evaluate] expected batch_size >= 1, got ",
             opt.batch_size);
  const auto t0 = std::chrono::steady_clock::now();
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  data::BatchOptions bo;
  bo.batch_size = opt.batch_size;
  bo.max_len = opt.max_len;
  bo.pad_multiple = opt.pad_multiple;
  bo.pad_id = opt.pad_id;
  bo.shuffle = false;
  // one window over the whole split: every batch holds reviews of neighbouring lengths
  bo.bucket_batches = std::max<int64_t>(1, (split.size() + opt.batch_size - 1) / opt.batch_size);
  data::Batcher batches(split, bo);
  EvalResult r;
  double loss_sum = 0;
  int64_t correct = 0;
  const Forward forward = opt.forward ? opt.forward : eager_forward(model);
  std::vector<int64_t> order(static_cast<size_t>(batches.num_batches()));
  std::iota(order.begin(), order.end(), 0);
  if (opt.batch_order_seed != 0) {
    std::mt19937_64 rng(opt.batch_order_seed);
    std::shuffle(order.begin(), order.end(), rng);
  }
  // the mode comes back even when on_batch throws (a pruned trial stops here)
  struct RestoreMode {
    nn::BertForSequenceClassification& m;
    bool training;
    ~RestoreMode() { m.train(training); }
  } restore{model, was_training};
  for (const int64_t b : order) {
    data::Batch x = data::to_device(batches.batch(b), opt.device);
    nn::SequenceClassifierOutput out = forward(x);
    const int64_t B = x.labels.size(0);
    BatchScore score;
    score.examples = B;
    score.loss_sum = out.loss.item() * static_cast<double>(B);  // the batch mean back to a sum
    std::vector<float> logits = out.logits.to_vector<float>();  // (B, num_labels)
    std::vector<int32_t> labels = x.labels.to_vector<int32_t>();
    const int64_t C = out.logits.size(1);
    for (int64_t i = 0; i < B; ++i) {
      const float* row = logits.data() + i * C;
      const auto pred = std::max_element(row, row + C) - row;  // first max on ties
      score.correct += pred == labels[static_cast<size_t>(i)];
    }
    loss_sum += score.loss_sum;
    correct += score.correct;
    r.examples += B;
    r.tokens += x.real_tokens;
    if (opt.on_batch) opt.on_batch(b, score);
  }
  if (r.examples > 0) {
    r.loss = loss_sum / static_cast<double>(r.examples);
    r.accuracy = static_cast<double>(correct) / static_cast<double>(r.examples);
  }
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

data::TokenizedSplit balanced_subset(const data::TokenizedSplit& split, int64_t n, uint64_t seed) {
  if (n <= 0 || n >= split.size()) return split;
  std::vector<int64_t> by_label[2];
  for (int64_t i = 0; i < split.size(); ++i) by_label[split.labels[i] == 1 ? 1 : 0].push_back(i);
  // shares: n/2 negatives, the rest positives; a short label gives up its shortfall
  int64_t want[2] = {n / 2, n - n / 2};
  for (int l = 0; l < 2; ++l) {
    const int64_t have = static_cast<int64_t>(by_label[l].size());
    if (want[l] > have) {
      want[1 - l] += want[l] - have;
      want[l] = have;
    }
  }
  std::vector<char> keep(static_cast<size_t>(split.size()), 0);
  for (int l = 0; l < 2; ++l) {
    // a stream of its own, apart from split_validation's (data/batch.cpp)
    std::vector<int64_t> p = data::permutation(static_cast<int64_t>(by_label[l].size()), seed,
                                               (1ull << 21) + static_cast<uint64_t>(l));
    for (int64_t k = 0; k < want[l]; ++k) keep[static_cast<size_t>(by_label[l][p[k]])] = 1;
  }
  data::TokenizedSplit out;
  for (int64_t i = 0; i < split.size(); ++i) {
    if (keep[static_cast<size_t>(i)]) out.push_back(split.sequence(i), split.labels[i]);
  }
  return out;
}

Prediction predict(nn::BertForSequenceClassification& model, const data::Tokenizer& tokenizer,
                   const std::string& text, int64_t max_len, Device device) {
  MASE_CHECK(max_len >= 2, ConfigError,
             "[predict] expected max_len >= 2 (room for [CLS] and [SEP]), got ", max_len);
  std::vector<int32_t> ids = tokenizer.encode(text);
  if (static_cast<int64_t>(ids.size()) > max_len) {  // keep the start and the final [SEP]
    const int32_t sep = ids.back();
    ids.resize(static_cast<size_t>(max_len));
    ids.back() = sep;
  }
  const auto T = static_cast<int64_t>(ids.size());
  const bool was_training = model.is_training();
  model.eval();
  NoGradGuard no_grad;
  Tensor input = Tensor::from(ids, {1, T}).to(device);
  Tensor logits = model.forward(input, Tensor()).logits;  // (1, num_labels)
  model.train(was_training);
  Prediction p;
  p.logits = logits.to_vector<float>();
  std::vector<double> z(p.logits.begin(), p.logits.end());
  const double zmax = *std::max_element(z.begin(), z.end());
  double total = 0;
  for (double v : z) total += std::exp(v - zmax);
  for (double v : z) p.probs.push_back(std::exp(v - zmax) / total);
  p.label = static_cast<int32_t>(std::max_element(p.probs.begin(), p.probs.end()) - p.probs.begin());
  p.probability = p.probs[static_cast<size_t>(p.label)];
  p.tokens = T;
  return p;
}

std::string chance_level_warning(double accuracy, double positive_fraction, int64_t steps) {
  if (std::abs(accuracy - 0.5) > 0.02 || std::abs(positive_fraction - 0.5) > 0.05) return "";
  return cat("warning   test accuracy ", accuracy, " is chance level on a balanced test set: ",
             steps, " steps were too few to learn (bert-tiny at lr 1e-3 stays at chance for about "
             "100 steps of batch 32 and is learning by step 200: docs/training.md, run e1)");
}

}  // namespace mase::train
