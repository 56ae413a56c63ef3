// data/batch.cpp — batch order (shuffle, bucketing), padding and the train/validation split.
#include "data/batch.h"

#include <algorithm>

#include "runtime/error.h"
#include "runtime/random.h"

namespace mase::data {

std::vector<int64_t> permutation(int64_t n, uint64_t seed, uint64_t stream) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) p[i] = i;
  // Fisher-Yates: swap p[i] with p[j], j uniform in [0, i], for i = n-1 down to 1. A 32-bit
  // word w maps to j = floor(w * (i+1) / 2^32): bias below (i+1) / 2^32, i.e. < 1e-5 here.
  const uint64_t offset = stream << 40;  // streams 2^40 Philox blocks apart never overlap
  for (int64_t i = n - 1, k = 0; i > 0; --i, ++k) {
    uint64_t w = philox_word(seed, offset, static_cast<uint64_t>(k));
    int64_t j = static_cast<int64_t>((w * static_cast<uint64_t>(i + 1)) >> 32);
    std::swap(p[i], p[j]);
  }
  return p;
}

Batch to_device(const Batch& b, Device device) {
  if (device.is_cpu()) return b;
  Batch out = b;
  out.input_ids = b.input_ids.to(device);
  out.attention_mask = b.attention_mask.to(device);
  out.token_type_ids = b.token_type_ids.to(device);
  out.labels = b.labels.to(device);
  return out;
}

Batcher::Batcher(const TokenizedSplit& data, BatchOptions opt) : data_(data), opt_(opt) {
  MASE_CHECK(opt_.batch_size >= 1, ConfigError, "[batch] expected batch_size >= 1, got ",
             opt_.batch_size);
  MASE_CHECK(opt_.max_len >= 2, ConfigError,
             "[batch] expected max_len >= 2 (room for [CLS] and [SEP]), got ", opt_.max_len);
  MASE_CHECK(opt_.pad_multiple >= 1, ConfigError, "[batch] expected pad_multiple >= 1, got ",
             opt_.pad_multiple);
  MASE_CHECK(opt_.bucket_batches >= 0, ConfigError, "[batch] expected bucket_batches >= 0, got ",
             opt_.bucket_batches);
  set_epoch(0);
}

int64_t Batcher::length(int64_t i) const { return std::min(data_.length(i), opt_.max_len); }

int64_t Batcher::width(int64_t b) const {
  MASE_CHECK(b >= 0 && b < num_batches(), ShapeError, "[batch] expected a batch index in [0, ",
             num_batches(), "), got ", b);
  if (opt_.fixed_length) return opt_.max_len;
  int64_t T = 0;
  for (int64_t i : plan_[static_cast<size_t>(b)]) T = std::max(T, length(i));
  const int64_t m = opt_.pad_multiple;
  return std::min((T + m - 1) / m * m, opt_.max_len);
}

void Batcher::set_epoch(int64_t epoch) {
  const int64_t n = data_.size(), bs = opt_.batch_size;
  std::vector<int64_t> order;
  if (opt_.shuffle) {
    order = permutation(n, opt_.seed, 2 * static_cast<uint64_t>(epoch));
  } else {
    order.resize(static_cast<size_t>(n));
    for (int64_t i = 0; i < n; ++i) order[i] = i;
  }
  if (opt_.bucket_batches > 0) {
    const int64_t window = opt_.bucket_batches * bs;
    for (int64_t lo = 0; lo < n; lo += window) {
      auto first = order.begin() + lo, last = order.begin() + std::min(n, lo + window);
      std::stable_sort(first, last, [&](int64_t a, int64_t b) { return length(a) < length(b); });
    }
  }
  plan_.clear();
  for (int64_t lo = 0; lo < n; lo += bs) {
    int64_t hi = std::min(n, lo + bs);
    if (hi - lo < bs && opt_.drop_last) continue;
    plan_.emplace_back(order.begin() + lo, order.begin() + hi);
  }
  if (opt_.bucket_batches > 0 && opt_.shuffle) {
    std::vector<int64_t> p =
        permutation(num_batches(), opt_.seed, 2 * static_cast<uint64_t>(epoch) + 1);
    std::vector<std::vector<int64_t>> shuffled(plan_.size());
    for (size_t k = 0; k < p.size(); ++k) shuffled[k] = std::move(plan_[static_cast<size_t>(p[k])]);
    plan_ = std::move(shuffled);
  }
}

Batch Batcher::batch(int64_t b) const {
  MASE_CHECK(b >= 0 && b < num_batches(), ShapeError, "[batch] expected a batch index in [0, ",
             num_batches(), "), got ", b);
  const std::vector<int64_t>& rows = plan_[static_cast<size_t>(b)];
  const int64_t B = static_cast<int64_t>(rows.size()), T = width(b);
  Batch out;
  out.input_ids = Tensor::full({B, T}, opt_.pad_id, DType::i32);
  out.attention_mask = Tensor::zeros({B, T}, DType::i32);
  out.token_type_ids = Tensor::zeros({B, T}, DType::i32);
  out.labels = Tensor::empty({B}, DType::i32);
  int32_t* ids = out.input_ids.data<int32_t>();
  int32_t* mask = out.attention_mask.data<int32_t>();
  int32_t* labels = out.labels.data<int32_t>();
  for (int64_t r = 0; r < B; ++r) {
    std::span<const int32_t> seq = data_.sequence(rows[r]);
    const int64_t len = length(rows[r]);
    std::copy(seq.begin(), seq.begin() + len, ids + r * T);
    if (len < static_cast<int64_t>(seq.size())) ids[r * T + len - 1] = seq.back();  // keep [SEP]
    std::fill(mask + r * T, mask + r * T + len, 1);
    labels[r] = data_.labels[rows[r]];
    out.real_tokens += len;
  }
  return out;
}

std::pair<TokenizedSplit, TokenizedSplit> split_validation(const TokenizedSplit& train,
                                                           double fraction, uint64_t seed) {
  MASE_CHECK(fraction >= 0 && fraction < 1, ConfigError,
             "[batch] expected a validation fraction in [0, 1), got ", fraction);
  // Per label: shuffle its indices, take the first round(fraction * count) for validation.
  std::vector<char> is_val(static_cast<size_t>(train.size()), 0);
  int32_t max_label = 0;
  for (int32_t l : train.labels) max_label = std::max(max_label, l);
  for (int32_t label = 0; label <= max_label; ++label) {
    std::vector<int64_t> idx;
    for (int64_t i = 0; i < train.size(); ++i) {
      if (train.labels[i] == label) idx.push_back(i);
    }
    std::vector<int64_t> p =
        permutation(static_cast<int64_t>(idx.size()), seed, (1ull << 20) + label);
    const auto take = static_cast<size_t>(fraction * static_cast<double>(idx.size()) + 0.5);
    for (size_t k = 0; k < take; ++k) is_val[idx[p[k]]] = 1;
  }
  std::pair<TokenizedSplit, TokenizedSplit> out;
  for (int64_t i = 0; i < train.size(); ++i) {
    (is_val[i] ? out.second : out.first).push_back(train.sequence(i), train.labels[i]);
  }
  return out;
}

}  // namespace mase::data
