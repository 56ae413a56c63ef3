// bench/bench_gpu_quant.cpp — the gpu-quant suite: every quantizer and the MXINT8 kernels on
// the GPU, each figure paired with its baseline in the same run (bench/gpu_common.h).
//
// 1. gpu-quant/fake/<format>/<shape> — quantize(x, format) on a CUDA tensor, as a model calls
//    it (the op: allocation from the caching allocator, then the kernel), on a bert-base
//    activation (8192 × 768) and FFN activation (8192 × 3072), N(0, 1). Paired with a D2D copy of
//    the same bytes (read N floats, write N floats): vs_copy = 1.0 is copy speed.
// 2. gpu-quant/mxint8_{pack,unpack,fake}/<shape> — the MXINT8 kernels on preallocated buffers:
//      pack     read 4N, write N + N/32        unpack   read N + N/32, write 4N
//      fake     read 4N, write 4N (pack and unpack fused, no packed tensor in memory)
//    Target (issue 22): unpack >= 0.85 of the copy (vs_copy), bit-exact with the CPU.
// 3. gpu-quant/mxint8_linear/<M>x<N>x<K> — y = x·dequant(W)ᵀ + b with W kept packed
//    (cuda/mxint8_linear.cu), at BERT's Linear shapes with M = 8192 tokens, paired with
//      vs_cublas        cuBLAS sgemm (fp32) on the dequantized weight: the time of the GEMM alone
//      vs_dequant_gemm  unpack W into an fp32 temporary, then cuBLAS: the unfused path
//      vs_simple        the first, 64 × 64 kernel of cuda/mxint8_linear.cu (the ladder's step 1)
//    (ratio = baseline time / our time: above 1 is faster than the baseline).
// 4. gpu-quant/mxint8_mma/<M>x<N>x<K> — beyond the course: x and W both MXINT8, multiplied on
//    the int8 tensor cores with the per-block scales applied in fp32 (cuda/mxint8_mma.cu),
//    paired with cuBLAS fp32 sgemm on the dequantized operands (vs_cublas) and with the fp32
//    packed-weight Linear (vs_fp32_packed). TF32 figures: bench/torch_gpu_quant.py.
// 5. gpu-quant/memory/<model> — bench/bench_gpu_quant_memory.cpp.
//
// Validated once before timing: fake quantization and pack/unpack bit for bit against the CPU
// kernels on the same input (NaNs equal); the MXINT8 Linear on 64 entries against a double dot
// product of x and the CPU's dequantized weight (relative 1e-4 of Σ|x·w|).
// Read next: cuda/mxint8.cu, cuda/mxint8_linear.cu.
#include <bit>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/gpu_common.h"
#include "quant/mxint8.h"
#include "quant/quantize.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/mxint8_linear.h"

namespace mase::bench {

void register_gpu_quant_memory();  // bench/bench_gpu_quant_memory.cpp

namespace gpu_quant_suite {

using quant::Format;

const Shape kShapes[] = {{kTokens, kBertBase.hidden}, {kTokens, kBertBase.ffn}};

std::string shape_str(const Shape& s) { return cat(s[0], "x", s[1]); }

// "" when a and b hold the same bits (any NaN equals any NaN), else the first difference.
template <class T>
std::string same_bits(const std::vector<T>& a, const std::vector<T>& b) {
  if (a.size() != b.size()) return cat("sizes differ: ", a.size(), " vs ", b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    if constexpr (std::is_floating_point_v<T>) {
      if (std::isnan(a[i]) && std::isnan(b[i])) continue;
      if (std::bit_cast<uint32_t>(a[i]) == std::bit_cast<uint32_t>(b[i])) continue;
    } else if (a[i] == b[i]) {
      continue;
    }
    return cat("element ", i, ": GPU ", double(a[i]), ", CPU ", double(b[i]));
  }
  return "";
}

// ---- 1. fake quantization ---------------------------------------------------------------------
// `variant` tells apart two formats of one kind (binary and binary stochastic): benchmark names
// must be unique, and validate_once keeps one verdict per name.
void add_fake(const Shape& shape, const std::string& kind,
              const nlohmann::json& params = nlohmann::json::object(),
              const std::string& variant = "") {
  const std::string name = cat("gpu-quant/fake/", kind, variant, "/", shape_str(shape));
  const Format f = quant::make_format(kind, params);
  add(name, [name, f, shape](benchmark::State& st) {
    Tensor xc = normal_tensor(shape, 1);
    Tensor x = xc.to(Device::cuda());
    if (!validate_once(st, name, [&] {
          Generator a(3), b(3);
          return same_bits(quant::quantize(x, f, a).to_vector<float>(),
                           quant::quantize(xc, f, b).to_vector<float>());
        }))
      return;
    gpu_time_vs_copy(st, 8 * x.numel(), [&] {
      Tensor y = quant::quantize(x, f);
      benchmark::DoNotOptimize(y.raw_data());
    });
    st.SetLabel(f.str());
  }, Timing::manual);
}

// ---- 2. MXINT8 pack / unpack / fake -----------------------------------------------------------
void add_mxint8(const Shape& shape) {
  const int64_t rows = shape[0], K = shape[1], N = rows * K, nb = (K + 31) / 32;
  const std::string s = shape_str(shape);
  // inputs and outputs live for the whole benchmark: only the kernel is timed
  struct Buffers {
    Tensor xc, x, q, scales, out;
    explicit Buffers(const Shape& shape) {
      xc = normal_tensor(shape, 2);
      x = xc.to(Device::cuda());
      q = Tensor::empty(shape, DType::i8, Device::cuda());
      scales = Tensor::empty({shape[0], (shape[1] + 31) / 32}, DType::u8, Device::cuda());
      out = Tensor::empty(shape, DType::f32, Device::cuda());
    }
  };
  const std::string pack = cat("gpu-quant/mxint8_pack/", s);
  add(pack, [pack, shape, rows, K, N, nb](benchmark::State& st) {
    Buffers b(shape);
    if (!validate_once(st, pack, [&] {
          cuda::mxint8_quantize(b.q.data<int8_t>(), b.scales.data<uint8_t>(), b.x.data<float>(), rows, K);
          const quant::MxInt8Tensor ref = quant::mxint8_pack(b.xc);
          std::string e = same_bits(b.q.to_vector<int8_t>(), ref.elements.to_vector<int8_t>());
          return e.empty() ? same_bits(b.scales.to_vector<uint8_t>(), ref.scales.to_vector<uint8_t>()) : e;
        }))
      return;
    gpu_time_vs_copy(st, 4 * N + N + rows * nb, [&] {
      cuda::mxint8_quantize(b.q.data<int8_t>(), b.scales.data<uint8_t>(), b.x.data<float>(), rows, K);
    });
  }, Timing::manual);
  for (bool bf16 : {false, true}) {
    const std::string unpack = cat("gpu-quant/mxint8_unpack/", bf16 ? "bf16/" : "multiply/", s);
    add(unpack, [unpack, shape, rows, K, N, nb, bf16](benchmark::State& st) {
      Buffers b(shape);
      const quant::MxInt8Tensor ref = quant::mxint8_pack(b.xc);
      b.q = ref.elements.to(Device::cuda());  // the CPU's packed bytes, uploaded
      b.scales = ref.scales.to(Device::cuda());
      if (!validate_once(st, unpack, [&] {
            cuda::mxint8_dequantize(b.out.data<float>(), b.q.data<int8_t>(), b.scales.data<uint8_t>(),
                                    rows, K, bf16);
            return same_bits(b.out.to_vector<float>(),
                             quant::mxint8_unpack(ref, bf16 ? quant::Dequant::bf16 : quant::Dequant::multiply)
                                 .to_vector<float>());
          }))
        return;
      gpu_time_vs_copy(st, N + rows * nb + 4 * N, [&] {
        cuda::mxint8_dequantize(b.out.data<float>(), b.q.data<int8_t>(), b.scales.data<uint8_t>(), rows,
                                K, bf16);
      });
    }, Timing::manual);
  }
  const std::string fake = cat("gpu-quant/mxint8_fake/", s);
  add(fake, [fake, shape, rows, K, N](benchmark::State& st) {
    Buffers b(shape);
    if (!validate_once(st, fake, [&] {
          cuda::mxint8_fake_quantize(b.out.data<float>(), b.x.data<float>(), rows, K);
          return same_bits(b.out.to_vector<float>(),
                           quant::quantize(b.xc, quant::make_format("mxint8")).to_vector<float>());
        }))
      return;
    gpu_time_vs_copy(st, 8 * N, [&] {
      cuda::mxint8_fake_quantize(b.out.data<float>(), b.x.data<float>(), rows, K);
    });
  }, Timing::manual);
}

// ---- 3. the MXINT8 Linear vs cuBLAS -----------------------------------------------------------
// 64 entries of y against Σ_k x[m,k]·w[n,k] + b[n] in double, w the CPU's dequantized weight.
std::string check_linear(const Tensor& y, const Tensor& xc, const Tensor& wdq, const Tensor& bc) {
  const Tensor yc = y.to(Device::cpu());
  const int64_t M = xc.size(0), K = xc.size(1), N = wdq.size(0);
  const float *px = xc.data<float>(), *pw = wdq.data<float>(), *pb = bc.data<float>(), *py = yc.data<float>();
  for (int64_t s = 0; s < 64; ++s) {
    const int64_t m = (s * 977 + 5) % M, n = (s * 1571 + 3) % N;
    double ref = pb[n], mag = std::abs(double(pb[n]));
    for (int64_t k = 0; k < K; ++k) {
      ref += double(px[m * K + k]) * pw[n * K + k];
      mag += std::abs(double(px[m * K + k]) * pw[n * K + k]);
    }
    if (!(std::abs(py[m * N + n] - ref) <= 1e-4 * mag + 1e-6))
      return cat("y[", m, ", ", n, "] = ", py[m * N + n], ", expected ", ref);
  }
  return "";
}

void add_linear(int64_t M, int64_t N, int64_t K) {
  const std::string name = cat("gpu-quant/mxint8_linear/", M, "x", N, "x", K);
  add(name, [name, M, N, K](benchmark::State& st) {
    const Tensor xc = uniform_tensor({M, K}, 5), wc = uniform_tensor({N, K}, 6, -0.05, 0.05);
    const Tensor bc = uniform_tensor({N}, 7);
    const quant::MxInt8Tensor wq_cpu = quant::mxint8_pack(wc);
    const Tensor wdq_cpu = quant::mxint8_unpack(wq_cpu);
    const Tensor x = xc.to(Device::cuda()), b = bc.to(Device::cuda()), wdq = wdq_cpu.to(Device::cuda());
    const quant::MxInt8Tensor wq{wq_cpu.elements.to(Device::cuda()), wq_cpu.scales.to(Device::cuda())};
    Tensor y = Tensor::empty({M, N}, DType::f32, Device::cuda());
    Tensor y2 = Tensor::empty({M, N}, DType::f32, Device::cuda());
    Tensor wtmp = Tensor::empty({N, K}, DType::f32, Device::cuda());
    auto run = [&](int kernel) {  // 0: the op's choice (the 128 × 128 kernel here); 1: the simple one
      cuda::mxint8_linear_forward(y.data<float>(), x.data<float>(), wq.elements.data<int8_t>(),
                                  wq.scales.data<uint8_t>(), b.data<float>(), M, N, K, kernel);
    };
    auto ours = [&] { run(0); };
    auto simple = [&] { run(1); };
    // y2 = x·Wᵀ (bias left out: cuBLAS's beta = 1 epilogue would need y2 prefilled each call)
    auto cublas = [&] {
      cuda::gemm(false, true, M, N, K, 1.f, x.data<float>(), K, wdq.data<float>(), K, 0.f,
                 y2.data<float>(), N);
    };
    auto dequant_gemm = [&] {
      cuda::mxint8_dequantize(wtmp.data<float>(), wq.elements.data<int8_t>(), wq.scales.data<uint8_t>(),
                              N, K, false);
      cuda::gemm(false, true, M, N, K, 1.f, x.data<float>(), K, wtmp.data<float>(), K, 0.f,
                 y2.data<float>(), N);
    };
    if (!validate_once(st, name, [&] {
          simple();
          std::string e = check_linear(y, xc, wdq_cpu, bc);
          if (!e.empty()) return "simple kernel: " + e;
          ours();
          return check_linear(y, xc, wdq_cpu, bc);
        }))
      return;
    gpu_time_paired(st, ours, {{cublas, "vs_cublas"}, {dequant_gemm, "vs_dequant_gemm"},
                               {simple, "vs_simple"}});
    set_flops(st, 2.0 * double(M) * double(N) * double(K));
    st.SetLabel(cat("W packed ", N * K + N * ((K + 31) / 32), " B vs fp32 ", 4 * N * K, " B"));
  }, Timing::manual);
}

// ---- 4. MXINT8 × MXINT8 on the int8 tensor cores (Lab 4.3a) ---------------------------------
// x and W both packed on the GPU; validated on 64 entries against Σ dequant(x)·dequant(W) in
// double; paired with cuBLAS sgemm on the dequantized operands and with the fp32 packed-weight
// Linear (which reads W packed but multiplies in fp32).
void add_mma(int64_t M, int64_t N, int64_t K) {
  const std::string name = cat("gpu-quant/mxint8_mma/", M, "x", N, "x", K);
  add(name, [name, M, N, K](benchmark::State& st) {
    const Tensor xc = uniform_tensor({M, K}, 11), wc = uniform_tensor({N, K}, 12, -0.05, 0.05);
    const quant::MxInt8Tensor xp = quant::mxint8_pack(xc.to(Device::cuda()));
    const quant::MxInt8Tensor wp = quant::mxint8_pack(wc.to(Device::cuda()));
    const Tensor xdq = quant::mxint8_unpack(xp), wdq = quant::mxint8_unpack(wp);  // on the GPU
    Tensor y = Tensor::empty({M, N}, DType::f32, Device::cuda());
    Tensor y2 = Tensor::empty({M, N}, DType::f32, Device::cuda());
    auto mma = [&] {
      cuda::mxint8_mma_forward(y.data<float>(), xp.elements.data<int8_t>(), xp.scales.data<uint8_t>(),
                               wp.elements.data<int8_t>(), wp.scales.data<uint8_t>(), M, N, K);
    };
    auto cublas = [&] {
      cuda::gemm(false, true, M, N, K, 1.f, xdq.data<float>(), K, wdq.data<float>(), K, 0.f,
                 y2.data<float>(), N);
    };
    auto fp32_packed = [&] {
      cuda::mxint8_linear_forward(y2.data<float>(), xdq.data<float>(), wp.elements.data<int8_t>(),
                                  wp.scales.data<uint8_t>(), nullptr, M, N, K, 0);
    };
    if (!validate_once(st, name, [&] {
          mma();
          return check_linear(y, xdq.to(Device::cpu()), wdq.to(Device::cpu()), Tensor::zeros({N}));
        }))
      return;
    gpu_time_paired(st, mma, {{cublas, "vs_cublas"}, {fp32_packed, "vs_fp32_packed"}});
    set_flops(st, 2.0 * double(M) * double(N) * double(K));
    st.SetLabel("int8 mma.sync m16n8k32, scales per block of 32 in fp32");
  }, Timing::manual);
}

}  // namespace gpu_quant_suite

void register_gpu_quant() {
  using namespace gpu_quant_suite;
  if (!gpu_suite_available("gpu-quant")) return;
  for (const Shape& s : kShapes) {
    add_fake(s, "integer", {{"width", 8}, {"frac_width", 4}});
    add_fake(s, "minifloat_ieee", {{"width", 8}, {"exponent_width", 4}});
    add_fake(s, "mxint8");
    add_mxint8(s);
  }
  const Shape& s = kShapes[0];
  add_fake(s, "minifloat_denorm", {{"width", 8}, {"exponent_width", 4}});
  add_fake(s, "log", {{"width", 8}});
  add_fake(s, "binary");
  add_fake(s, "binary", {{"stochastic", true}}, "_stochastic");
  add_fake(s, "binary_scaling");
  add_fake(s, "ternary", {{"scaling", true}});
  add_fake(s, "binary_residual", {{"levels", 2}});
  add_fake(s, "block_fp", {{"width", 8}, {"exponent_width", 8}, {"block_size", 16}});
  add_fake(s, "block_minifloat",
           {{"width", 8}, {"exponent_width", 4}, {"exponent_bias_width", 8}, {"block_size", 16}});
  add_fake(s, "block_log", {{"width", 8}, {"exponent_bias_width", 8}, {"block_size", 16}});
  add_fake(s, "mxfp8_e4m3");
  const int64_t H = kBertBase.hidden, F = kBertBase.ffn;
  add_linear(kTokens, H, H);      // attention q, k, v, o
  add_linear(kTokens, F, H);      // FFN up
  add_linear(kTokens, H, F);      // FFN down
  add_mma(kTokens, H, H);
  add_mma(kTokens, F, H);
  add_mma(kTokens, H, F);
  register_gpu_quant_memory();
}

}  // namespace mase::bench
