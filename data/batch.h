// data/batch.h — from a TokenizedSplit to the tensors the trainer consumes.
//
// A Batch of B sequences padded to length T (all i32, CPU):
//   input_ids       (B, T)  ids, pad id after the end of each sequence
//   attention_mask  (B, T)  1 on real tokens, 0 on padding
//   token_type_ids  (B, T)  zeros (one segment per review)
//   labels          (B)     1 = pos, 0 = neg
// Truncation keeps the start: a sequence longer than max_len keeps its first max_len - 1
// ids and its last id ([SEP]), as HF's truncation does for a single text.
// Padding is dynamic (T = the longest sequence of the batch, at most max_len), optionally
// rounded up to a multiple of pad_multiple (HF's pad_to_multiple_of: fewer distinct shapes, for
// a compiler that specialises on them: graph::compile, CUDA graphs), or fixed (T = max_len
// always, for static shapes). The extra positions are padding like any other (mask 0).
//
// Order, a function of (seed, epoch) only:
//   no shuffle:  0, 1, 2, … cut into batches;
//   shuffle:     a seeded permutation cut into batches;
//   bucketing:   that order cut into windows of `bucket_batches` batches, each window
//                sorted by length and cut into batches, then (with shuffle) the batches
//                shuffled. Batches hold similar lengths, so little padding is computed; the
//                windows keep it random. (IMDb lengths vary 10x: bucketing saves a large
//                share of compute.)
//
// Read next: dataset.h (where the splits come from), ../train (the consumer).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "data/tokenized.h"
#include "runtime/tensor.h"

namespace mase::data {

struct Batch {
  Tensor input_ids;         // (B, T) i32
  Tensor attention_mask;    // (B, T) i32
  Tensor token_type_ids;    // (B, T) i32
  Tensor labels;            // (B) i32
  int64_t real_tokens = 0;  // sum of attention_mask: tokens that are not padding
};

// The batch with its four tensors on `device` (the batch itself on the CPU): what a training
// or evaluation step does first. real_tokens stays a host number.
Batch to_device(const Batch& b, Device device);

struct BatchOptions {
  int64_t batch_size = 32;
  int64_t max_len = 256;
  bool fixed_length = false;  // pad to max_len instead of the batch's longest sequence
  int64_t pad_multiple = 1;   // dynamic T rounded up to a multiple of this (at most max_len)
  bool shuffle = true;
  uint64_t seed = 0;
  int64_t bucket_batches = 0;  // > 0: length bucketing with windows of this many batches
  bool drop_last = false;      // drop a final batch smaller than batch_size
  int32_t pad_id = 0;          // Tokenizer::special().pad
};

class Batcher {
 public:
  // `data` must outlive the Batcher (it is read, never copied). ConfigError on bad options.
  Batcher(const TokenizedSplit& data, BatchOptions opt);

  // Chooses the order of epoch `epoch` (set_epoch(0) is done by the constructor).
  void set_epoch(int64_t epoch);
  int64_t num_batches() const { return static_cast<int64_t>(plan_.size()); }
  Batch batch(int64_t b) const;  // batch b of the current epoch
  // The sequence indices of each batch of the current epoch.
  const std::vector<std::vector<int64_t>>& plan() const { return plan_; }
  // Length of sequence i after truncation to max_len.
  int64_t length(int64_t i) const;
  // T of batch b: max_len when fixed_length, else its longest (truncated) sequence rounded up
  // to a multiple of pad_multiple, at most max_len.
  int64_t width(int64_t b) const;

 private:
  const TokenizedSplit& data_;
  BatchOptions opt_;
  std::vector<std::vector<int64_t>> plan_;
};

// A seeded permutation of 0..n-1 (Fisher-Yates on Philox words: the same on every platform
// and compiler, unlike std::shuffle). `stream` picks an independent sequence for one seed.
std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream = 0);

// Splits off a validation set: `fraction` of the reviews of EACH label (rounded), chosen by
// a seeded permutation, so both sets keep the label balance. Returns (train, validation),
// each in the original order.
std::pair<TokenizedSplit, TokenizedSplit> split_validation(const TokenizedSplit& train,
                                                           double fraction, uint64_t seed);

}  // namespace mase::data
