// tests/models/test_bert.cpp — BertForSequenceClassification against HF transformers (the
// fixture of tests/fixtures/gen_bert.py: logits, loss, every gradient, mean pooling), HF's key
// names, parameter counts, masks, and bad input. The fixture's 5 AdamW steps are checked in
// tests/train/test_bert_adamw.cpp (train/ sits above models/).
#include <cmath>
#include <fstream>
#include <sstream>

#include "bert_fixture.h"
#include "helpers.h"
#include "models/bert.h"

using namespace mase;
using namespace mase::nn;

namespace {

// |actual − expected| ≤ rtol · (|expected| + max|expected|) + atol elementwise: relative to
// each element, with a floor relative to the tensor's scale (gradients have entries near
// zero) and an absolute floor for tensors that are zero in exact arithmetic: the gradient of
// every key bias is, since adding q·b_k to all the scores of a row leaves its softmax
// unchanged, and both sides hold rounding noise of ~1e-9 there.
void check_matches(const Tensor& actual, const Tensor& expected, double rtol, const std::string& what,
                   double atol = 1e-7) {
  INFO(what);
  REQUIRE(actual.shape() == expected.shape());
  std::vector<double> a = actual.to_vector<double>(), e = expected.to_vector<double>();
  double scale = 0, worst = 0;
  for (double v : e) scale = std::max(scale, std::abs(v));
  size_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) {
    double err = std::abs(a[i] - e[i]) / (std::abs(e[i]) + scale + 1e-30);
    worst = std::max(worst, err);
    bad += std::abs(a[i] - e[i]) > rtol * (std::abs(e[i]) + scale) + atol;
  }
  INFO("worst relative error " << worst << " over " << a.size() << " elements");
  CHECK(bad == 0);
}

struct Loaded {
  test::BertFixture fx;
  std::shared_ptr<BertForSequenceClassification> model;
};

Loaded load_reference(const std::string& pooling = "cls") {
  Loaded l{test::load_bert_fixture(), nullptr};
  BertConfig c = BertConfig::from_json(nlohmann::json::parse(l.fx.config_json), "fixture");
  c.pooling = pooling;
  l.model = std::make_shared<BertForSequenceClassification>(c);
  l.model->load_state_dict(l.fx.group("param"));  // strict: every HF key, nothing else
  l.model->eval();
  return l;
}

SequenceClassifierOutput run(Loaded& l, bool with_labels = true) {
  return l.model->forward(l.fx.at("input_ids"), l.fx.at("attention_mask"), l.fx.at("token_type_ids"),
                          with_labels ? l.fx.at("labels") : Tensor());
}

}  // namespace

TEST_CASE("bert: logits and loss match HF transformers") {
  Loaded l = load_reference();
  SequenceClassifierOutput out = run(l);
  check_matches(out.logits, l.fx.at("logits"), 1e-5, "logits");
  CHECK(out.loss.shape() == Shape{});
  check_matches(reshape(out.loss, {1}), l.fx.at("loss"), 1e-5, "loss");
}

TEST_CASE("bert: the gradient of every parameter matches HF transformers") {
  Loaded l = load_reference();
  backward(run(l).loss);
  std::map<std::string, Tensor> grads = l.fx.group("grad");
  auto params = l.model->named_parameters();
  CHECK(params.size() == grads.size());
  for (auto& [name, p] : params) {
    REQUIRE_MESSAGE(grads.count(name), name);
    REQUIRE_MESSAGE(p.grad().defined(), name);
    check_matches(p.grad(), grads.at(name), 1e-5, "grad of " + name);
  }
}

TEST_CASE("bert: mean pooling matches the PyTorch composition and differs from CLS") {
  Loaded mean = load_reference("mean");
  Tensor logits = run(mean, false).logits;
  check_matches(logits, mean.fx.at("logits_mean"), 1e-5, "mean-pooled logits");
  // pooling on/off: the CLS logits are a different function of the same weights
  std::vector<double> a = logits.to_vector<double>(), b = mean.fx.at("logits").to_vector<double>();
  double diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff = std::max(diff, std::abs(a[i] - b[i]));
  CHECK(diff > 1e-2);
}

TEST_CASE("bert: mean pooling takes a strided float attention mask") {
  Loaded mean = load_reference("mean");
  const Tensor& am = mean.fx.at("attention_mask");  // (B, T)
  const int64_t B = am.size(0), T = am.size(1);
  // the same mask as f32, first as a transposed (T, B) tensor seen through transpose, then as
  // a slice of a wider one: neither is contiguous (mean pooling used view() and threw)
  const Tensor f = am.to(DType::f32);
  const Tensor transposed = transpose(contiguous(transpose(f, 0, 1)), 0, 1);
  const Tensor sliced = slice(concat({f, f}, 1), 1, 0, T);
  REQUIRE(!transposed.is_contiguous());
  REQUIRE(!sliced.is_contiguous());
  const Tensor want = run(mean, false).logits;
  for (const Tensor& m : {transposed, sliced}) {
    Tensor got = mean.model->forward(mean.fx.at("input_ids"), m, mean.fx.at("token_type_ids")).logits;
    CHECK(got.shape() == Shape{B, 2});
    test::check_close(got, want, 1e-6, 1e-5);
  }
}

TEST_CASE("bert: an encoder layer replaced by another module is a ConfigError in forward") {
  BertConfig c = BertConfig::preset("bert-tiny", 50);
  c.max_position_embeddings = 8;
  auto model = std::make_shared<BertForSequenceClassification>(c);
  model->replace_submodule("bert.encoder.layer.0", std::make_shared<Identity>());
  Tensor ids = Tensor::from(std::vector<int32_t>{1, 2, 3}, {1, 3});
  CHECK_THROWS_AS((*model)(ids), ConfigError);  // was std::bad_cast
}

TEST_CASE("bert: HF key names and shapes of bert-tiny") {
  std::ifstream in(MASE_FIXTURES_DIR "/bert_hf_keys.txt");
  REQUIRE(in.good());
  std::vector<std::pair<std::string, Shape>> hf;
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream ss(line);
    std::string key;
    ss >> key;
    Shape s;
    for (int64_t d; ss >> d;) s.push_back(d);
    hf.push_back({key, s});
  }
  REQUIRE(hf.size() == 41);
  auto model = std::make_shared<BertForSequenceClassification>(BertConfig::preset("bert-tiny", 30522));
  auto ours = model->named_parameters();
  REQUIRE(ours.size() == hf.size());
  for (size_t i = 0; i < hf.size(); ++i) {  // same names, same shapes, same order
    CHECK(ours[i].first == hf[i].first);
    CHECK(ours[i].second.shape() == hf[i].second);
  }
  CHECK(model->named_buffers().empty());  // HF's position_ids buffer is not persistent: not saved
}

TEST_CASE("bert: parameter counts of bert-tiny with and without frozen embeddings") {
  auto model = std::make_shared<BertForSequenceClassification>(BertConfig::preset("bert-tiny", 30522));
  // embeddings 30522·128 + 512·128 + 2·128 + 2·128 = 3,972,864; per layer 4·(128·128+128)
  // + (128·512+512) + (512·128+128) + 4·128 = 198,272 (×2); pooler 16,512; classifier 258
  CHECK(model->num_parameters() == 4386178);
  for (Tensor& p : model->bert->embeddings->parameters()) p.set_requires_grad(false);
  CHECK(model->num_parameters(/*trainable_only=*/true) == 413314);
}

TEST_CASE("bert: presets have the published sizes") {
  struct Want { const char* name; int64_t L, H, A, I; };
  for (Want w : {Want{"bert-tiny", 2, 128, 2, 512}, Want{"bert-mini", 4, 256, 4, 1024},
                 Want{"bert-small", 4, 512, 8, 2048}, Want{"bert-medium", 8, 512, 8, 2048},
                 Want{"bert-base", 12, 768, 12, 3072}}) {
    BertConfig c = BertConfig::preset(w.name, 1000);
    CHECK(c.num_hidden_layers == w.L);
    CHECK(c.hidden_size == w.H);
    CHECK(c.num_attention_heads == w.A);
    CHECK(c.intermediate_size == w.I);
    CHECK(c.vocab_size == 1000);
    CHECK(c.max_position_embeddings == 512);
    CHECK(c.type_vocab_size == 2);
  }
  CHECK(test::error_message([] { BertConfig::preset("bert-huge"); }) ==
        "[BertConfig] unknown model \"bert-huge\" (known: bert-tiny, bert-mini, bert-small, "
        "bert-medium, bert-base)");
}

TEST_CASE("bert: init follows HF's _init_weights") {
  manual_seed(7);
  BertConfig c = BertConfig::preset("bert-mini", 2000);
  auto model = std::make_shared<BertForSequenceClassification>(c);
  // weights ~ N(0, 0.02²): the sample std of 256·256 values is 0.02 within ~1%
  std::vector<double> w = model->bert->encoder->layer->at<BertLayer>(1).attention->self->query
                              ->named_parameters()[0].second.to_vector<double>();
  double s2 = 0;
  for (double x : w) s2 += x * x;
  CHECK(std::sqrt(s2 / w.size()) == doctest::Approx(0.02).epsilon(0.02));
  for (auto& [name, p] : model->named_parameters()) {
    INFO(name);
    std::vector<double> v = p.to_vector<double>();
    if (name.find("LayerNorm.weight") != std::string::npos) CHECK(v == std::vector<double>(v.size(), 1.0));
    else if (name.find("bias") != std::string::npos) CHECK(v == std::vector<double>(v.size(), 0.0));
  }
  // the [PAD] row of the word embeddings starts at zero; row 1 does not
  Tensor word = model->state_dict().at("bert.embeddings.word_embeddings.weight");
  std::vector<double> pad = select(word, 0, c.pad_token_id).to_vector<double>();
  CHECK(pad == std::vector<double>(pad.size(), 0.0));
  CHECK(select(word, 0, 1).to_vector<double>() != pad);
}

TEST_CASE("bert: a missing attention mask is built as all ones") {
  Loaded l = load_reference();
  Tensor ids = slice(l.fx.at("input_ids"), 0, 0, 1).contiguous();  // the unpadded sequence (1, 8)
  Tensor implicit = l.model->forward(ids, Tensor()).logits;
  Tensor ones = l.model->forward(ids, Tensor::ones({1, 8}, DType::i32)).logits;
  test::check_close(implicit, ones, 0, 0);  // the same computation: bit-identical
  test::check_close((*l.model)(ids), ones, 0, 0);  // the unary form
  // and token types default to zeros
  test::check_close(l.model->forward(ids, Tensor(), Tensor::zeros({1, 8}, DType::i32)).logits, implicit, 0, 0);
}

TEST_CASE("bert: padded positions do not influence the logits") {
  Loaded l = load_reference();
  Tensor ref = run(l, false).logits;
  // rewrite the 3 padded ids of sequence 1 (mask 0) with other tokens: nothing may change
  std::vector<int32_t> ids = l.fx.at("input_ids").to_vector<int32_t>();
  for (int t = 5; t < 8; ++t) ids[8 + t] = 40 + t;
  Tensor changed = l.model->forward(Tensor::from(ids, {2, 8}), l.fx.at("attention_mask"),
                                    l.fx.at("token_type_ids")).logits;
  test::check_close(changed, ref, 0, 0);
  // without the mask they do (the mask is really applied)
  Tensor unmasked = l.model->forward(Tensor::from(ids, {2, 8}), Tensor(), l.fx.at("token_type_ids")).logits;
  CHECK(std::abs(unmasked.to_vector<double>()[2] - ref.to_vector<double>()[2]) > 1e-4);
}

TEST_CASE("bert: dropout acts in training mode only and follows the seed") {
  BertConfig c = BertConfig::preset("bert-tiny", 100);
  c.max_position_embeddings = 16;
  auto model = std::make_shared<BertForSequenceClassification>(c);
  Tensor ids = Tensor::from(std::vector<int32_t>{5, 6, 7, 8, 9, 10}, {2, 3});
  model->eval();
  std::vector<double> e1 = (*model)(ids).to_vector<double>(), e2 = (*model)(ids).to_vector<double>();
  CHECK(e1 == e2);
  model->train();
  manual_seed(3);
  std::vector<double> t1 = (*model)(ids).to_vector<double>();
  manual_seed(3);
  std::vector<double> t2 = (*model)(ids).to_vector<double>();
  CHECK(t1 == t2);
  CHECK(t1 != e1);
  // with every Dropout replaced by Identity, training mode computes the eval function
  for (auto& [path, m] : model->named_modules())
    if (m->type_name() == "Dropout") model->replace_submodule(path, std::make_shared<Identity>());
  test::check_close((*model)(ids), Tensor::from(std::vector<double>(e1), {2, 2}), 1e-6, 1e-5);
}

TEST_CASE("bert: bad inputs are typed errors") {
  BertConfig c = BertConfig::preset("bert-tiny", 50);
  c.max_position_embeddings = 4;
  auto model = std::make_shared<BertForSequenceClassification>(c);
  Tensor ids = Tensor::from(std::vector<int32_t>{1, 2, 3, 4, 5}, {1, 5});
  CHECK(test::error_message([&] { (*model)(ids); }) ==
        "[BertEmbeddings] expected at most 4 tokens (max_position_embeddings), got input_ids (1, 5) "
        "(truncate the inputs)");
  Tensor ok = Tensor::from(std::vector<int32_t>{1, 2, 3}, {1, 3});
  CHECK_THROWS_AS((*model)(Tensor::zeros({1, 3})), DTypeError);              // f32 ids
  CHECK_THROWS_AS((*model)(Tensor::zeros({3}, DType::i32)), ShapeError);     // not (B, T)
  CHECK(test::error_message([&] { model->forward(ok, Tensor::ones({1, 4}, DType::i32)); }) ==
        "[BertModel] expected attention_mask of shape (1, 3) (like input_ids), got (1, 4)");
  CHECK_THROWS_AS(model->forward(ok, Tensor(), Tensor::zeros({2, 3}, DType::i32)), ShapeError);
  CHECK_THROWS_AS(model->forward(ok, Tensor(), Tensor(), Tensor::zeros({2}, DType::i32)), ShapeError);
  CHECK_THROWS_AS(model->forward(ok, Tensor(), Tensor(), Tensor::zeros({1})), DTypeError);
  c.num_attention_heads = 3;  // 128 is not divisible by 3
  CHECK_THROWS_AS(BertForSequenceClassification{c}, ConfigError);
}
