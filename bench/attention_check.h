// bench/attention_check.h — the checks both attention suites (bench/bench_sdpa.cpp on the CPU,
// bench/bench_gpu_sdpa.cpp on the GPU) run once before timing: attention rows computed in
// double from the definition, and the fused gradients against the naive composition's.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace mase::bench {

// Attention of query row (b, h, i), no mask and no dropout, in double: q, k, v are (B, T, C)
// f32 projections on the host, split into NH heads of C / NH.
std::vector<double> attention_row(const Tensor& qx, const Tensor& kx, const Tensor& vx,
                                  int64_t NH, int64_t b, int64_t h, int64_t i);

// How close is close enough: fp32 kernels against a double reference (the default), or
// looser for TF32 tensor-core products (10-bit mantissas) and bf16 ones (7).
struct AttentionTolerance {
  double out_atol = 1e-5, out_rtol = 1e-4;    // outputs: convex combinations of v
  double grad_atol = 1e-4, grad_rtol = 1e-3;  // gradients: sums over T rows in other orders
  bool naive_too = false;  // the naive composition's GEMMs run at the same reduced precision
};

// "" when 32 sampled rows of out (B, NH, T, HS), on either device, match attention_row, else
// which row differs and how.
std::string check_attention_rows(const Tensor& out, const Tensor& qx, const Tensor& kx,
                                 const Tensor& vx, int64_t NH, const AttentionTolerance& tol = {});

// The forward check of an attention benchmark: run(fused) returns out (B, NH, T, HS) of the
// fused (true) or naive (false) version; both must pass check_attention_rows (no grad mode).
std::string check_sdpa_forward(const std::function<Tensor(bool fused)>& run, const Tensor& qx,
                               const Tensor& kx, const Tensor& vx, int64_t NH,
                               const AttentionTolerance& tol = {});

// The backward check: run(fused) runs a forward and backward of either version into the
// leaves q, k, v (their gradients cleared first); the fused gradients must match the naive.
std::string check_sdpa_backward(const std::function<void(bool fused)>& run,
                                const std::vector<Tensor>& leaves,
                                const AttentionTolerance& tol = {});

// MB the allocator of `device` hands out at the peak of fn() beyond what was in use before it
// (activations saved for backward, workspaces, gradients): the (B, NH, T, T) tensors of the
// naive attention, which the fused one never allocates.
double peak_alloc_mb(Device device, const std::function<void()>& fn);

}  // namespace mase::bench
