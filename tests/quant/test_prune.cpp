// tests/quant/test_prune.cpp — pruning masks against a brute-force oracle (sort every element by
// (key, position) and take the first k), exact counts for every method and scope, activation
// masks per row, spec errors, and masked weights that stay zero through AdamW with weight decay.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "autograd/gradcheck.h"
#include "autograd/ops.h"
#include "helpers.h"
#include "runtime/kernels/prune.h"
#include "quant/passes.h"
#include "quant/quant_configs.h"
#include "quant/quantized_linear.h"
#include "quant/tiny_models.h"
#include "train/adamw.h"

using namespace mase;
using namespace mase::quant;
using nlohmann::json;

namespace {

// The oracle: keep masks pruning the k smallest |x| of the concatenation of `xs`, ties broken
// by position, by a full stable sort (NaN counts as larger than everything).
std::vector<std::vector<uint8_t>> oracle_l1(const std::vector<std::vector<float>>& xs, int64_t k) {
  std::vector<std::pair<int, double>> all;  // (is NaN, |x|) compared as a pair
  for (const auto& x : xs)
    for (float v : x)
      all.push_back({std::isnan(v) ? 1 : 0, std::isnan(v) ? 0.0 : std::abs(double(v))});
  std::vector<size_t> order(all.size());
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return all[a] < all[b]; });
  std::vector<uint8_t> flat(all.size(), 1);
  for (int64_t i = 0; i < k; ++i) flat[order[i]] = 0;
  std::vector<std::vector<uint8_t>> out;
  size_t pos = 0;
  for (const auto& x : xs) {
    out.emplace_back(flat.begin() + pos, flat.begin() + pos + x.size());
    pos += x.size();
  }
  return out;
}

// Values with many ties: multiples of 0.25 in [−2, 2] and a sprinkling of −0.
Tensor tied_values(const Shape& shape, uint64_t seed) {
  Tensor u = test::random_tensor(shape, seed, -8.5, 8.5, DType::f32);
  std::vector<float> v = u.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = (i % 7 == 3) ? -0.0f : std::round(v[i]) / 4;
  return Tensor::from(v, shape);
}

std::vector<uint8_t> bytes(const Tensor& t) { return t.to_vector<uint8_t>(); }

}  // namespace

TEST_CASE("prune_count is round half to even of s times n") {
  CHECK(prune_count(0.5, 5) == 2);   // 2.5 -> 2
  CHECK(prune_count(0.5, 7) == 4);   // 3.5 -> 4
  CHECK(prune_count(0.3, 10) == 3);  // 3.0000000000000004 -> 3
  CHECK(prune_count(0.0, 10) == 0);
  CHECK(prune_count(1.0, 10) == 10);
}

TEST_CASE("l1-norm weight masks are the k smallest with ties by index in both scopes") {
  std::vector<Tensor> ws = {tied_values({6, 10}, 1), tied_values({3, 7}, 2),
                            tied_values({5, 4}, 3)};
  std::vector<std::vector<float>> vs;
  for (const Tensor& w : ws) vs.push_back(w.to_vector<float>());
  for (double s : {0.0, 0.1, 0.37, 0.5, 0.9, 1.0}) {
    INFO("sparsity " << s);
    auto local = weight_keep_masks(ws, {s, PruneMethod::l1_norm, PruneScope::local});
    for (size_t i = 0; i < ws.size(); ++i) {
      CHECK(bytes(local[i]) == oracle_l1({vs[i]}, prune_count(s, ws[i].numel()))[0]);
      CHECK(count_pruned(local[i]) == prune_count(s, ws[i].numel()));
    }
    auto global = weight_keep_masks(ws, {s, PruneMethod::l1_norm, PruneScope::global});
    auto want = oracle_l1(vs, prune_count(s, 60 + 21 + 20));
    for (size_t i = 0; i < ws.size(); ++i) CHECK(bytes(global[i]) == want[i]);
  }
}

TEST_CASE("the radix select agrees with the oracle on keys that share their top 16 bits") {
  // values within one 16-bit bucket of the f32 pattern (1.0 .. 1.0 + 2^-8) exercise pass 2
  std::vector<float> v(3000);
  Tensor u = test::random_tensor({3000}, 5, 0, 1, DType::f32);
  std::vector<float> uv = u.to_vector<float>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = 1.0f + std::floor(uv[i] * 64) / 16384;
  v[17] = NAN;
  v[18] = INFINITY;
  for (int64_t k : {1, 2, 999, 1500, 2998, 2999, 3000}) {
    std::vector<uint8_t> keep(v.size());
    cpu::select_smallest({{v.data(), int64_t(v.size())}}, k, {keep.data()});
    CHECK(keep == oracle_l1({v}, k)[0]);
  }
}

TEST_CASE("random weight masks have the exact count and depend only on the seed") {
  std::vector<Tensor> ws = {Tensor::zeros({30, 20}), Tensor::zeros({10, 9})};
  for (PruneScope scope : {PruneScope::local, PruneScope::global}) {
    auto a = weight_keep_masks(ws, {0.3, PruneMethod::random, scope, 7});
    auto b = weight_keep_masks(ws, {0.3, PruneMethod::random, scope, 7});
    auto c = weight_keep_masks(ws, {0.3, PruneMethod::random, scope, 8});
    if (scope == PruneScope::local) {
      CHECK(count_pruned(a[0]) == 180);
      CHECK(count_pruned(a[1]) == 27);
    } else {
      CHECK(count_pruned(a[0]) + count_pruned(a[1]) == prune_count(0.3, 690));  // 207
    }
    CHECK(bytes(a[0]) == bytes(b[0]));
    CHECK(bytes(a[1]) == bytes(b[1]));
    CHECK(bytes(a[0]) != bytes(c[0]));
  }
  // the selection is the k smallest Philox words of the stream, ties by index
  auto m =
      weight_keep_masks({Tensor::zeros({50})}, {0.2, PruneMethod::random, PruneScope::local, 3});
  std::vector<std::pair<uint32_t, int>> words;
  for (int i = 0; i < 50; ++i) words.push_back({philox_word(3, 0, uint64_t(i)), i});
  std::sort(words.begin(), words.end());
  std::vector<uint8_t> want(50, 1);
  for (int i = 0; i < 10; ++i) want[words[i].second] = 0;
  CHECK(bytes(m[0]) == want);
}

TEST_CASE("activation masks prune exact counts per row or over the whole tensor") {
  Tensor x = tied_values({4, 3, 10}, 21);
  std::vector<float> xv = x.to_vector<float>();
  Generator g(1);
  // local l1-norm: round(0.35·10) = 4 per row (3.5 -> 4), the oracle row by row
  Tensor keep = activation_keep_mask(x, {0.35, PruneMethod::l1_norm, PruneScope::local}, g);
  std::vector<uint8_t> kv = bytes(keep);
  for (int r = 0; r < 12; ++r) {
    std::vector<float> row(xv.begin() + r * 10, xv.begin() + r * 10 + 10);
    CHECK(std::vector<uint8_t>(kv.begin() + r * 10, kv.begin() + r * 10 + 10) ==
          oracle_l1({row}, 4)[0]);
  }
  // global l1-norm: round(0.35·120) = 42 over everything
  CHECK(bytes(activation_keep_mask(x, {0.35, PruneMethod::l1_norm, PruneScope::global}, g)) ==
        oracle_l1({xv}, 42)[0]);
  // random: exact count in every row, a fresh set on each call, the generator advanced
  PruneSpec rnd{0.35, PruneMethod::random, PruneScope::local, 1};
  Generator gr(5);
  Tensor k1 = activation_keep_mask(x, rnd, gr);
  CHECK(gr.offset == 30);  // 120 words = 30 Philox blocks
  Tensor k2 = activation_keep_mask(x, rnd, gr);
  std::vector<uint8_t> v1 = bytes(k1);
  for (int r = 0; r < 12; ++r)
    CHECK(std::count(v1.begin() + r * 10, v1.begin() + r * 10 + 10, 0) == 4);
  CHECK(v1 != bytes(k2));
  Tensor kg = activation_keep_mask(x, {0.35, PruneMethod::random, PruneScope::global}, gr);
  CHECK(count_pruned(kg) == 42);
}

TEST_CASE("activation pruning in the wrapper: masked inputs get zero gradient") {
  // f64 gradcheck through where(mask, x, 0): the mask is piecewise constant in x, and the
  // inputs are far enough apart that ±eps never reorders them
  Tensor w = test::random_f64({3, 6}, 31), b = test::random_f64({3}, 32);
  nn::Linear base(w, b);
  QuantizedLinear q(base, {{"bypass", true}});
  q.set_activation_pruning({0.5, PruneMethod::l1_norm, PruneScope::local});
  q.set_weight_mask(Tensor::from(
      std::vector<uint8_t>{1, 1, 0, 1, 0, 1, 0, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1, 0}, {3, 6}));
  Tensor x = Tensor::from(std::vector<double>{0.1, -0.9, 0.35, 0.6, -0.2, 1.4, 0.8, 0.05, -0.5,
                                              0.27, -1.1, 0.7},
                          {2, 6})
                 .set_requires_grad(true);
  CHECK(gradcheck([&](const Tensors& in) { return q(in[0]); }, {x, w, b}));
  backward(sum(q(x)));
  std::vector<double> dx = x.grad().to_vector<double>();
  // row 0 prunes 0.1, 0.35, -0.2 (positions 0, 2, 4); row 1 prunes 0.05, 0.27, -0.5 (7, 9, 8)
  for (int i : {0, 2, 4, 7, 8, 9}) CHECK(dx[i] == 0.0);
  std::vector<double> dw = w.grad().to_vector<double>();
  for (int i : {2, 4, 6, 13, 17}) CHECK(dw[i] == 0.0);
}

TEST_CASE("prune spec errors name the problem") {
  CHECK(test::error_message([] {
          parse_prune_spec({{"sparsity", 1.5}}, "weight");
        }) == "[prune] weight: expected sparsity in [0, 1], got 1.5");
  CHECK_THROWS_AS(parse_prune_spec({{"sparsity", -0.1}}, "weight"), ConfigError);
  CHECK_THROWS_AS(parse_prune_spec({{"sparsity", "half"}}, "weight"), ConfigError);
  CHECK_THROWS_AS(parse_prune_spec({{"method", "random"}}, "weight"), ConfigError);  // no sparsity
  CHECK(test::error_message([] {
          parse_prune_spec({{"sparsity", 0.5}, {"method", "l2"}}, "activation");
        }) == "[prune] activation: unknown method \"l2\" (expected \"random\" or \"l1-norm\")");
  CHECK_THROWS_AS(parse_prune_spec({{"sparsity", 0.5}, {"scope", "layer"}}, "weight"), ConfigError);
  CHECK_THROWS_AS(parse_prune_spec({{"sparsity", 0.5}, {"sparsty", 0.5}}, "weight"), ConfigError);
  auto m = test::tiny_bert();
  CHECK_THROWS_AS((void)prune(*m, {{"weights", {{"sparsity", 0.5}}}}), ConfigError);
  CHECK(m->submodule("classifier")->type_name() == "Linear");  // nothing changed
}

TEST_CASE("the prune pass hits the exact sparsity locally and globally with both methods") {
  for (const char* method : {"l1-norm", "random"})
    for (const char* scope : {"local", "global"}) {
      INFO(method << " " << scope);
      auto m = test::tiny_bert();
      PruneReport r =
          prune(*m, {{"weight", {{"sparsity", 0.3}, {"method", method}, {"scope", scope}}}});
      REQUIRE(r.layers.size() == 14);
      if (std::string(scope) == "local") {
        for (const PruneRow& row : r.layers) CHECK(row.pruned == prune_count(0.3, row.weights));
      } else {
        CHECK(r.pruned() == prune_count(0.3, r.weights()));
      }
      // the masks are in the model and the pruned weights are zero in storage
      int64_t zeros = 0;
      for (auto& [path, lin] : linear_layers(*m)) {
        CHECK(lin->type_name() == "PrunedLinear");
        for (float v : lin->weight.to_vector<float>()) zeros += v == 0.0f;
      }
      CHECK(zeros == r.pruned());
      CHECK(sparsity_report(*m).pruned() == r.pruned());
    }
}

TEST_CASE("masked weights stay exactly zero through AdamW training with weight decay") {
  Tensor x = test::random_tensor({32, 8}, 41, -1, 1, DType::f32);
  Tensor y = test::random_tensor({32, 2}, 42, -1, 1, DType::f32);
  manual_seed(3);
  auto mlp = std::make_shared<test::Mlp>(8, 16, 2);
  // an optimizer that already has momentum for every weight: the hard case
  train::AdamW opt(mlp->named_parameters(), {.lr = 0.01, .weight_decay = 0.1}, nullptr);
  auto step = [&] {
    Tensor d = (*mlp)(x)-y;
    Tensor loss = mean(d * d);
    opt.zero_grad();
    backward(loss);
    opt.step();
    return loss.item();
  };
  for (int i = 0; i < 5; ++i) step();
  PruneReport r =
      prune(*mlp, {{"weight", {{"sparsity", 0.5}, {"method", "l1-norm"}, {"scope", "global"}}}});
  CHECK(r.pruned() == prune_count(0.5, 8 * 16 + 16 * 2));
  auto& fc1 = dynamic_cast<QuantizedLinear&>(*mlp->fc1);
  std::vector<uint8_t> keep = bytes(fc1.weight_mask());
  double first = step(), last = 0;
  for (int i = 0; i < 40; ++i) {
    // every forward reads zeros and every backward gives them zero gradient
    last = step();
    std::vector<float> g = fc1.weight.grad().to_vector<float>();
    for (size_t j = 0; j < keep.size(); ++j)
      if (!keep[j]) CHECK(g[j] == 0.0f);
  }
  CHECK(last < first);
  // stale momentum moved the stored zeros after the last step; the next forward re-zeroes them
  (void)(*mlp)(x);
  std::vector<float> w = fc1.weight.to_vector<float>();
  for (size_t j = 0; j < keep.size(); ++j)
    if (!keep[j]) CHECK(w[j] == 0.0f);

  // a fresh optimizer (built after pruning, as mase-train does): zeros stay zero after every
  // step — decay multiplies them by (1 − lr·wd), and m = v = 0 give a zero update
  train::AdamW fresh(mlp->named_parameters(), {.lr = 0.01, .weight_decay = 0.1}, nullptr);
  for (int i = 0; i < 10; ++i) {
    Tensor d = (*mlp)(x)-y;
    fresh.zero_grad();
    backward(mean(d * d));
    fresh.step();
    std::vector<float> wv = fc1.weight.to_vector<float>();
    for (size_t j = 0; j < keep.size(); ++j)
      if (!keep[j]) CHECK(wv[j] == 0.0f);
  }
}

TEST_CASE("bake_masks makes the zeros permanent and gives back plain Linears") {
  auto m = test::tiny_bert();
  Tensor ids = test::tiny_ids(2, 6, 3);
  PruneReport r = prune(*m, {{"weight", {{"sparsity", 0.4}}}});
  (void)quantize(*m, {{"by", "name"}, {"classifier", {{"config", test::config_for("integer")}}}});
  Tensor before = m->forward(ids);
  CHECK(bake_masks(*m) == 14);
  CHECK(m->submodule("bert.pooler.dense")->type_name() == "Linear");
  CHECK(m->submodule("classifier")->type_name() == "QuantizedLinear");  // still quantized
  CHECK(m->forward(ids).to_vector<float>() == before.to_vector<float>());
  CHECK(sparsity_report(*m).pruned() == 0);  // no masks left; the zeros are in the weights
  int64_t zeros = 0;
  for (auto& [path, lin] : linear_layers(*m))
    for (float v : lin->weight.to_vector<float>()) zeros += v == 0.0f;
  CHECK(zeros >= r.pruned());
}
