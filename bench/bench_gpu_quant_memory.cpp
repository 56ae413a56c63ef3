// bench/bench_gpu_quant_memory.cpp — gpu-quant/memory/<model>: the GPU memory of a BERT with
// fp32 Linear weights and with the same Linears stored as packed MXINT8 (Lab 4.3d, measured).
//
// One run per model (bert-small, bert-base; vocabulary 16000), no timing. The model is built
// on the CPU, moved to the GPU, measured; then quant::mxint8_weights packs every Linear on the
// GPU (MxInt8Linear: int8 elements + one E8M0 byte per 32, the fp32 weights freed) and it is
// measured again. Two views of "memory", each before and after:
//   alloc_*_MB    the caching allocator's bytes in use by tensors (runtime/allocator.h): the
//                 model's parameters and buffers, exactly
//   driver_*_MB   cudaMemGetInfo: total − free, minus what it was before the model existed,
//                 after empty_cache (cached blocks handed back): what the rest of the GPU sees,
//                 rounded up to the driver's allocation granularity
//   peak_fwd_*_MB the allocator's peak during one no-grad forward of a 32 × 256 batch: weights
//                 plus activations and workspaces (which MXINT8 does not shrink), and, for the
//                 packed model, no fp32 copy of any weight (the CUDA MXINT8 Linear decodes tiles)
// and the arithmetic to read them against (quant::ModelBytes): linear_fp32_MB → linear_mx_MB is
// 32 → 8.25 bits per element (−74.2%), while embeddings, LayerNorms and biases stay fp32, so the
// whole model saves less: model_saving is that measured ratio.
#include "bench/gpu_common.h"
#include "quant/mxint8_linear.h"
#include "runtime/allocator.h"
#include "runtime/kernels/gpu_timing.h"

namespace mase::bench {
namespace gpu_quant_memory_suite {

struct Memory {
  double alloc_mb = 0, driver_mb = 0, peak_fwd_mb = 0;
};

double mb(double bytes) { return bytes / 1e6; }

// used_before: the driver's used bytes before the model existed
Memory measure(nn::BertForSequenceClassification& model, const Tensor& ids, const Tensor& mask,
               size_t used_before) {
  const Device gpu = Device::cuda();
  Memory m;
  empty_cache(gpu);  // hand cached blocks back, so the driver sees what is in use
  m.alloc_mb = mb(double(allocator_stats(gpu).in_use_bytes));
  size_t free_b = 0, total_b = 0;
  cuda::memory_info(&free_b, &total_b);
  m.driver_mb = mb(double(total_b - free_b) - double(used_before));
  reset_peak_stats(gpu);
  {
    NoGradGuard no_grad;
    model.eval();
    const nn::SequenceClassifierOutput out = model.forward(ids, mask);
    (void)out.logits.to(Device::cpu());  // waits for the GPU
  }
  m.peak_fwd_mb = mb(double(allocator_stats(gpu).peak_in_use_bytes));
  return m;
}

void add_memory(const char* name) {
  add(cat("gpu-quant/memory/", name), [name](benchmark::State& st) {
    const Device gpu = Device::cuda();
    empty_cache(gpu);
    size_t free0 = 0, total = 0;
    cuda::memory_info(&free0, &total);
    const size_t used_before = total - free0;
    manual_seed(0);
    auto model = std::make_shared<nn::BertForSequenceClassification>(
        nn::BertConfig::preset(name, kVocab));
    std::vector<int32_t> ids(kTokens);
    for (int64_t i = 0; i < kTokens; ++i) ids[i] = 1 + static_cast<int32_t>(philox_word(7, 0, i) % (kVocab - 1));
    const Tensor ids_g = Tensor::from(ids, {kBatch, kSeq}).to(gpu);
    const Tensor mask_g = Tensor::ones({kBatch, kSeq}, DType::i32).to(gpu);
    model->to(gpu);
    const Memory fp32 = measure(*model, ids_g, mask_g, used_before);
    const quant::MxInt8Report report = quant::mxint8_weights(*model);  // packs on the GPU
    const Memory mx = measure(*model, ids_g, mask_g, used_before);
    for (auto _ : st) {
    }  // nothing to time: the figures are the counters
    st.counters["alloc_fp32_MB"] = fp32.alloc_mb;
    st.counters["alloc_mx_MB"] = mx.alloc_mb;
    st.counters["driver_fp32_MB"] = fp32.driver_mb;
    st.counters["driver_mx_MB"] = mx.driver_mb;
    st.counters["peak_fwd_fp32_MB"] = fp32.peak_fwd_mb;
    st.counters["peak_fwd_mx_MB"] = mx.peak_fwd_mb;
    st.counters["linear_fp32_MB"] = mb(double(report.bytes.packed.fp32_bytes()));
    st.counters["linear_mx_MB"] = mb(double(report.bytes.packed.packed_bytes()));
    st.counters["model_saving"] = fp32.alloc_mb > 0 ? 1.0 - mx.alloc_mb / fp32.alloc_mb : 0.0;
    st.counters["expected_saving"] = report.bytes.saving();
    st.SetLabel(cat(report.layers.size(), " Linears packed, ",
                    report.bytes.packed.bits_per_element(), " bits/element"));
  })->Iterations(1);
}

}  // namespace gpu_quant_memory_suite

void register_gpu_quant_memory() {
  using namespace gpu_quant_memory_suite;
  add_memory("bert-small");
  add_memory("bert-base");
}

}  // namespace mase::bench
