// bench/bench_gpu_fused.cpp — the gpu-fused suite: the training step's memory-bound CUDA
// kernels other than softmax and attention, each validated once against its CPU twin and
// timed call by call beside a device-to-device copy of its bytes (gpu_common.h: vs_copy, 1.0 =
// copy speed). These are the kernels the H100 profile of bert-small's step put at 16 of its
// 29 ms TF32 backward (docs/performance.md): LayerNorm, the bias gradients, bias + GELU, the
// embedding gradient.
//
//   gpu-fused/layer_norm/fwd/<R>x<C>   y, mean, rstd from x: reads + writes 8·R·C bytes
//   gpu-fused/layer_norm/bwd/<R>x<C>   dx (rows) and dweight, dbias (column sums over R rows):
//                                      12·R·C bytes
//   gpu-fused/bias_gelu/fwd/<R>x<C>    y = gelu(x + b): 8·R·C
//   gpu-fused/bias_gelu/bwd/<R>x<C>    dx and dbias = Σ_rows dx: 12·R·C
//   gpu-fused/bias_grad/<R>x<C>        Σ_rows dy, a Linear's bias gradient: 4·R·C
//   gpu-fused/embedding_bwd/<N>x<C>/V<V>  dW[ids[n]] += dy[n] in the CPU's order: 4·N·C + the
//                                      touched rows of dW read and written (V = 2: token types,
//                                      every row onto one of two; V = 16000: words)
//   gpu-fused/adamw/<n>                one AdamW step over n parameters: 28·n
// R = 8192 (B 32 × T 256), C = bert-small's and bert-base's widths. Results are compared with
// the CPU twin (runtime/cpu/…): elementwise ones within 1e-5, sums over 8192 rows within 1e-4
// relative (another order of float additions), the embedding gradient bit for bit.
// Read next: cuda/layer_norm.cu, cuda/column_sums.cuh, cuda/gelu.cu, cuda/embedding.cu.
#include <algorithm>
#include <set>

#include "bench/gpu_common.h"
#include "runtime/kernels/adamw.h"
#include "runtime/kernels/embedding.h"
#include "runtime/kernels/gelu.h"
#include "runtime/kernels/layer_norm.h"
#include "runtime/kernels/reduce.h"

namespace mase::bench {
namespace gpu_fused_suite {

constexpr int kIters = 30;
constexpr double kEps = 1e-12;  // BERT's LayerNorm ε

Tensor gpu(const Tensor& host) { return host.to(Device::cuda()); }
float* f(Tensor& t) { return t.data<float>(); }

// "" when the GPU tensor equals the CPU one within atol + rtol·|want|
std::string same(const Tensor& got_gpu, const Tensor& want_cpu, double atol, double rtol,
                 const char* what) {
  const std::string err =
      compare(got_gpu.to(Device::cpu()), want_cpu.to_vector<double>(), atol, rtol);
  return err.empty() ? err : cat(what, ": ", err);
}

void add_layer_norm(int64_t R, int64_t C) {
  const std::string shape = shape_name({R, C});
  // forward
  const std::string fwd = "gpu-fused/layer_norm/fwd/" + shape, bwd = "gpu-fused/layer_norm/bwd/" + shape;
  add(fwd, [=](benchmark::State& st) {
    Tensor x = uniform_tensor({R, C}, 1), w = uniform_tensor({C}, 2), b = uniform_tensor({C}, 3);
    Tensor y = Tensor::empty({R, C}), mean = Tensor::empty({R}), rstd = Tensor::empty({R});
    cpu::layer_norm_forward<float>(f(y), f(mean), f(rstd), f(x), f(w), f(b), R, C, kEps);
    Tensor gx = gpu(x), gw = gpu(w), gb = gpu(b), gy = gpu(y), gm = gpu(mean), gr = gpu(rstd);
    auto kernel = [&] {
      cuda::layer_norm_forward(f(gy), f(gm), f(gr), f(gx), f(gw), f(gb), R, C, kEps);
    };
    if (!validate_once(st, fwd, [&] {
          kernel();
          std::string e = same(gy, y, 1e-5, 1e-5, "y");
          return e.empty() ? same(gr, rstd, 0, 1e-5, "rstd") : e;
        }))
      return;
    gpu_time_vs_copy(st, 8 * R * C, kernel);
  }, Timing::manual)->Iterations(kIters);
  // backward: the row pass and the column sums together, as the op runs them
  add(bwd, [=](benchmark::State& st) {
    Tensor x = uniform_tensor({R, C}, 1), w = uniform_tensor({C}, 2), b = uniform_tensor({C}, 3);
    Tensor dy = uniform_tensor({R, C}, 4), y = Tensor::empty({R, C}), mean = Tensor::empty({R}),
           rstd = Tensor::empty({R}), dx = Tensor::empty({R, C}), dw = Tensor::empty({C}),
           db = Tensor::empty({C});
    cpu::layer_norm_forward<float>(f(y), f(mean), f(rstd), f(x), f(w), f(b), R, C, kEps);
    cpu::layer_norm_backward<float>(f(dx), f(dw), f(db), f(dy), f(x), f(w), f(mean), f(rstd), R, C);
    Tensor gx = gpu(x), gw = gpu(w), gdy = gpu(dy), gm = gpu(mean), gr = gpu(rstd), gdx = gpu(dx),
           gdw = gpu(dw), gdb = gpu(db);
    auto kernel = [&] {
      cuda::layer_norm_backward(f(gdx), f(gdw), f(gdb), f(gdy), f(gx), f(gw), f(gm), f(gr), R, C);
    };
    if (!validate_once(st, bwd, [&] {
          kernel();
          std::string e = same(gdx, dx, 1e-5, 1e-4, "dx");
          if (e.empty()) e = same(gdw, dw, 1e-3, 1e-4, "dweight");
          return e.empty() ? same(gdb, db, 1e-3, 1e-4, "dbias") : e;
        }))
      return;
    gpu_time_vs_copy(st, 12 * R * C, kernel);
  }, Timing::manual)->Iterations(kIters);
}

void add_bias_gelu(int64_t R, int64_t C) {
  const std::string shape = shape_name({R, C});
  const std::string fwd = "gpu-fused/bias_gelu/fwd/" + shape, bwd = "gpu-fused/bias_gelu/bwd/" + shape;
  add(fwd, [=](benchmark::State& st) {
    Tensor x = uniform_tensor({R, C}, 5, -3, 3), b = uniform_tensor({C}, 6), y = Tensor::empty({R, C});
    cpu::bias_gelu_forward<float>(f(y), f(x), f(b), R, C);
    Tensor gx = gpu(x), gb = gpu(b), gy = gpu(y);
    auto kernel = [&] { cuda::bias_gelu_forward(f(gy), f(gx), f(gb), R, C); };
    if (!validate_once(st, fwd, [&] {
          kernel();
          return same(gy, y, 1e-5, 1e-5, "y");
        }))
      return;
    gpu_time_vs_copy(st, 8 * R * C, kernel);
  }, Timing::manual)->Iterations(kIters);
  add(bwd, [=](benchmark::State& st) {
    Tensor x = uniform_tensor({R, C}, 5, -3, 3), b = uniform_tensor({C}, 6),
           dy = uniform_tensor({R, C}, 7), dx = Tensor::empty({R, C}), db = Tensor::empty({C});
    cpu::bias_gelu_backward<float>(f(dx), f(db), f(dy), f(x), f(b), R, C);
    Tensor gx = gpu(x), gb = gpu(b), gdy = gpu(dy), gdx = gpu(dx), gdb = gpu(db);
    auto kernel = [&] { cuda::bias_gelu_backward(f(gdx), f(gdb), f(gdy), f(gx), f(gb), R, C); };
    if (!validate_once(st, bwd, [&] {
          kernel();
          const std::string e = same(gdx, dx, 1e-5, 1e-5, "dx");
          return e.empty() ? same(gdb, db, 1e-3, 1e-4, "dbias") : e;
        }))
      return;
    gpu_time_vs_copy(st, 12 * R * C, kernel);
  }, Timing::manual)->Iterations(kIters);
}

void add_bias_grad(int64_t R, int64_t C) {
  const std::string name = "gpu-fused/bias_grad/" + shape_name({R, C});
  add(name, [=](benchmark::State& st) {
    Tensor dy = uniform_tensor({R, C}, 8), db = Tensor::empty({C});
    cpu::sum_forward<float>(f(db), f(dy), 1, R, C);
    Tensor gdy = gpu(dy), gdb = gpu(db);
    auto kernel = [&] { cuda::sum_forward(f(gdb), f(gdy), 1, R, C); };
    if (!validate_once(st, name, [&] {
          kernel();
          return same(gdb, db, 1e-3, 1e-4, "dbias");
        }))
      return;
    gpu_time_vs_copy(st, 4 * R * C, kernel);
  }, Timing::manual)->Iterations(kIters);
}

void add_embedding_bwd(int64_t N, int64_t C, int64_t V) {
  const std::string name = cat("gpu-fused/embedding_bwd/", shape_name({N, C}), "/V", V);
  add(name, [=](benchmark::State& st) {
    Tensor dy = uniform_tensor({N, C}, 9), dw = Tensor::zeros({V, C});
    Tensor ids = Tensor::empty({N}, DType::i32);
    std::set<int32_t> touched;
    for (int64_t n = 0; n < N; ++n) {  // runs of equal ids, as padding and token types make
      const int32_t id = static_cast<int32_t>(((n / 5) * 7919) % V);
      ids.data<int32_t>()[n] = id;
      touched.insert(id);
    }
    cpu::embedding_backward<float>(f(dw), f(dy), ids.data<int32_t>(), N, C);
    Tensor gdy = gpu(dy), gids = gpu(ids), gdw = gpu(Tensor::zeros({V, C}));
    auto kernel = [&] { cuda::embedding_backward(f(gdw), f(gdy), gids.data<int32_t>(), N, C, V); };
    if (!validate_once(st, name, [&] {
          kernel();  // onto zeros: the CPU's sums, in its order, bit for bit
          return same(gdw, dw, 0, 0, "dweight");
        }))
      return;
    gpu_time_vs_copy(st, 4 * N * C + 4 * N + 8 * static_cast<int64_t>(touched.size()) * C, kernel);
    st.SetLabel(cat(touched.size(), " rows of dW touched"));
  }, Timing::manual)->Iterations(kIters);
}

void add_adamw(int64_t n) {
  const std::string name = cat("gpu-fused/adamw/", n);
  add(name, [=](benchmark::State& st) {
    Tensor p = uniform_tensor({n}, 10), m = uniform_tensor({n}, 11, -0.01, 0.01),
           v = uniform_tensor({n}, 12, 0, 0.001), g = uniform_tensor({n}, 13);
    const AdamWScalars s{1 - 1e-4 * 0.01, 0.9, 0.999, 1e-8, 1e-4 / (1 - 0.9), std::sqrt(1 - 0.999)};
    Tensor gp = gpu(p), gm = gpu(m), gv = gpu(v), gg = gpu(g);
    if (!validate_once(st, name, [&] {
          cuda::adamw_step(f(gp), f(gm), f(gv), f(gg), s, n);
          cpu::adamw_step<float>(f(p), f(m), f(v), f(g), s, n);
          std::string e = same(gp, p, 1e-6, 1e-5, "param");
          if (e.empty()) e = same(gm, m, 1e-8, 1e-5, "exp_avg");
          return e.empty() ? same(gv, v, 1e-9, 1e-5, "exp_avg_sq") : e;
        }))
      return;
    gpu_time_vs_copy(st, 28 * n, [&] { cuda::adamw_step(f(gp), f(gm), f(gv), f(gg), s, n); });
  }, Timing::manual)->Iterations(kIters);
}

}  // namespace gpu_fused_suite

void register_gpu_fused() {
  using namespace gpu_fused_suite;
  if (!gpu_suite_available("gpu-fused")) return;
  for (const BertConfig& b : {kBertConfigs[2], kBertBase}) {
    add_layer_norm(kTokens, b.hidden);
    add_bias_gelu(kTokens, b.ffn);
    add_bias_grad(kTokens, b.hidden);
    add_bias_grad(kTokens, b.ffn);
  }
  add_embedding_bwd(kTokens, kBertBase.hidden, 2);       // token types
  add_embedding_bwd(kTokens, kBertBase.hidden, kVocab);  // words
  add_adamw(int64_t(1) << 25);
}

}  // namespace mase::bench
