// bench/bench_int8.cpp — the int8 suite: quantized Linears that compute in integers
// (quant/integer_linear.h) against our fp32 path, kernel by kernel and model by model.
//
// 1. int8/gemm/<model>/linear_<in>x<out>/<format> — one Linear of BERT at M = 8192 token rows:
//    y = Q(x)·Q(W)ᵀ as integer_linear runs it (x quantized on the fly to int8 codes, the int8
//    GEMM on the weight packed once, scales after accumulation), each call paired with the
//    fp32 GEMM of the same shape (OpenBLAS sgemm, x·Wᵀ; time_paired):
//      flops      2·M·N·K / time — "ops" of the integer product counted like fp32 flops
//      vs_sgemm   sgemm time / integer time: the speed-up over our fp32 Linear's GEMM
//    <format> is mxint8 (blocks of 32, a scale per block) or int8 (integer width 8, frac 4:
//    one scale per tensor, so the whole K accumulates in int32). The label names the kernel.
// 2. int8/eval/<model>/<format> — a whole eval forward (B 32, T 256, as e2e/<model>/eval) of
//    the model with every Linear quantized, computed in integers (integer_inference: Int8Linear
//    layers holding only the packed weights), each call paired with
//      vs_fp32   the plain fp32 model's eval forward: its time / the integer model's
//      vs_fake   the same quantized model run fake-quantized in fp32 (QuantizedLinear with
//                set_integer_kernels(false)): what the labs measured before
//      vs_whole_ffn  the same integer model with each layer's FFN run whole (BertLayer::
//                ffn_chunks off: the (M, I) intermediate written out between the blocks) —
//                what running the FFN in row chunks buys (models/fusion.h, ffn_in_chunks)
//    and weight_MB / fp32_weight_MB: the Linear weights as packed int8 (+ scales) and as fp32.
//    Validated once: the integer model's logits within 2e-3 (absolute, logits are ~0.1) of the
//    fake-quantized model's.
//
// 3. int8/quantize/<format>/k<K> — the activation quantizer alone on 8192 rows of K (the codes
//    every integer Linear makes of its input first), beside a memcpy of its bytes (vs_memcpy).
//    <format>: mxint8 (a scale per 32) or integer (Q4.4, one scale).
//
// 4. int8/vnni_peak — vpdpbusd on registers only, every thread (bench/peak.h): the ceiling of
//    the int8 kernels, as ladder/fma_peak is the fp32 GEMMs'. flops counts each of its 64
//    multiply-adds per instruction as 2, like the GEMM lines. Skipped without VNNI.
//
// Read next: runtime/kernels/int8_gemm.h, docs/lab4.md (4.3a: the figures).
#include <chrono>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/common.h"
#include "bench/peak.h"
#include "models/bert.h"
#include "models/fusion.h"
#include "quant/integer_linear.h"
#include "quant/passes.h"
#include "quant/quantize.h"
#include "runtime/cpu_features.h"
#include "runtime/kernels/matmul.h"

namespace mase::bench {
namespace int8_suite {

using quant::Format;

Format bench_format(const std::string& name) {
  if (name == "int8") return quant::make_format("integer", {{"width", 8}, {"frac_width", 4}});
  return quant::make_format("mxint8");
}

nlohmann::json layer_config(const std::string& name) {
  if (name == "int8")
    return {{"name", "integer"}, {"data_in_width", 8}, {"data_in_frac_width", 4},
            {"weight_width", 8}, {"weight_frac_width", 4}, {"bias_width", 8}, {"bias_frac_width", 4}};
  return {{"name", "mxint8"}};
}

void add_gemm(const BertConfig& cfg, int64_t in, int64_t out, const std::string& fmt) {
  const std::string name = cat("int8/gemm/", cfg.name, "/linear_", in, "x", out, "/", fmt);
  add(name, [name, in, out, fmt](benchmark::State& st) {
    const int64_t M = kTokens;
    const Format f = bench_format(fmt);
    Tensor x = normal_tensor({M, in}, 1), w = uniform_tensor({out, in}, 2, -0.1, 0.1);
    Tensor y32 = Tensor::empty({M, out});
    NoGradGuard no_grad;
    const quant::Int8Weight pw(w, f, f);
    Tensor y;
    auto integer = [&] { y = quant::integer_linear(x, f, pw); };
    auto fp32 = [&] {
      cpu::gemm<float>(false, true, M, out, in, 1.f, x.data<float>(), in, w.data<float>(), in,
                       0.f, y32.data<float>(), out);
    };
    integer();
    if (!validate_once(st, name, [&] {
          // against fake quantization in fp32: same values up to reassociation
          const Tensor ref = linear(quant::quantize(x, f), quant::quantize(w, f));
          return compare(y, ref.to_vector<double>(), 1e-3, 1e-4);
        }))
      return;
    time_paired(st, integer, fp32, "vs_sgemm");
    set_flops(st, 2.0 * double(M) * double(out) * double(in));
    st.SetLabel(cat("M=", M, " N=", out, " K=", in, " ", cpu::int8_isa_name(pw.packed().isa),
                    " block ", pw.packed().block));
  }, Timing::manual)->MinTime(1.0);
}

struct EvalModels {
  BertSetup fp32, fake, integer;
  int64_t fp32_weight_bytes = 0, packed_weight_bytes = 0;
};

void eval_forward(BertSetup& s) {
  NoGradGuard no_grad;
  s.model->eval();
  Tensor logits = s.model->forward(s.ids, s.mask).logits;
  benchmark::DoNotOptimize(logits.raw_data());
}

void add_eval(const char* model, const std::string& fmt) {
  const std::string name = cat("int8/eval/", model, "/", fmt);
  add(name, [name, model, fmt](benchmark::State& st) {
    EvalModels m{make_bert_setup(model), make_bert_setup(model), make_bert_setup(model)};
    const nlohmann::json q = {{"by", "type"}, {"default", {{"config", layer_config(fmt)}}}};
    for (BertSetup* s : {&m.fake, &m.integer}) {
      s->opt.reset();
      (void)quant::quantize(*s->model, q);
      nn::fuse_kernels(*s->model);
    }
    const quant::IntegerInferenceReport r = quant::integer_inference(*m.integer.model);
    nn::fuse_kernels(*m.integer.model);  // the blocks the pass touched get their fused kernels back
    for (BertSetup* s : {&m.fp32, &m.fake, &m.integer}) s->model->eval();  // no dropout
    auto fake = [&] {
      quant::set_integer_kernels(false);
      eval_forward(m.fake);
      quant::set_integer_kernels(true);
    };
    if (!validate_once(st, name, [&] {
          NoGradGuard no_grad;
          quant::set_integer_kernels(false);
          const Tensor a = m.fake.model->forward(m.fake.ids, m.fake.mask).logits;
          quant::set_integer_kernels(true);
          const Tensor b = m.integer.model->forward(m.integer.ids, m.integer.mask).logits;
          if (r.converted.empty()) return std::string("no layer was converted");
          return compare(b, a.to_vector<double>(), 2e-3, 0.0);
        }))
      return;
    std::vector<nn::BertLayer*> chunked;  // the layers the fusion pass gave row chunks
    for (auto& [path, mod] : m.integer.model->named_modules())
      if (auto* l = dynamic_cast<nn::BertLayer*>(mod.get()); l && l->ffn_chunks) chunked.push_back(l);
    auto whole_ffn = [&] {
      for (auto* l : chunked) l->ffn_chunks = false;
      eval_forward(m.integer);
      for (auto* l : chunked) l->ffn_chunks = true;
    };
    eval_forward(m.integer);  // warm up the allocator's cache
    whole_ffn();
    time_paired(st, [&] { eval_forward(m.integer); },
                {{[&] { eval_forward(m.fp32); }, "vs_fp32"}, {fake, "vs_fake"}, {whole_ffn, "vs_whole_ffn"}});
    st.counters["tokens_per_s"] =
        benchmark::Counter(double(kTokens), benchmark::Counter::kIsIterationInvariantRate);
    st.counters["weight_MB"] = double(r.packed_weight_bytes) / 1e6;
    st.counters["fp32_weight_MB"] = double(r.fp32_weight_bytes) / 1e6;
    std::string kernels;
    for (const auto& [k, n] : r.kernels) kernels += cat(" ", n, "x ", k);
    st.SetLabel(cat(r.converted.size(), " Int8Linear:", kernels));
  }, Timing::manual)->MinTime(2.0);
}

// The activation quantizers alone (runtime/cpu/int8_quantize.cpp), M = 8192 rows of K: a pass
// over memory (4 bytes read, 1 written per element), so timed beside a memcpy of those bytes.
void add_quantize(int64_t K, const std::string& fmt) {
  const std::string name = cat("int8/quantize/", fmt, "/k", K);
  add(name, [K, fmt](benchmark::State& st) {
    const int64_t M = kTokens;
    const Tensor x = normal_tensor({M, K}, 3);
    std::vector<int8_t> q(size_t(M * K));
    std::vector<float> scales(size_t(M * ((K + 31) / 32)));
    auto run = [&] {
      if (fmt == "mxint8") cpu::int8_quantize_mxint8(q.data(), scales.data(), x.data<float>(), M, K);
      else cpu::int8_quantize_integer(q.data(), scales.data(), x.data<float>(), M, K, 8, 4);
    };
    run();
    time_vs_memcpy(st, 5 * M * K, run);
    const bool avx512 = cpu_features().avx512();
    st.SetLabel(cat("M=", M, " K=", K, fmt == "mxint8" ? (avx512 ? " avx512" : " avx2") : " avx2"));
  }, Timing::manual);
}

void add_peak() {
  add("int8/vnni_peak", [](benchmark::State& st) {
    const CpuFeatures& f = cpu_features();
    if (!(f.avx512() && f.avx512_vnni)) {
      st.SkipWithError("skipped: this CPU has no AVX512-VNNI");
      return;
    }
    time_peak(st, PeakOp::vnni_avx512);
    st.SetLabel("AVX512-VNNI vpdpbusd, 24 accumulators per thread");
  }, Timing::manual);
}

}  // namespace int8_suite

void register_int8() {
  using namespace int8_suite;
  add_peak();
  for (const BertConfig& cfg : kBertConfigs) {
    const int64_t H = cfg.hidden, F = cfg.ffn;
    for (const auto& [in, out] : {std::pair{H, H}, {H, F}, {F, H}})
      for (const char* fmt : {"mxint8", "int8"}) add_gemm(cfg, in, out, fmt);
  }
  for (const int64_t K : {128, 512})
    for (const char* fmt : {"mxint8", "integer"}) add_quantize(K, fmt);
  for (const char* model : {"bert-tiny", "bert-mini", "bert-small"})
    for (const char* fmt : {"mxint8", "int8"}) add_eval(model, fmt);
}

}  // namespace mase::bench
