// bench/bench_elementwise.cpp — the elementwise suite: memory-bound kernels in GB/s, each
// timed next to a memcpy of the same bytes (common.h, time_vs_memcpy).
//
// A kernel that reads and writes each byte once can at best move bytes as fast as memcpy
// does, so vs_memcpy = bw(kernel) / bw(memcpy of the same traffic) says how close it is to
// the machine's limit (1.0 = as fast as a copy). Bytes counted (N elements of 4 bytes):
//   add, mul        a + b           reads 2N, writes N      12N bytes
//   bias_add        x + bias (C)    reads N + C, writes N   8N + 4C
//   exp, tanh, relu f(x)            reads N, writes N       8N
//   sum_all         Σ x             reads N, writes 1       4N + 4
//   sum_last        Σ over dim -1   reads N, writes rows    4N + 4·rows
//   sum_first       Σ over dim 0    reads N, writes cols    4N + 4·cols  (the bias gradient)
//   copy_heads      (B, T, NH, HS) -> (B, NH, T, HS) via permute + contiguous   8N
//   copy_transpose  (R, C) -> (C, R) via transpose + contiguous                 8N
// Shapes: the BERT-base activations of one batch, hidden (8192, 768) = 25 MB and
// ffn (8192, 3072) = 101 MB. The ops are called through the public API (autograd/ops.h),
// as a model calls them; inputs need no grad, so nothing is recorded. Each is validated once
// against a plain double-precision loop.
//
// Read next: runtime/cpu/binary.cpp, unary.cpp, reduce.cpp, copy.cpp (the kernels timed here).
#include <algorithm>
#include <cmath>
#include <functional>

#include "autograd/ops.h"
#include "bench/common.h"

namespace mase::bench {
namespace elementwise_suite {

struct Kernel {
  std::string name;   // "elementwise/<kernel>/<shape>"
  int64_t bytes = 0;  // read + written per call
  std::function<Tensors()> make;                               // seeded inputs
  std::function<Tensor(const Tensors&)> op;                    // what is timed
  std::function<std::vector<double>(const Tensors&)> ref;      // the expected output
  double atol = 1e-6, rtol = 1e-6;
};

void add_kernel(const Kernel& k) {
  add(k.name, [k](benchmark::State& st) {
    Tensors in = k.make();
    if (!validate_once(st, k.name, [&] { return compare(k.op(in), k.ref(in), k.atol, k.rtol); }))
      return;
    time_vs_memcpy(st, k.bytes, [&] {
      Tensor y = k.op(in);
      benchmark::DoNotOptimize(y.raw_data());
    });
  }, Timing::manual);
}

// Reference values computed in double, one element at a time.
template <class F>
std::vector<double> map(const Tensor& x, F f) {
  std::vector<double> v = x.to_vector<double>();
  for (double& e : v) e = f(e);
  return v;
}
template <class F>
std::vector<double> zip(const Tensor& a, const Tensor& b, F f) {
  std::vector<double> v = a.to_vector<double>(), w = b.to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) v[i] = f(v[i], w[i]);
  return v;
}
// Σ over dim 0 and over dim 1 of a (R, C) matrix, in double.
std::vector<double> sums(const Tensor& x, int dim) {
  const int64_t R = x.size(0), C = x.size(1);
  std::vector<double> v = x.to_vector<double>(), out(dim == 0 ? C : R, 0.0);
  for (int64_t r = 0; r < R; ++r)
    for (int64_t c = 0; c < C; ++c) out[dim == 0 ? c : r] += v[r * C + c];
  return out;
}

void register_matrix_kernels(const Shape& s) {
  const std::string tag = cat("/", shape_name(s));
  const int64_t N = numel(s), R = s[0], C = s[1];
  auto one = [s] { return Tensors{normal_tensor(s, 1)}; };
  auto two = [s] { return Tensors{uniform_tensor(s, 1), uniform_tensor(s, 2)}; };
  using V = std::vector<double>;

  add_kernel({"elementwise/add" + tag, 12 * N, two,
              [](const Tensors& t) { return add(t[0], t[1]); },
              [](const Tensors& t) { return zip(t[0], t[1], std::plus<double>()); }});
  add_kernel({"elementwise/mul" + tag, 12 * N, two,
              [](const Tensors& t) { return mul(t[0], t[1]); },
              [](const Tensors& t) { return zip(t[0], t[1], std::multiplies<double>()); }});
  add_kernel({"elementwise/bias_add" + tag, 8 * N + 4 * C,
              [s, C] { return Tensors{uniform_tensor(s, 1), uniform_tensor({C}, 2)}; },
              [](const Tensors& t) { return add(t[0], t[1]); },
              [C](const Tensors& t) {
                V x = t[0].to_vector<double>(), b = t[1].to_vector<double>();
                for (size_t i = 0; i < x.size(); ++i) x[i] += b[i % C];
                return x;
              }});
  add_kernel({"elementwise/exp" + tag, 8 * N, one, [](const Tensors& t) { return exp(t[0]); },
              [](const Tensors& t) { return map(t[0], [](double x) { return std::exp(x); }); }});
  add_kernel({"elementwise/tanh" + tag, 8 * N, one, [](const Tensors& t) { return tanh(t[0]); },
              [](const Tensors& t) { return map(t[0], [](double x) { return std::tanh(x); }); }});
  add_kernel({"elementwise/relu" + tag, 8 * N, one, [](const Tensors& t) { return relu(t[0]); },
              [](const Tensors& t) {
                return map(t[0], [](double x) { return x > 0 ? x : 0.0; });
              }});
  // sums accumulate in double and round once to f32: 1e-6 relative is ~8 f32 ulps
  add_kernel({"elementwise/sum_all" + tag, 4 * N + 4, one,
              [](const Tensors& t) { return sum(t[0]); },
              [](const Tensors& t) {
                V r = sums(t[0], 1);
                double total = 0;
                for (double v : r) total += v;
                return V{total};
              },
              1e-5, 1e-6});
  add_kernel({"elementwise/sum_last" + tag, 4 * N + 4 * R, one,
              [](const Tensors& t) { return sum(t[0], {-1}); },
              [](const Tensors& t) { return sums(t[0], 1); }, 1e-5, 1e-6});
  add_kernel({"elementwise/sum_first" + tag, 4 * N + 4 * C, one,
              [](const Tensors& t) { return sum(t[0], {0}); },
              [](const Tensors& t) { return sums(t[0], 0); }, 1e-5, 1e-6});
  // (R, C) -> (C, R): each output row gathers a column of the input
  add_kernel({"elementwise/copy_transpose" + tag, 8 * N, one,
              [](const Tensors& t) { return contiguous(transpose(t[0], 0, 1)); },
              [R, C](const Tensors& t) {
                V x = t[0].to_vector<double>(), y(x.size());
                for (int64_t r = 0; r < R; ++r)
                  for (int64_t c = 0; c < C; ++c) y[c * R + r] = x[r * C + c];
                return y;
              }});
}

}  // namespace elementwise_suite

void register_elementwise() {
  using namespace elementwise_suite;
  for (const Shape& s : {Shape{kTokens, kBertBase.hidden}, Shape{kTokens, kBertBase.ffn}})
    register_matrix_kernels(s);

  // the head split of attention: (B, T, NH, HS) -> (B, NH, T, HS), rows of HS contiguous floats
  const int64_t B = kBatch, T = kSeq, NH = kBertBase.heads, HS = kHeadSize;
  const Shape s{B, T, NH, HS};
  add_kernel({"elementwise/copy_heads/" + shape_name(s), 8 * numel(s),
              [s] { return Tensors{normal_tensor(s, 1)}; },
              [](const Tensors& t) { return contiguous(permute(t[0], {0, 2, 1, 3})); },
              [=](const Tensors& t) {
                std::vector<double> x = t[0].to_vector<double>(), y(x.size());
                for (int64_t b = 0; b < B; ++b)
                  for (int64_t i = 0; i < T; ++i)
                    for (int64_t h = 0; h < NH; ++h)
                      for (int64_t d = 0; d < HS; ++d)
                        y[((b * NH + h) * T + i) * HS + d] = x[((b * T + i) * NH + h) * HS + d];
                return y;
              }});
}

}  // namespace mase::bench
