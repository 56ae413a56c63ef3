// train/evaluate.h — accuracy and loss on a split, test subsets, and one-text prediction.
//
// evaluate() runs the model in eval mode (no dropout) and without autograd over every review
// of a split, in batches sorted by length (so almost nothing is spent on padding; the order
// does not change the result beyond float rounding of the loss sum), and returns
//   loss      = Σ_i −log p(y_i | x_i) / N   (the mean cross-entropy over reviews, not batches)
//   accuracy  = #{i : argmax_c logits_ic = y_i} / N
// The mode the model was in is restored afterwards.
// With `on_batch`, each batch's own score is handed over as it is done (a pruner judging the
// evaluation as it goes: search/wilcoxon.h); `batch_order_seed` visits the batches in a shuffled
// order (the same batches, so the same result up to float rounding of the loss sum), so the
// first ones are a fair sample of the split rather than its shortest reviews.
//
// Read next: train/trainer.h (when evaluations happen).
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "data/batch.h"
#include "data/tokenizer.h"
#include "models/bert.h"
#include "train/forward.h"

namespace mase::train {

// One batch's share of an evaluation.
struct BatchScore {
  int64_t examples = 0, correct = 0;
  double loss_sum = 0;  // Σ −log p(y | x) over its reviews
  double accuracy() const { return static_cast<double>(correct) / static_cast<double>(examples); }
};
// Called with the batch's index (in the length-sorted order, whatever the visiting order) and
// its score; may throw to end the evaluation there (the model's mode is restored).
using BatchHook = std::function<void(int64_t batch, const BatchScore& score)>;

struct EvalOptions {
  int64_t batch_size = 64;
  int64_t max_len = 256;
  int64_t pad_multiple = 1;  // each batch's length rounded up to a multiple of this (batch.h)
  int32_t pad_id = 0;
  Device device = Device::cpu();
  Forward forward;  // the model call (train/forward.h); empty: the eager model.forward
  BatchHook on_batch;             // empty: none
  uint64_t batch_order_seed = 0;  // 0: the batches in order; else shuffled by this seed
};

struct EvalResult {
  double loss = 0, accuracy = 0;
  int64_t examples = 0, tokens = 0;  // tokens: real (not padding) tokens read
  double seconds = 0;
};

EvalResult evaluate(nn::BertForSequenceClassification& model, const data::TokenizedSplit& split,
                    const EvalOptions& opt);

// `n` reviews of `split` chosen by a seeded permutation, half of each label (n/2 and n − n/2,
// the larger share to label 1 when n is odd), kept in their original order: the same subset
// for the same (n, seed). n >= size: the whole split. A label with too few reviews gives all
// it has and the other label fills the rest.
data::TokenizedSplit balanced_subset(const data::TokenizedSplit& split, int64_t n, uint64_t seed);


struct Prediction {
  int32_t label = 0;               // argmax: 1 = positive, 0 = negative (IMDb)
  double probability = 0;          // softmax probability of `label`
  std::vector<double> probs;       // of every label
  std::vector<float> logits;       // the model's raw outputs, as computed (f32)
  int64_t tokens = 0;              // ids the model saw ([CLS] and [SEP] included)
};

// Tokenizes `text`, truncates it as the batches do (first max_len − 1 ids, then [SEP]) and
// returns the model's prediction.
Prediction predict(nn::BertForSequenceClassification& model, const data::Tokenizer& tokenizer,
                   const std::string& text, int64_t max_len, Device device = Device::cpu());

// "" unless `accuracy` is at chance (0.50 ± 0.02) on a balanced test set (positives 45–55%):
// then a warning that the budget (`steps` optimizer steps) was too small to learn anything.
std::string chance_level_warning(double accuracy, double positive_fraction, int64_t steps);

}  // namespace mase::train
