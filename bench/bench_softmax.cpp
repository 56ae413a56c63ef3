// bench/bench_softmax.cpp — the softmax suite: the fused row softmax (runtime/cpu/softmax.cpp)
// against the naive composition softmax_reference (row max, x − max, exp, Σ, ÷: Lab 4's), in
// GB/s, each timed next to a memcpy of the same bytes (common.h, time_vs_memcpy).
//
// Bytes counted are the least any softmax must move: read M·N and write M·N floats, 8·M·N.
// Both versions are credited with those same bytes, so their bw and vs_memcpy compare
// directly: vs_memcpy = 1 means "as fast as copying the matrix". The naive composition
// really moves ~8·M·N floats (max: read; x − max, exp, ÷: read + write each; Σ: read) and the
// fused one 2·M·N (docs/performance.md, "Softmax"). vs_naive = time(naive) / time(fused), the
// speedup: each fused call is followed by a naive one (and a memcpy), so both halves of the
// ratio see the same moment's load.
// Shapes: 4096×4096 (Lab 4's), and the attention probabilities of one BERT training batch,
// (B·NH·T, T) for B = 32, T = 256 with bert-small's 8 heads and bert-base's 12. Each result is
// validated once against a max-shifted softmax computed in double.
//
// Read next: runtime/cpu/softmax.cpp, bench/bench_sdpa.cpp.
#include <cmath>

#include "autograd/ops.h"
#include "bench/common.h"

namespace mase::bench {
namespace softmax_suite {

// Row softmax in double, the max subtracted first.
std::vector<double> softmax_double(const Tensor& x) {
  const int64_t R = x.size(0), C = x.size(1);
  std::vector<double> v = x.to_vector<double>();
  for (int64_t r = 0; r < R; ++r) {
    double* row = v.data() + r * C;
    double m = row[0], s = 0;
    for (int64_t c = 0; c < C; ++c) m = std::max(m, row[c]);
    for (int64_t c = 0; c < C; ++c) s += (row[c] = std::exp(row[c] - m));
    for (int64_t c = 0; c < C; ++c) row[c] /= s;
  }
  return v;
}

void register_shape(const Shape& s, const std::string& what) {
  const std::string tag = shape_name(s), fused = "softmax/fused/" + tag;
  const std::string naive = "softmax/naive/" + tag;
  const int64_t bytes = 8 * numel(s);
  // scores as BERT's attention produces them: N(0, 1)·3
  auto input = [s] { return normal_tensor(s, 1) * 3.0; };
  for (bool is_fused : {false, true}) {
    const std::string name = is_fused ? fused : naive;
    add(name, [=](benchmark::State& st) {
      const Tensor x = input();
      auto run = [&] { return is_fused ? softmax(x) : softmax_reference(x); };
      // probabilities are ≤ 1: 1e-6 absolute is a few f32 ulps of the largest ones
      if (!validate_once(st, name, [&] { return compare(run(), softmax_double(x), 1e-6, 1e-4); }))
        return;
      // the fused one is also paired with the naive one, call by call: vs_naive
      std::vector<Baseline> also;
      if (is_fused)
        also.push_back({[&] {
          Tensor y = softmax_reference(x);
          benchmark::DoNotOptimize(y.raw_data());
        }, "vs_naive"});
      time_vs_memcpy(st, bytes, [&] {
        Tensor y = run();
        benchmark::DoNotOptimize(y.raw_data());
      }, also);
      st.SetLabel(what);
    }, Timing::manual);
  }
}

}  // namespace softmax_suite

void register_softmax() {
  using namespace softmax_suite;
  register_shape({4096, 4096}, "Lab 4's matrix");
  for (const BertConfig& cfg : {kBertConfigs[2], kBertBase}) {
    const int64_t rows = kBatch * cfg.heads * kSeq;
    register_shape({rows, kSeq}, cat(cfg.name, " attention, B=", kBatch, " T=", kSeq));
  }
}

}  // namespace mase::bench
