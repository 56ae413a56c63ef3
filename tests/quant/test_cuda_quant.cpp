// tests/quant/test_cuda_quant.cpp — every number format and pruning mask on the GPU equals the
// CPU bit for bit (the CUDA kernels run the same element functions: runtime/kernels/
// quant_elem.h), and a QAT forward + backward on the GPU equals the CPU's within rounding.
//
// Inputs of each format's comparison: rows with ±0, subnormals, the f32 extremes, ±inf and NaN
// (in separate rows, since a block or row holding NaN/inf turns wholly NaN), random values at
// every scale from 2^−40 to 2^40, and then every midpoint between two neighbouring values the
// CPU produced — exact ties for the rounding rule. cols = 100 is no multiple of any block
// size, so every row ends in a partial block. Without a GPU the CUDA cases are skipped
// (visibly); the cases marked "(CPU)" run everywhere.
#include <doctest/doctest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <nlohmann/json.hpp>
#include <set>

#include "autograd/ops.h"
#include "helpers.h"
#include "quant/mxint8.h"
#include "quant/mxint8_linear.h"
#include "quant/prune.h"
#include "quant/quantize.h"
#include "quant/quantized_linear.h"
#include "runtime/kernels/quant_elem.h"

using namespace mase;
using namespace mase::quant;

namespace {

constexpr int64_t kCols = 100;

// Same bits, except that all NaNs are equal (NaN payloads are not part of any format).
int64_t count_differences(const std::vector<float>& a, const std::vector<float>& b, std::string* first) {
  int64_t bad = 0;
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;
    if (bad++ == 0) *first = cat("element ", i, ": CPU ", a[i], ", CUDA ", b[i]);
  }
  return bad + int64_t(a.size() != b.size());
}

// Rows 0..3 hold the special values, the rest random values at scales 2^−40 .. 2^40.
std::vector<float> edge_and_random(int64_t rows, uint64_t seed) {
  std::vector<float> v(size_t(rows * kCols));
  Generator g(seed);
  Tensor r = Tensor::empty({rows * kCols});
  normal_(r, 0, 1, g);
  Tensor e = Tensor::empty({rows});
  uniform_(e, -40, 40, g);
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < kCols; ++j)
      v[i * kCols + j] = std::ldexp(r.data<float>()[i * kCols + j], int(e.data<float>()[i]));
  const float specials[] = {0.f, -0.f, 0x1p-149f, -0x1p-149f, 0x1p-127f, 0x1.fffffcp-127f, 0x1p-126f,
                            1.f, -1.f, 0.5f, 1.5f, 2.5f, -2.5f, 0.75f, 1.97f, 3.4e38f, -3.4e38f,
                            0x1.fffffep127f, 448.f, 480.f, 1e6f, -1e-6f, 0.1f, 1.41421356f};
  int64_t j = 0;
  for (float s : specials) v[size_t(j++)] = s;        // row 0: finite specials
  v[size_t(kCols + 3)] = INFINITY;                      // row 1: +inf
  v[size_t(2 * kCols + 50)] = -INFINITY;                // row 2: −inf
  v[size_t(3 * kCols + 99)] = NAN;                      // row 3: NaN in the last partial block
  for (int64_t c = 0; c < 32; ++c) v[size_t(4 * kCols + c)] = 0.f;  // row 4: a zero block
  return v;
}

// The midpoints between neighbouring distinct finite outputs, as f32 where exact: ties.
std::vector<float> midpoints(const std::vector<float>& out, int64_t rows) {
  std::set<double> vals;
  for (float y : out)
    if (std::isfinite(y)) vals.insert(double(y));
  std::vector<float> mids;
  for (auto it = vals.begin(); it != vals.end() && std::next(it) != vals.end(); ++it) {
    const double m = (*it + *std::next(it)) / 2;
    if (double(float(m)) == m) mids.push_back(float(m));
  }
  std::vector<float> v(size_t(rows * kCols), 0.f);
  for (size_t i = 0; i < v.size() && !mids.empty(); ++i) v[i] = mids[i % mids.size()];
  return v;
}

// quantize on both devices (a fresh generator each, same seed) and count the differences.
void check_format(const Format& f, const std::vector<float>& x, int64_t rows) {
  Tensor xc = Tensor::from(x, {rows, kCols});
  Generator g1(11), g2(11);
  const std::vector<float> cpu = quantize(xc, f, g1).to_vector<float>();
  const std::vector<float> gpu = quantize(xc.detach().to(Device::cuda()), f, g2).to_vector<float>();
  std::string first;
  const int64_t bad = count_differences(cpu, gpu, &first);
  INFO(f.str(), ": ", first);
  CHECK(bad == 0);
}

std::vector<Format> formats_under_test() {
  using nlohmann::json;
  std::vector<std::pair<const char*, json>> c = {
      {"integer", {{"width", 8}, {"frac_width", 4}}},
      {"integer", {{"width", 4}, {"frac_width", 0}}},
      {"integer", {{"width", 16}, {"frac_width", 8}}},
      {"integer", {{"width", 2}, {"frac_width", 1}}},
      {"integer", {{"width", 30}, {"frac_width", 10}}},  // wider than 25 bits: the f64 path
      {"integer", {{"width", 8}, {"frac_width", 4}, {"compat", "mase"}}},
      {"minifloat_ieee", {{"width", 8}, {"exponent_width", 4}}},
      {"minifloat_ieee", {{"width", 6}, {"exponent_width", 3}}},
      {"minifloat_ieee", {{"width", 8}, {"exponent_width", 5}, {"exponent_bias", 15}}},
      {"minifloat_ieee", {{"width", 5}, {"exponent_width", 4}}},  // no fraction bits: tie flip
      {"minifloat_ieee", {{"width", 8}, {"exponent_width", 4}, {"exponent_bias", 130}}},  // f64
      {"minifloat_denorm", {{"width", 8}, {"exponent_width", 4}}},
      {"minifloat_denorm", {{"width", 4}, {"exponent_width", 2}}},  // M = 1: ties go up
      {"minifloat_denorm", {{"width", 8}, {"exponent_width", 4}, {"exponent_bias", 128}}},  // f64
      {"log", {{"width", 8}}},
      {"log", {{"width", 4}}},
      {"log", {{"width", 6}, {"exponent_bias", 3}}},
      {"log", {{"width", 8}, {"exponent_bias", 130}}},  // 2^kmin below f32 normals: f64
      {"binary", json::object()},
      {"binary", {{"bipolar", false}}},
      {"binary", {{"stochastic", true}}},
      {"binary_scaling", json::object()},
      {"binary_scaling", {{"stochastic", true}, {"bipolar", false}}},
      {"ternary", {{"scaling", true}}},
      {"ternary", {{"scaling", false}}},
      {"binary_residual", {{"levels", 2}}},
      {"binary_residual", {{"levels", 5}}},
      {"block_fp", {{"width", 6}, {"exponent_width", 8}, {"block_size", 8}}},
      {"block_fp", {{"width", 8}, {"exponent_width", 4}, {"block_size", 16}}},
      {"block_fp", {{"width", 4}, {"exponent_width", 8}, {"block_size", 32}}},
      // not a power of two: one thread per block (cuda/quant_block.cu), the others a group
      {"block_fp", {{"width", 8}, {"exponent_width", 8}, {"block_size", 12}}},
      {"block_minifloat", {{"width", 6}, {"exponent_width", 3}, {"exponent_bias_width", 8}, {"block_size", 8}}},
      {"block_minifloat", {{"width", 8}, {"exponent_width", 4}, {"exponent_bias_width", 4}, {"block_size", 16}}},
      {"block_log", {{"width", 6}, {"exponent_bias_width", 8}, {"block_size", 8}}},
      {"block_log", {{"width", 8}, {"exponent_bias_width", 4}, {"block_size", 32}}},
      {"mxint8", json::object()},
      {"mxfp8_e4m3", json::object()},
      {"mxfp8_e5m2", json::object()},
      {"mxfp6_e3m2", json::object()},
      {"mxfp6_e2m3", json::object()},
      {"mxfp4_e2m1", json::object()},
  };
  std::vector<Format> out;
  for (auto& [name, p] : c) {
    json q = p;
    const bool compat = q.contains("compat");
    q.erase("compat");
    Format f = make_format(name, q);
    f.mase_compat = compat;
    out.push_back(f);
  }
  return out;
}

}  // namespace

TEST_CASE("quant_elem: the sqrt(2) mantissas are those of the smallest floats above sqrt(2) (CPU)") {
  // log rounds the exponent up iff the mantissa m exceeds √2; no float equals √2, so "m ≥ the
  // smallest float above √2" is the test. Recomputed here in long double.
  const long double r2 = std::sqrt(2.0L);
  float f = static_cast<float>(r2);
  if (static_cast<long double>(f) < r2) f = std::nextafter(f, 2.f);
  double d = static_cast<double>(r2);
  if (static_cast<long double>(d) < r2) d = std::nextafter(d, 2.0);
  CHECK((std::bit_cast<uint32_t>(f) & 0x7FFFFF) == FloatBits<float>::kSqrt2Mant);
  CHECK((std::bit_cast<uint64_t>(d) & 0xFFFFFFFFFFFFFull) == FloatBits<double>::kSqrt2Mant);
}

TEST_CASE("quant_elem: mx_step is 2^(s-133) for every scale byte (CPU)") {
  for (uint32_t s = 0; s < 255; ++s) CHECK(mx_step(s) == std::ldexp(1.0f, int(s) - 133));
  CHECK(std::isnan(mx_step(255)));
  // the largest scale: q·2^121 stays finite (a two-step multiply 2^127·q/64 would overflow)
  CHECK(mx_decode_mul(127, mx_step(254)) == std::ldexp(127.0f, 121));
}

TEST_CASE("quant CUDA: refuses f64 and compat minifloat/log on a GPU before any kernel (CPU)") {
  // fake_cuda tensors say cuda:0 but hold host memory: the checks must throw before a kernel
  Tensor x = test::fake_cuda({4, 8}, DType::f64);
  CHECK_THROWS_AS(quantize(x, make_format("integer", {{"width", 8}})), DTypeError);
  Format f = make_format("log", {{"width", 8}});
  f.mase_compat = true;
  CHECK(test::error_message([&] { quantize(test::fake_cuda({4, 8}), f); })
            .find("runs on the CPU only") != std::string::npos);
  Tensor mu = Tensor::from({0.6f, 0.3f}, {2});
  CHECK_THROWS_AS(residual_sign(test::fake_cuda({4, 8}), mu), DeviceError);
}

TEST_CASE("quant CUDA: every format equals the CPU bit for bit") {
  const int64_t rows = 48;
  const std::vector<float> x = edge_and_random(rows, 5);
  // ties: the midpoints of what the CPU produced from x (computed everywhere, so a bad format
  // in the list fails on a machine without a GPU too)
  std::vector<std::pair<Format, std::vector<float>>> ties;
  for (const Format& f : formats_under_test()) {
    Generator g(11);
    const std::vector<float> y = quantize(Tensor::from(x, {rows, kCols}), f, g).to_vector<float>();
    ties.emplace_back(f, midpoints(y, rows));
  }
  if (!test::have_gpu()) return;
  for (const auto& [f, mids] : ties) {
    check_format(f, x, rows);
    check_format(f, mids, rows);
  }
}

TEST_CASE("quant CUDA: mxint8 packing on the fast and general paths equals the CPU") {
  if (!test::have_gpu()) return;
  // every shared exponent 0..254 (row e: block max 1.75·2^(e−127)), K = 32·3 (fast path) and
  // K = 100 (general path), and a view at an odd offset (unaligned: general path)
  for (int64_t K : {96, 100}) {
    const int64_t rows = 255;
    Generator g(3);
    Tensor x = Tensor::empty({rows, K});
    uniform_(x, -1, 1, g);
    float* p = x.data<float>();
    for (int64_t e = 0; e < rows; ++e)
      for (int64_t j = 0; j < K; ++j) {
        p[e * K + j] = e == 0 ? p[e * K + j] * 0x1p-127f : std::ldexp(p[e * K + j], int(e) - 127);
        if (j % 32 == 0 && e > 0) p[e * K + j] = std::ldexp(1.75f, int(e) - 127);
      }
    p[5 * K + 7] = NAN;
    p[9 * K + 40] = -INFINITY;
    // the second input is a view one float into the buffer: its rows are not 16-byte aligned
    Tensor xg = x.detach().to(Device::cuda());
    const std::pair<Tensor, Tensor> inputs[] = {
        {x, xg}, {x.as_strided({rows - 1, K}, {K, 1}, 1), xg.as_strided({rows - 1, K}, {K, 1}, 1)}};
    for (const auto& [in, gin] : inputs) {
      MxInt8Tensor c = mxint8_pack(in), d = mxint8_pack(gin);
      CHECK(d.elements.to_vector<int8_t>() == c.elements.to_vector<int8_t>());
      CHECK(d.scales.to_vector<uint8_t>() == c.scales.to_vector<uint8_t>());
      std::string first;
      for (Dequant how : {Dequant::multiply, Dequant::bf16})
        CHECK(count_differences(mxint8_unpack(c, how).to_vector<float>(),
                                mxint8_unpack(d, how).to_vector<float>(), &first) == 0);
      CHECK(count_differences(quantize(in, make_format("mxint8")).to_vector<float>(),
                              quantize(gin, make_format("mxint8")).to_vector<float>(), &first) == 0);
    }
  }
}

TEST_CASE("quant CUDA: residual_sign and binary_gamma: forward equal, backward within rounding") {
  std::vector<float> xv = edge_and_random(16, 9);
  for (float& v : xv)  // no inf/NaN or huge values: gradients are compared
    if (!std::isfinite(v) || std::abs(v) > 1e30f) v = 0.25f;
  Tensor x = Tensor::from(xv, {16, kCols});
  Tensor dy = test::random_tensor({16, kCols}, 4, -1, 1, DType::f32);
  auto run = [&](Device d) {
    // a fresh leaf per device (x.to(cpu) would be x itself, which must not require grad)
    Tensor xi = x.clone().to(d), mu = Tensor::from({0.5f, -0.3f, 0.125f}, {3}).to(d);
    Tensor gamma = Tensor::from({-0.7f}, {1}).to(d);
    xi.set_requires_grad(true), mu.set_requires_grad(true), gamma.set_requires_grad(true);
    Tensor y1 = residual_sign(xi, mu), y2 = binary_gamma(xi, gamma);
    Tensor dyd = dy.to(d);
    backward(sum(add(mul(y1, dyd), mul(y2, dyd))));
    return std::vector<Tensor>{y1.detach().to(Device::cpu()), y2.detach().to(Device::cpu()),
                               xi.grad().detach().to(Device::cpu()), mu.grad().detach().to(Device::cpu()),
                               gamma.grad().detach().to(Device::cpu())};
  };
  std::vector<Tensor> c = run(Device::cpu());
  if (!test::have_gpu()) return;
  std::vector<Tensor> g = run(Device::cuda());
  std::string first;
  CHECK(count_differences(c[0].to_vector<float>(), g[0].to_vector<float>(), &first) == 0);
  CHECK(count_differences(c[1].to_vector<float>(), g[1].to_vector<float>(), &first) == 0);
  CHECK(count_differences(c[2].to_vector<float>(), g[2].to_vector<float>(), &first) == 0);  // dx: elementwise
  test::check_close(g[3], c[3], 1e-5, 1e-5);  // dμ, dγ: sums in another order
  test::check_close(g[4], c[4], 1e-5, 1e-5);
}

TEST_CASE("prune CUDA: activation masks equal the CPU's (local and global, l1-norm and random)") {
  // ties: many equal magnitudes (values from a small set) so the position rule decides
  Generator g(21);
  Tensor x = Tensor::empty({37, 300});
  uniform_(x, -4, 4, g);
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i)
    p[i] = i % 3 == 0 ? std::round(p[i]) : p[i];  // a third of the values are in {0, ±1, .., ±4}
  p[17] = NAN;
  p[301] = INFINITY;
  std::vector<std::pair<PruneSpec, Tensor>> cpu;  // the CPU's masks, computed everywhere
  for (double s : {0.0, 0.1, 0.5, 0.77, 0.999, 1.0})
    for (const char* method : {"l1-norm", "random"})
      for (const char* scope : {"local", "global"}) {
        PruneSpec spec = parse_prune_spec(
            {{"sparsity", s}, {"method", method}, {"scope", scope}, {"seed", 5}}, "test");
        Generator a(5);
        a.offset = 12;
        cpu.emplace_back(spec, activation_keep_mask(x, spec, a));
      }
  if (!test::have_gpu()) return;
  const Tensor xg = x.detach().to(Device::cuda());
  for (const auto& [spec, mc] : cpu) {
    Generator b(5);
    b.offset = 12;
    Tensor mg = activation_keep_mask(xg, spec, b);
    INFO(spec.str());
    CHECK(mg.device().is_cuda());
    CHECK(mg.to_vector<uint8_t>() == mc.to_vector<uint8_t>());
    CHECK(b.offset == (spec.method == PruneMethod::random ? 12 + (x.numel() + 3) / 4 : 12));
  }
}

TEST_CASE("quant CUDA: a QAT forward and backward equals the CPU's within rounding") {
  // A QuantizedLinear per format family; the quantized inputs are bit-exact on both devices,
  // so the outputs differ only by the GEMM's summation order (cuBLAS vs OpenBLAS), and so do
  // the gradients: relative 1e-4 is far below one quantization step.
  // the CPU halves run everywhere (the configs are valid, the CPU step works), then the GPU's
  std::vector<std::pair<std::string, std::function<std::vector<Tensor>(Device)>>> steps;
  for (const char* name : {"integer", "mxint8", "block_fp", "ternary", "binary_residual"}) {
    nlohmann::json cfg = {{"name", name}};
    if (std::string(name) == "integer") cfg.update({{"data_in_width", 8}, {"data_in_frac_width", 4},
                                                   {"weight_width", 8}, {"weight_frac_width", 6},
                                                   {"bias_width", 8}, {"bias_frac_width", 4}});
    if (std::string(name) == "block_fp")
      for (const char* t : {"data_in_", "weight_", "bias_"})
        cfg.update({{std::string(t) + "width", 6}, {std::string(t) + "exponent_width", 8},
                    {std::string(t) + "block_size", 16}});
    if (std::string(name) == "ternary")
      for (const char* t : {"data_in_", "weight_", "bias_"}) cfg[std::string(t) + "scaling"] = true;
    const Tensor w0 = test::random_tensor({40, 96}, 30, -1, 1, DType::f32);
    const Tensor b0 = test::random_tensor({40}, 32, -1, 1, DType::f32);
    const Tensor x = test::random_tensor({8, 96}, 31, -1, 1, DType::f32);
    auto step = [cfg, w0, b0, x](Device d) {  // a fresh layer per device, from the same values
      Tensor w = w0.clone(), b = b0.clone();
      w.set_requires_grad(true), b.set_requires_grad(true);
      auto layer = std::make_shared<QuantizedLinear>(nn::Linear(w, b), cfg, 3, "layer");
      layer->to(d);
      Tensor xi = x.clone().to(d);  // a fresh leaf (x.to(cpu) would be x itself)
      xi.set_requires_grad(true);
      Tensor y = layer->forward(xi);
      backward(sum(mul(y, y)));
      std::vector<Tensor> out{y.detach().to(Device::cpu()), xi.grad().detach().to(Device::cpu()),
                              layer->weight.grad().detach().to(Device::cpu()), layer->bias.grad().detach().to(Device::cpu())};
      for (auto& [n, t] : layer->named_parameters())
        if (n.find("mu") != std::string::npos || n.find("gamma") != std::string::npos)
          out.push_back(t.grad().detach().to(Device::cpu()));
      return out;
    };
    steps.emplace_back(name, step);
  }
  std::vector<std::vector<Tensor>> cpu;
  for (auto& [name, step] : steps) cpu.push_back(step(Device::cpu()));
  if (!test::have_gpu()) return;
  for (size_t s = 0; s < steps.size(); ++s) {
    const std::vector<Tensor> g = steps[s].second(Device::cuda()), &c = cpu[s];
    INFO(steps[s].first);
    REQUIRE(c.size() == g.size());
    for (size_t i = 0; i < c.size(); ++i) test::check_close(g[i], c[i], 1e-4, 1e-4);
  }
  // a pass run on a model already on the GPU (mase-search's PassEvaluator does): the
  // quantizers' own parameters (μ, γ) are made on the weight's device
  Tensor w = test::random_tensor({8, 32}, 40, -1, 1, DType::f32).detach().to(Device::cuda());
  QuantizedLinear q(nn::Linear(w, Tensor()), {{"name", "binary_residual"}}, 0, "layer");
  for (auto& [n, t] : q.named_parameters()) CHECK(t.is_cuda());
  CHECK(q.forward(test::random_tensor({4, 32}, 41, -1, 1, DType::f32).detach().to(Device::cuda())).is_cuda());
}

TEST_CASE("MxInt8Linear on CUDA (packed-weight GEMM) equals the CPU's within rounding") {
  // Shapes off every tile: M = 3·37 rows, N = 70 outputs, K = 100 = 3·32 + 4 (a partial MX
  // block), and BERT-like ones (K a multiple of 32, M above one 64-row tile).
  struct Case {
    Shape x;
    int64_t out;
    bool bias;
  };
  const Case cases[] = {{{3, 37, 100}, 70, true}, {{130, 96}, 64, false}, {{2, 65, 256}, 192, true},
                        {{1, 1, 32}, 1, true}};
  for (const Case& c : cases) {
    const Tensor x = test::random_tensor(c.x, 8, -2, 2, DType::f32);
    const Tensor dy = test::random_tensor([&] { Shape s = c.x; s.back() = c.out; return s; }(), 9,
                                          -1, 1, DType::f32);
    auto run = [&](Device d) {
      manual_seed(4);  // the same weights each time, in a Linear of its own (mx shares its bias)
      nn::Linear base(c.x.back(), c.out, c.bias);
      MxInt8Linear mx(base);
      mx.to(d);
      Tensor xi = x.clone().to(d);
      xi.set_requires_grad(true);
      Tensor y = mx(xi);
      backward(sum(mul(y, dy.to(d))));
      std::vector<Tensor> out{y.detach().to(Device::cpu()), xi.grad().detach().to(Device::cpu())};
      if (c.bias) out.push_back(mx.bias.grad().detach().to(Device::cpu()));
      return out;
    };
    const std::vector<Tensor> cpu = run(Device::cpu());
    if (!test::have_gpu()) return;
    const std::vector<Tensor> gpu = run(Device::cuda());
    INFO("x ", c.x, ", out ", c.out);
    for (size_t i = 0; i < cpu.size(); ++i) test::check_close(gpu[i], cpu[i], 1e-4, 1e-4);
  }
  if (!test::gpu_present()) return;
  // the op itself: a CPU input is refused with the hint, a mismatched K is a ShapeError
  MxInt8Linear mx(nn::Linear(64, 8));
  mx.to(Device::cuda());
  CHECK_THROWS_AS(mxint8_linear(Tensor::zeros({2, 64}), mx.packed()), DeviceError);
  CHECK_THROWS_AS(mxint8_linear(Tensor::zeros({2, 63}).detach().to(Device::cuda()), mx.packed()), ShapeError);
}
