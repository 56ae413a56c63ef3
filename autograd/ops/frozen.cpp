// autograd/ops/frozen.cpp — the frozen-weights table (see autograd/frozen.h); beside linear,
// its one reader (autograd/ops/matmul.cpp).
#include "autograd/frozen.h"

#include "runtime/kernels/bf16.h"
#include "runtime/kernels/matmul.h"
#include "runtime/parallel.h"

namespace mase {
namespace {
thread_local const FrozenWeights* t_frozen = nullptr;
}  // namespace

bool FrozenWeights::add(const Tensor& weight) {
  if (!weight.defined() || !weight.is_cpu() || weight.dtype() != DType::f32 ||
      weight.ndim() != 2 || weight.strides()[1] != 1 || weight.strides()[0] < weight.size(1))
    return false;
  // already packed: only when it is the same matrix (another view of the same memory, e.g.
  // reshaped, would not be found by find(), so it is not packed and says so)
  if (auto it = table_.find(weight.raw_data()); it != table_.end())
    return it->second.weight.shape() == weight.shape() &&
           it->second.weight.strides() == weight.strides();
  Entry e{weight, nullptr, nullptr};
  const float* w = weight.data<float>();
  const int64_t ld = weight.strides()[0], out = weight.size(0), in = weight.size(1);
  if (cpu_gemm_precision() == GemmPrecision::fp32)
    e.packed = cpu::onednn_f32_pack(w, ld, out, in);
  else if (cpu::amx_bf16_active())
    e.amx = cpu::amx_bf16_pack(w, ld, out, in);
  else  // null where oneDNN does not run bf16 (emulated bf16 packs nothing)
    e.packed = cpu::onednn_bf16_pack(w, ld, out, in);
  if (!e.packed && !e.amx) return false;
  table_.emplace(weight.raw_data(), std::move(e));
  return true;
}

const FrozenWeights::Entry* FrozenWeights::entry(const Tensor& weight) const {
  auto it = table_.find(weight.raw_data());
  if (it == table_.end()) return nullptr;
  const Tensor& w = it->second.weight;  // the same matrix, not another view of its memory
  if (w.shape() != weight.shape() || w.strides() != weight.strides()) return nullptr;
  return &it->second;
}

const cpu::OnednnWeights* FrozenWeights::find(const Tensor& weight) const {
  const Entry* e = entry(weight);
  if (!e || !e->packed) return nullptr;
  const bool bf16 = cpu_gemm_precision() == GemmPrecision::bf16;
  return cpu::onednn_packed_bf16(*e->packed) == bf16 ? e->packed.get() : nullptr;
}

const cpu::AmxBf16Weights* FrozenWeights::find_amx(const Tensor& weight) const {
  const Entry* e = entry(weight);
  return e && cpu_gemm_precision() == GemmPrecision::bf16 ? e->amx.get() : nullptr;
}

size_t FrozenWeights::amx_size() const {
  size_t n = 0;
  for (const auto& [ptr, e] : table_) n += e.amx != nullptr;
  return n;
}

size_t FrozenWeights::bf16_size() const {
  size_t n = 0;
  for (const auto& [ptr, e] : table_) n += e.packed && cpu::onednn_packed_bf16(*e.packed);
  return n;
}

size_t FrozenWeights::bytes() const {
  size_t n = 0;
  for (const auto& [ptr, e] : table_)
    n += e.packed ? cpu::onednn_packed_bytes(*e.packed) : cpu::amx_bf16_bytes(*e.amx);
  return n;
}

FrozenScope::FrozenScope(const FrozenWeights* table) : prev_(t_frozen) { t_frozen = table; }
FrozenScope::~FrozenScope() { t_frozen = prev_; }
const FrozenWeights* frozen_weights() { return t_frozen; }

}  // namespace mase
