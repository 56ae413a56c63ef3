// bench/common.cpp — registration, baselines and validation helpers (see common.h).
#include "bench/common.h"

#include <chrono>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <sstream>

#include "models/fusion.h"
#include "runtime/parallel.h"
#include "runtime/random.h"
#include "train/clip_grad_norm.h"

namespace mase::bench {
namespace {
std::map<std::string, Relation>& relations() {
  static std::map<std::string, Relation> r;
  return r;
}
size_t added = 0;  // registration happens on the main thread, before any benchmark runs
}  // namespace

benchmark::internal::Benchmark* add(const std::string& name, Body body, Timing timing) {
  auto* b = benchmark::RegisterBenchmark(name.c_str(), std::move(body));
  if (timing == Timing::manual) b->UseManualTime();
  else b->UseRealTime();
  ++added;
  return b->Unit(benchmark::kMillisecond);
}

size_t added_count() { return added; }

void relative_to(const std::string& name, const std::string& baseline, const std::string& counter) {
  relations()[name] = Relation{baseline, counter};
}

const Relation* relation_of(const std::string& name) {
  auto it = relations().find(name);
  return it == relations().end() ? nullptr : &it->second;
}

std::vector<double> time_paired(benchmark::State& st, const std::function<void()>& kernel,
                                const std::vector<Baseline>& baselines) {
  using Clock = std::chrono::steady_clock;
  auto seconds = [](Clock::time_point a, Clock::time_point b) {
    return std::chrono::duration<double>(b - a).count();
  };
  double kernel_s = 0;
  std::vector<double> baseline_s(baselines.size(), 0.0);
  for (auto _ : st) {
    const auto t0 = Clock::now();
    kernel();
    auto t1 = Clock::now();
    const double k = seconds(t0, t1);
    st.SetIterationTime(k);
    kernel_s += k;
    for (size_t i = 0; i < baselines.size(); ++i) {
      baselines[i].run();
      const auto t2 = Clock::now();
      baseline_s[i] += seconds(t1, t2);
      t1 = t2;
    }
  }
  for (size_t i = 0; i < baselines.size(); ++i)
    st.counters[baselines[i].ratio] = kernel_s > 0 ? baseline_s[i] / kernel_s : 0.0;
  return baseline_s;
}

double time_paired(benchmark::State& st, const std::function<void()>& kernel,
                   const std::function<void()>& baseline, const std::string& ratio) {
  return time_paired(st, kernel, {Baseline{baseline, ratio}})[0];
}

void time_vs_memcpy(benchmark::State& st, int64_t bytes, const std::function<void()>& kernel,
                    const std::vector<Baseline>& also) {
  const int64_t n = bytes / 2;  // memcpy reads n bytes and writes n
  Tensor src = Tensor::full({n}, 7, DType::u8);  // written, so no page is a shared zero page
  Tensor dst = Tensor::zeros({n}, DType::u8);
  const auto* s = static_cast<const char*>(src.raw_data());
  auto* d = static_cast<char*>(dst.raw_data());
  std::vector<Baseline> baselines{{[&] {
    // the same thread pool and chunking as the kernels: a fair yardstick for N threads
    parallel_for(0, n, kGrainElems * 4,
                 [&](int64_t lo, int64_t hi) { std::memcpy(d + lo, s + lo, hi - lo); });
    benchmark::ClobberMemory();
  }, "vs_memcpy"}};  // same bytes: the time ratio is bw / memcpy_bw
  baselines.insert(baselines.end(), also.begin(), also.end());
  const double copy_s = time_paired(st, kernel, baselines)[0];
  set_bytes(st, static_cast<double>(bytes));
  const double moved = static_cast<double>(bytes) * static_cast<double>(st.iterations());
  st.counters["memcpy_bw"] = copy_s > 0 ? moved / copy_s : 0.0;
}

BertSetup make_bert_setup(const char* name) {
  BertSetup s;
  s.cfg = nn::BertConfig::preset(name, kVocab);
  manual_seed(0);
  s.model = std::make_shared<nn::BertForSequenceClassification>(s.cfg);
  nn::fuse_kernels(*s.model);  // as mase-train runs it (models/fusion.h)
  s.opt = std::make_unique<train::AdamW>(s.model->named_parameters(),
                                         train::AdamWOptions{.lr = 1e-4, .weight_decay = 0.01});
  std::vector<int32_t> ids(kTokens), labels(kBatch);
  for (int64_t i = 0; i < kTokens; ++i)  // ids in [1, V): 0 is [PAD]
    ids[i] = 1 + static_cast<int32_t>(philox_word(7, 0, i) % (kVocab - 1));
  for (int64_t b = 0; b < kBatch; ++b) labels[b] = static_cast<int32_t>(philox_word(7, 1, b) & 1);
  s.ids = Tensor::from(ids, {kBatch, kSeq});
  s.mask = Tensor::ones({kBatch, kSeq}, DType::i32);
  s.labels = Tensor::from(labels, {kBatch});
  return s;
}

data::Batch setup_batch(const BertSetup& s) {
  data::Batch b;
  b.input_ids = s.ids;
  b.attention_mask = s.mask;
  b.labels = s.labels;
  b.real_tokens = s.ids.numel();
  return b;
}

std::pair<double, double> bert_train_step(BertSetup& s, const train::Forward& forward) {
  s.model->train();
  nn::SequenceClassifierOutput out =
      forward ? forward(setup_batch(s)) : s.model->forward(s.ids, s.mask, Tensor(), s.labels);
  backward(out.loss);
  const double norm = train::clip_grad_norm(*s.opt, 1.0);
  s.opt->step();
  s.opt->zero_grad();
  return {out.loss.item(), norm};
}

bool validate_once(benchmark::State& st, const std::string& name,
                   const std::function<std::string()>& check) {
  static std::mutex mu;
  static std::map<std::string, std::string> verdicts;  // name -> "" (ok) or the error
  std::lock_guard lock(mu);
  auto it = verdicts.find(name);
  if (it == verdicts.end()) it = verdicts.emplace(name, check()).first;
  if (it->second.empty()) return true;
  st.SkipWithError(("validation failed: " + it->second).c_str());
  return false;
}

std::string compare(const Tensor& got, const std::vector<double>& want, double atol, double rtol) {
  std::vector<double> g = got.to_vector<double>();
  if (g.size() != want.size()) {
    std::ostringstream os;
    os << "expected " << want.size() << " elements, got " << g.size() << " " << got.shape();
    return os.str();
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {  // NaN fails too
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " of " << got.shape() << " is " << g[i] << ", expected " << want[i];
      return os.str();
    }
  }
  return "";
}

Tensor uniform_tensor(const Shape& shape, uint64_t seed, double lo, double hi) {
  Tensor t = Tensor::empty(shape);
  Generator gen(seed);
  uniform_(t, lo, hi, gen);
  return t;
}

Tensor normal_tensor(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  Generator gen(seed);
  normal_(t, 0.0, 1.0, gen);
  return t;
}

std::string shape_name(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

}  // namespace mase::bench
