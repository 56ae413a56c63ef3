// bench/bench_gpu_softmax.cpp — the gpu-softmax suite: the CUDA row softmax (cuda/softmax.cu)
// forward and backward, each call paired with a device-to-device copy of the same bytes
// (gpu_common.h, gpu_time_vs_copy), the forward also with the naive composition.
//
//   gpu-softmax/fwd/<rows>x<cols>   y = softmax(x): reads + writes 8 bytes an element;
//                                   vs_copy = its bandwidth / the copy's (1.0 = copy speed),
//                                   vs_naive = time(softmax_reference on the GPU) / time(fused)
//   gpu-softmax/bwd/<rows>x<cols>   dx = y·(dy − Σ dy·y): reads dy, y and writes dx, 12 bytes
//   gpu-softmax/ladder/v<k>/<shape> version k of the forward kernel (cuda/softmax_ladder.cu:
//                                   three sweeps → online → cached row → warp per row), at
//                                   rows of 4096 and BERT-base's rows of 256, each vs copy
// Shapes: Lab 4's 4096 × 4096 (rows of 4096 floats: one block per row, the row cached in
// shared memory; the target is ≥ 85% of the copy's bandwidth) and the attention
// probabilities of a BERT batch, (B·NH·T, T) for B = 32, NH = 8 and 12, T = 128, 256, 512
// (one warp per row; the target is ≥ 1.0× torch.softmax, bench/torch_gpu.py, same shapes).
// The fused kernels are called directly (the op adds only an allocation and a tape entry);
// the naive composition runs as a user would write it, through the ops (amax, −, exp, Σ, ÷).
// Each result is validated once against a softmax computed in double on 64 sampled rows.
// Every benchmark runs a fixed kIters iterations (inputs of up to 400 MB are made once per
// run, not once per call of the body, as Google Benchmark's sizing of the count would).
//
// Read next: cuda/softmax.cu, cuda/softmax_ladder.cu (the kernels that led to it).
#include <cmath>

#include "autograd/ops.h"
#include "bench/gpu_common.h"
#include "runtime/kernels/softmax.h"

namespace mase::bench {
namespace gpu_softmax_suite {

constexpr int kIters = 30;

struct Data {
  Tensor x_cpu, x, y, dy, dx;  // x_cpu (rows, cols) on the host; the rest on the GPU
};

Data make_data(const Shape& s) {
  Data d;
  d.x_cpu = normal_tensor(s, 1) * 3.0;  // scores as attention produces them: N(0, 1)·3
  d.x = d.x_cpu.to(Device::cuda());
  d.y = Tensor::empty(s, DType::f32, Device::cuda());
  d.dy = uniform_tensor(s, 2).to(Device::cuda());
  d.dx = Tensor::empty(s, DType::f32, Device::cuda());
  return d;
}

// Rows of the sample: 64 spread over the matrix, the first and the last included.
std::vector<int64_t> sample_rows(int64_t rows) {
  std::vector<int64_t> r;
  for (int64_t i = 0; i < 64; ++i) r.push_back(std::min(rows - 1, i * (rows / 63)));
  return r;
}

// "" when y (GPU) is softmax(x) on the sampled rows (and, with dy/dx, dx its backward).
std::string check(const Data& d, const Tensor* dx_gpu) {
  const int64_t cols = d.x_cpu.size(1);
  const float* x = d.x_cpu.data<float>();
  for (int64_t r : sample_rows(d.x_cpu.size(0))) {
    std::vector<double> y(cols), want(cols);
    double m = -INFINITY, s = 0;
    for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(x[r * cols + c]));
    for (int64_t c = 0; c < cols; ++c) s += (y[c] = std::exp(x[r * cols + c] - m));
    for (int64_t c = 0; c < cols; ++c) y[c] /= s;
    const Tensor got_y = select(d.y, 0, r).to(Device::cpu());
    if (!dx_gpu) {  // probabilities ≤ 1: 1e-6 absolute is a few f32 ulps of the largest
      const std::string err = compare(got_y, y, 1e-6, 1e-4);
      if (!err.empty()) return cat("row ", r, ": ", err);
      continue;
    }
    // backward from the kernel's own y: dx = y·(dy − Σ dy·y)
    const std::vector<double> yk = got_y.to_vector<double>();
    const std::vector<double> dy = select(d.dy, 0, r).to(Device::cpu()).to_vector<double>();
    double sum = 0;
    for (int64_t c = 0; c < cols; ++c) sum += dy[c] * yk[c];
    for (int64_t c = 0; c < cols; ++c) want[c] = yk[c] * (dy[c] - sum);
    const std::string err = compare(select(*dx_gpu, 0, r).to(Device::cpu()), want, 1e-6, 1e-4);
    if (!err.empty()) return cat("row ", r, " of dx: ", err);
  }
  return "";
}

// A forward benchmark: `version` 0 is softmax_forward (paired with the naive composition too),
// 1 .. kSoftmaxVersions a rung of the ladder (cuda/softmax_ladder.cu).
void add_forward(const std::string& name, const Shape& s, const std::string& what, int version) {
  add(name, [=](benchmark::State& st) {
    const int64_t rows = s[0], cols = s[1];
    Data d = make_data(s);
    auto kernel = [&] {
      if (version == 0) cuda::softmax_forward(d.y.data<float>(), d.x.data<float>(), rows, cols);
      else cuda::softmax_forward_version(version, d.y.data<float>(), d.x.data<float>(), rows, cols);
    };
    if (!validate_once(st, name, [&] {
          kernel();
          return check(d, nullptr);
        }))
      return;
    std::vector<Baseline> also;
    if (version == 0)
      also.push_back({[&] {
        Tensor y = softmax_reference(d.x);
        benchmark::DoNotOptimize(y.raw_data());
      }, "vs_naive"});
    gpu_time_vs_copy(st, 8 * rows * cols, kernel, also);
    st.SetLabel(what);
  }, Timing::manual)->Iterations(kIters);
}

void add_backward(const Shape& s, const std::string& what) {
  const std::string name = "gpu-softmax/bwd/" + shape_name(s);
  add(name, [=](benchmark::State& st) {
    const int64_t rows = s[0], cols = s[1];
    Data d = make_data(s);
    auto kernel = [&] {
      cuda::softmax_backward(d.dx.data<float>(), d.dy.data<float>(), d.y.data<float>(), rows,
                             cols);
    };
    if (!validate_once(st, name, [&] {
          cuda::softmax_forward(d.y.data<float>(), d.x.data<float>(), rows, cols);
          kernel();
          return check(d, &d.dx);
        }))
      return;
    gpu_time_vs_copy(st, 12 * rows * cols, kernel);
    st.SetLabel(what);
  }, Timing::manual)->Iterations(kIters);
}

}  // namespace gpu_softmax_suite

void register_gpu_softmax() {
  using namespace gpu_softmax_suite;
  if (!gpu_suite_available("gpu-softmax")) return;
  const Shape lab{4096, 4096}, bert{kBatch * kBertBase.heads * kSeq, kSeq};
  std::vector<std::pair<Shape, std::string>> shapes{{lab, "Lab 4's matrix: rows of 4096 floats"}};
  for (int64_t heads : {kBertConfigs[2].heads, kBertBase.heads})
    for (int64_t T : {128, 256, 512})
      shapes.push_back({{kBatch * heads * T, T},
                        cat("attention probabilities, B=", kBatch, " NH=", heads, " T=", T)});
  for (const auto& [s, what] : shapes) {
    add_forward("gpu-softmax/fwd/" + shape_name(s), s, what, 0);
    add_backward(s, what);
  }
  // the ladder: each version of the forward kernel where it applies, at rows of 4096 and 256
  for (const Shape& s : {lab, bert})
    for (int v = 1; v <= cuda::kSoftmaxVersions; ++v)
      if (cuda::softmax_version_applies(v, s[1]))
        add_forward(cat("gpu-softmax/ladder/v", v, "/", shape_name(s)), s,
                    cat("ladder v", v, s == lab ? ", rows of 4096" : ", bert-base T=256"), v);
}

}  // namespace mase::bench
