// quant/prune.cpp — prune specs and masks (see prune.h; kernels in runtime/cpu/prune.cpp and,
// for activations on the GPU, cuda/prune.cu).
#include "quant/prune.h"

#include <cmath>
#include <nlohmann/json.hpp>

#include "runtime/kernels/prune.h"

namespace mase::quant {
namespace {

const char* method_name(PruneMethod m) { return m == PruneMethod::random ? "random" : "l1-norm"; }
const char* scope_name(PruneScope s) { return s == PruneScope::global ? "global" : "local"; }

// A packed f32 CPU copy (or the tensor itself) whose values the key kernels can read.
Tensor host_f32(const Tensor& t) {
  Tensor h = t.is_cpu() ? t.detach() : t.detach().to(Device::cpu());
  return h.to(DType::f32).contiguous();
}

// The activation mask on the GPU (cuda/prune.cu): the same keys and the same selection as the
// CPU's, so the same mask; no copy to the host, so a training step on the GPU does not stall.
Tensor activation_keep_mask_cuda(const Tensor& x, const PruneSpec& spec, Generator& gen) {
  MASE_CHECK(x.dtype() == DType::f32, DTypeError, "[prune] expected an f32 activation on ",
             x.device(), ", got ", x.dtype(), " (the CUDA kernels are f32 only)");
  Tensor keep = Tensor::empty(x.shape(), DType::u8, x.device());
  const int64_t n = x.numel();
  if (n == 0) return keep;
  Tensor xc;  // the values, for l1-norm keys
  quant::KeySource ks{nullptr, n, gen.seed, 0};
  if (spec.method == PruneMethod::l1_norm) {
    xc = x.detach().contiguous();
    ks.values = xc.data<float>();
  } else {
    ks.offset = gen.advance(n);  // a fresh random set on every call, as on the CPU
  }
  if (spec.scope == PruneScope::global) {
    Tensor work = Tensor::empty({select_smallest_workspace_bytes(n)}, DType::u8, x.device());
    cuda::select_smallest(keep.data<uint8_t>(), ks, prune_count(spec.sparsity, n),
                          work.data<uint8_t>());
  } else {
    const int64_t cols = x.ndim() == 0 ? 1 : x.size(-1);
    cuda::select_smallest_rows(keep.data<uint8_t>(), ks, n / cols, cols,
                               prune_count(spec.sparsity, cols));
  }
  return keep;
}

}  // namespace

std::string PruneSpec::str() const {
  return cat(method_name(method), " ", scope_name(scope), " ", sparsity);
}

nlohmann::json PruneSpec::to_json() const {
  return {{"sparsity", sparsity},
          {"method", method_name(method)},
          {"scope", scope_name(scope)},
          {"seed", seed}};
}

PruneSpec parse_prune_spec(const nlohmann::json& cfg, std::string_view where) {
  auto fail = [&](const std::string& msg) {
    return ConfigError(cat("[prune] ", where, ": ", msg));
  };
  if (!cfg.is_object())
    throw fail(
        cat("expected an object like {\"sparsity\": 0.5, \"method\": "
            "\"l1-norm\", \"scope\": \"local\"}, got ",
            cfg.dump()));
  for (const auto& [key, v] : cfg.items())
    if (key != "sparsity" && key != "method" && key != "scope" && key != "seed")
      throw fail(cat("unknown key '", key, "' (keys are sparsity, method, scope, seed)"));
  PruneSpec s;
  if (!cfg.contains("sparsity")) throw fail("missing required key 'sparsity' (a number in [0, 1])");
  const auto& sp = cfg["sparsity"];
  if (!sp.is_number())
    throw fail(cat("expected sparsity to be a number in [0, 1], got ", sp.dump()));
  s.sparsity = sp.get<double>();
  if (!(s.sparsity >= 0.0 && s.sparsity <= 1.0))
    throw fail(cat("expected sparsity in [0, 1], got ", s.sparsity));
  if (cfg.contains("method")) {
    const auto& m = cfg["method"];
    if (m == "random")
      s.method = PruneMethod::random;
    else if (m == "l1-norm" || m == "l1_norm" || m == "l1")
      s.method = PruneMethod::l1_norm;
    else
      throw fail(cat("unknown method ", m.dump(), " (expected \"random\" or \"l1-norm\")"));
  }
  if (cfg.contains("scope")) {
    const auto& sc = cfg["scope"];
    if (sc == "local")
      s.scope = PruneScope::local;
    else if (sc == "global")
      s.scope = PruneScope::global;
    else
      throw fail(cat("unknown scope ", sc.dump(), " (expected \"local\" or \"global\")"));
  }
  if (cfg.contains("seed")) {
    const auto& sd = cfg["seed"];
    if (!sd.is_number_integer() || sd.get<int64_t>() < 0)
      throw fail(cat("expected seed to be a non-negative integer, got ", sd.dump()));
    s.seed = sd.get<uint64_t>();
  }
  return s;
}

int64_t prune_count(double sparsity, int64_t n) {
  return static_cast<int64_t>(std::nearbyint(sparsity * static_cast<double>(n)));
}

std::vector<Tensor> weight_keep_masks(const std::vector<Tensor>& weights, const PruneSpec& spec) {
  std::vector<Tensor> hosts, masks;
  std::vector<cpu::KeySource> src;
  Generator gen(spec.seed);
  for (const Tensor& w : weights) {
    MASE_CHECK(w.defined() && is_floating(w.dtype()), DTypeError,
               "[prune] expected floating weights, got ",
               w.defined() ? name(w.dtype()) : "undefined");
    hosts.push_back(host_f32(w));
    masks.push_back(Tensor::empty(w.shape(), DType::u8));
    cpu::KeySource ks;
    ks.n = w.numel();
    if (spec.method == PruneMethod::l1_norm)
      ks.values = hosts.back().data<float>();
    else
      ks = {nullptr, w.numel(), gen.seed, gen.advance(w.numel())};  // each its own counters
    src.push_back(ks);
  }
  if (spec.scope == PruneScope::global) {
    int64_t total = 0;
    std::vector<uint8_t*> keep;
    for (size_t i = 0; i < src.size(); ++i) {
      total += src[i].n;
      keep.push_back(masks[i].data<uint8_t>());
    }
    cpu::select_smallest(src, prune_count(spec.sparsity, total), keep);
  } else {
    for (size_t i = 0; i < src.size(); ++i)
      cpu::select_smallest({src[i]}, prune_count(spec.sparsity, src[i].n),
                           {masks[i].data<uint8_t>()});
  }
  for (size_t i = 0; i < masks.size(); ++i)
    if (!weights[i].is_cpu()) masks[i] = masks[i].to(weights[i].device());
  return masks;
}

Tensor activation_keep_mask(const Tensor& x, const PruneSpec& spec, Generator& gen) {
  MASE_CHECK(x.defined() && is_floating(x.dtype()), DTypeError,
             "[prune] expected a floating activation, got ",
             x.defined() ? name(x.dtype()) : "undefined");
  if (x.is_cuda()) return activation_keep_mask_cuda(x, spec, gen);
  Tensor keep = Tensor::empty(x.shape(), DType::u8);
  const int64_t n = x.numel();
  if (n == 0) return keep;
  Tensor h;  // the values, for l1-norm keys
  cpu::KeySource ks{nullptr, n, gen.seed, 0};
  if (spec.method == PruneMethod::l1_norm) {
    h = host_f32(x);
    ks.values = h.data<float>();
  } else {
    ks.offset = gen.advance(n);
  }  // a fresh random set on every call
  if (spec.scope == PruneScope::global) {
    cpu::select_smallest({ks}, prune_count(spec.sparsity, n), {keep.data<uint8_t>()});
  } else {
    const int64_t cols = x.ndim() == 0 ? 1 : x.size(-1);
    cpu::select_smallest_rows(keep.data<uint8_t>(), ks, n / cols, cols,
                              prune_count(spec.sparsity, cols));
  }
  return keep;
}

int64_t count_pruned(const Tensor& keep) {
  if (!keep.defined()) return 0;
  int64_t zeros = 0;
  for (uint8_t v : keep.to_vector<uint8_t>()) zeros += v == 0;
  return zeros;
}

}  // namespace mase::quant
