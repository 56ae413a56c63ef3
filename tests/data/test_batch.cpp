// tests/data/test_batch.cpp — batches: padding, masks, truncation, labels (hand-checked on
// five short sequences), seeded shuffling, length bucketing, the validation split, errors.
#include <algorithm>
#include <map>
#include <set>

#include "data/batch.h"
#include "helpers.h"

using namespace mase;
using namespace mase::data;

namespace {
using Ids = std::vector<int32_t>;

// Five sequences with [CLS] = 2 and [SEP] = 3; lengths 5, 3, 8, 2, 6; labels 1, 0, 1, 0, 1.
TokenizedSplit five() {
  TokenizedSplit s;
  s.push_back(Ids{2, 10, 11, 12, 3}, 1);
  s.push_back(Ids{2, 20, 3}, 0);
  s.push_back(Ids{2, 30, 31, 32, 33, 34, 35, 3}, 1);
  s.push_back(Ids{2, 3}, 0);
  s.push_back(Ids{2, 50, 51, 52, 53, 3}, 1);
  return s;
}

// n sequences with pseudo-random lengths 2..201, label i % 2, ids unique per sequence.
TokenizedSplit random_lengths(int n) {
  TokenizedSplit s;
  uint32_t x = 7;
  for (int i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    Ids seq(2 + (x >> 16) % 200, 1000 + i);
    seq.front() = 2;
    seq.back() = 3;
    s.push_back(seq, i % 2);
  }
  return s;
}

BatchOptions in_order(int64_t bs, int64_t max_len) {
  BatchOptions o;
  o.batch_size = bs;
  o.max_len = max_len;
  o.shuffle = false;
  return o;
}

// Padding slots computed over an epoch: sum over batches of B*T - real tokens.
int64_t padding(const Batcher& b) {
  int64_t pad = 0;
  for (int64_t i = 0; i < b.num_batches(); ++i) {
    Batch x = b.batch(i);
    pad += x.input_ids.numel() - x.real_tokens;
  }
  return pad;
}
}  // namespace

TEST_CASE("batch: dynamic padding masks truncation and labels by hand") {
  TokenizedSplit data = five();
  Batcher b(data, in_order(2, 6));
  REQUIRE(b.num_batches() == 3);
  Batch x = b.batch(0);  // sequences 0 and 1: T = 5, the longer one
  CHECK(x.input_ids.shape() == Shape{2, 5});
  CHECK(x.input_ids.dtype() == DType::i32);
  CHECK(x.input_ids.to_vector<int32_t>() == Ids{2, 10, 11, 12, 3, /**/ 2, 20, 3, 0, 0});
  CHECK(x.attention_mask.to_vector<int32_t>() == Ids{1, 1, 1, 1, 1, /**/ 1, 1, 1, 0, 0});
  CHECK(x.token_type_ids.to_vector<int32_t>() == Ids(10, 0));
  CHECK(x.labels.shape() == Shape{2});
  CHECK(x.labels.to_vector<int32_t>() == Ids{1, 0});
  CHECK(x.real_tokens == 8);
  // Sequence 2 has 8 ids, max_len 6: its first 5 and its [SEP] are kept.
  x = b.batch(1);
  CHECK(x.input_ids.shape() == Shape{2, 6});
  CHECK(x.input_ids.to_vector<int32_t>() == Ids{2, 30, 31, 32, 33, 3, /**/ 2, 3, 0, 0, 0, 0});
  CHECK(x.attention_mask.to_vector<int32_t>() == Ids{1, 1, 1, 1, 1, 1, /**/ 1, 1, 0, 0, 0, 0});
  x = b.batch(2);  // the last, smaller batch
  CHECK(x.input_ids.shape() == Shape{1, 6});
  CHECK(x.labels.to_vector<int32_t>() == Ids{1});
}

TEST_CASE("batch: width of a batch index out of range is a ShapeError") {
  TokenizedSplit data = five();
  Batcher b(data, in_order(2, 6));
  CHECK(b.width(2) == 6);
  CHECK_THROWS_WITH_AS(b.width(3), "[batch] expected a batch index in [0, 3), got 3", ShapeError);
  CHECK_THROWS_AS(b.width(-1), ShapeError);
}

TEST_CASE("batch: fixed length pad id and drop_last") {
  TokenizedSplit data = five();
  BatchOptions o = in_order(2, 6);
  o.fixed_length = true;
  o.pad_id = 7;
  o.drop_last = true;
  Batcher b(data, o);
  CHECK(b.num_batches() == 2);
  Batch x = b.batch(0);
  CHECK(x.input_ids.shape() == Shape{2, 6});
  CHECK(x.input_ids.to_vector<int32_t>() == Ids{2, 10, 11, 12, 3, 7, /**/ 2, 20, 3, 7, 7, 7});
  CHECK(x.attention_mask.to_vector<int32_t>() == Ids{1, 1, 1, 1, 1, 0, /**/ 1, 1, 1, 0, 0, 0});
  CHECK(x.real_tokens == 8);
}

// HF's pad_to_multiple_of: each batch's length rounded up to a multiple (for a compiler that
// specialises on shapes), at most max_len; the extra positions are padding like any other.
TEST_CASE("batch: pad_multiple rounds each length up, at most max_len, by hand") {
  TokenizedSplit data = five();  // lengths 5, 3, 8, 2, 6
  BatchOptions o = in_order(2, 7);
  o.pad_multiple = 4;
  Batcher b(data, o);
  CHECK(b.width(0) == 8 - 1);  // longest 5 -> 8, capped at max_len 7
  CHECK(b.width(1) == 7);      // 8 truncated to 7 -> 8 -> 7
  CHECK(b.width(2) == 7);      // 6 -> 8 -> 7
  o.max_len = 16;
  Batcher c(data, o);
  CHECK(c.width(0) == 8);  // 5 -> 8
  CHECK(c.width(1) == 8);  // 8 stays 8
  CHECK(c.width(2) == 8);  // 6 -> 8
  Batch x = c.batch(0);
  CHECK(x.input_ids.shape() == Shape{2, 8});
  CHECK(x.input_ids.to_vector<int32_t>() ==
        Ids{2, 10, 11, 12, 3, 0, 0, 0, /**/ 2, 20, 3, 0, 0, 0, 0, 0});
  CHECK(x.attention_mask.to_vector<int32_t>() ==
        Ids{1, 1, 1, 1, 1, 0, 0, 0, /**/ 1, 1, 1, 0, 0, 0, 0, 0});
  CHECK(x.real_tokens == 8);
  // over many lengths: every width a multiple of 16 (or max_len), never below the longest
  TokenizedSplit many = random_lengths(300);
  BatchOptions m = in_order(8, 250);
  m.pad_multiple = 16;
  Batcher d(many, m);
  std::set<int64_t> widths;
  for (int64_t i = 0; i < d.num_batches(); ++i) {
    int64_t longest = 0;
    for (int64_t j : d.plan()[size_t(i)]) longest = std::max(longest, d.length(j));
    const int64_t w = d.width(i);
    CHECK((w % 16 == 0 || w == 250));
    CHECK(w >= longest);
    CHECK(w < longest + 16);
    widths.insert(w);
  }
  CHECK(widths.size() <= 16);  // ceil(250 / 16) lengths at most
  m.pad_multiple = 0;
  CHECK(test::error_message([&] { Batcher(many, m); }) ==
        "[batch] expected pad_multiple >= 1, got 0");
}

TEST_CASE("batch: permutations are seeded uniform and platform independent") {
  std::vector<int64_t> p = permutation(100, 42);
  std::vector<int64_t> sorted = p;
  std::sort(sorted.begin(), sorted.end());
  for (int64_t i = 0; i < 100; ++i) CHECK(sorted[i] == i);
  CHECK(permutation(100, 42) == p);
  CHECK(permutation(100, 43) != p);
  CHECK(permutation(100, 42, 1) != p);
  CHECK(permutation(0, 1).empty());
  CHECK(permutation(1, 1) == std::vector<int64_t>{0});
  // All 6 orders of 3 items, over 6000 seeds: each expected 1000 times, sd ~29; +-120 is 4 sd.
  std::map<std::vector<int64_t>, int> count;
  for (uint64_t seed = 0; seed < 6000; ++seed) count[permutation(3, seed)]++;
  CHECK(count.size() == 6);
  for (const auto& [perm, c] : count) CHECK(std::abs(c - 1000) < 120);
}

TEST_CASE("batch: shuffled epochs cover every sequence once") {
  TokenizedSplit data = random_lengths(103);
  BatchOptions o;
  o.batch_size = 10;
  o.seed = 5;
  Batcher b(data, o);
  CHECK(b.num_batches() == 11);
  auto seen = [&] {
    std::vector<int64_t> all;
    for (const auto& batch : b.plan()) all.insert(all.end(), batch.begin(), batch.end());
    return all;
  };
  std::vector<int64_t> e0 = seen();
  CHECK(std::set<int64_t>(e0.begin(), e0.end()).size() == 103);
  b.set_epoch(1);
  std::vector<int64_t> e1 = seen();
  CHECK(std::set<int64_t>(e1.begin(), e1.end()).size() == 103);
  CHECK(e0 != e1);
  b.set_epoch(0);
  CHECK(seen() == e0);  // an epoch's order depends on (seed, epoch) only
  Batch x = b.batch(0);
  for (int64_t r = 0; r < 10; ++r) {  // labels follow their sequences
    CHECK(x.labels.to_vector<int32_t>()[r] == data.labels[b.plan()[0][r]]);
  }
}

TEST_CASE("batch: length bucketing sorts within windows and saves padding") {
  TokenizedSplit data = five();
  // One window holding everything, no shuffle: the sequences by truncated length
  // (2, 3, 5, 6, 6 -> indices 3, 1, 0, 2, 4; the sort is stable), cut in twos.
  BatchOptions o = in_order(2, 6);
  o.bucket_batches = 3;
  Batcher b(data, o);
  CHECK(b.plan() == std::vector<std::vector<int64_t>>{{3, 1}, {0, 2}, {4}});
  // Padding slots: bucketed (3-2) + (6-5) + 0 = 2; in order (5-3) + (6-2) + 0 = 6.
  CHECK(padding(b) == 2);
  CHECK(padding(Batcher(data, in_order(2, 6))) == 6);

  TokenizedSplit many = random_lengths(400);
  BatchOptions s;
  s.batch_size = 8;
  s.max_len = 256;
  s.seed = 3;
  Batcher plain(many, s);
  s.bucket_batches = 10;
  Batcher bucketed(many, s);
  std::set<int64_t> all;
  for (const auto& batch : bucketed.plan()) {
    all.insert(batch.begin(), batch.end());
    for (size_t k = 1; k < batch.size(); ++k)
      CHECK(bucketed.length(batch[k - 1]) <= bucketed.length(batch[k]));
  }
  CHECK(all.size() == 400);
  CHECK(padding(bucketed) * 4 < padding(plain));  // lengths uniform in 2..201: far less padding
  MESSAGE("padding slots: " << padding(plain) << " shuffled, " << padding(bucketed) << " bucketed");
}

TEST_CASE("batch: validation split is stratified seeded and disjoint") {
  TokenizedSplit data;
  for (int i = 0; i < 10; ++i) data.push_back(Ids{2, 100 + i, 3}, i < 6 ? 0 : 1);  // 6 neg, 4 pos
  auto [train, val] = split_validation(data, 0.25, 1);
  // round(0.25 * 6) = 2 neg and round(0.25 * 4) = 1 pos go to validation.
  CHECK(val.size() == 3);
  CHECK(train.size() == 7);
  CHECK(std::count(val.labels.begin(), val.labels.end(), 0) == 2);
  CHECK(std::count(val.labels.begin(), val.labels.end(), 1) == 1);
  std::set<int32_t> words;  // each sequence's middle id, in either set exactly once
  for (const auto* s : {&train, &val}) {
    for (int64_t i = 0; i < s->size(); ++i) {
      CHECK(s->length(i) == 3);
      words.insert(s->sequence(i)[1]);
    }
  }
  CHECK(words.size() == 10);
  auto again = split_validation(data, 0.25, 1);
  CHECK(again.second == val);
  TokenizedSplit big = random_lengths(400);
  CHECK(split_validation(big, 0.1, 1).second != split_validation(big, 0.1, 2).second);
  CHECK(split_validation(data, 0.0, 1).second.size() == 0);
}

TEST_CASE("batch: bad options are ConfigErrors") {
  TokenizedSplit data = five();
  CHECK(test::error_message([&] { Batcher(data, in_order(2, 1)); }) ==
        "[batch] expected max_len >= 2 (room for [CLS] and [SEP]), got 1");
  CHECK_THROWS_AS(Batcher(data, in_order(0, 8)), ConfigError);
  CHECK_THROWS_AS(split_validation(data, 1.0, 0), ConfigError);
  Batcher b(data, in_order(2, 8));
  CHECK_THROWS_AS(b.batch(3), ShapeError);
}
