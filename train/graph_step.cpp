// train/graph_step.cpp — capture and replay of the training step (see graph_step.h).
#include "train/graph_step.h"

#include <cstring>

#include "runtime/profiler.h"
#include "runtime/random.h"
#include "train/clip_grad_norm.h"

namespace mase::train {
namespace {

// The batch's tensors copied into `dst`'s device buffers (same shapes), in stream order.
void copy_batch(const data::Batch& dst, const data::Batch& src) {
  copy_(dst.input_ids, src.input_ids);
  copy_(dst.attention_mask, src.attention_mask);
  if (dst.token_type_ids.defined()) copy_(dst.token_type_ids, src.token_type_ids);
  copy_(dst.labels, src.labels);
}

bool same_layout(const data::Batch& a, const data::Batch& b) {
  return a.token_type_ids.defined() == b.token_type_ids.defined() &&
         a.attention_mask.defined() == b.attention_mask.defined() && a.labels.defined() &&
         b.labels.defined();
}

}  // namespace

GraphStep::GraphStep(nn::BertForSequenceClassification& model, AdamW& opt, Device device,
                     double clip, int64_t warmup, int64_t max_graphs)
    : model_(model), opt_(opt), device_(device), clip_(clip), warmup_(std::max<int64_t>(warmup, 1)),
      max_graphs_(max_graphs) {}

StepResult GraphStep::step(const data::Batch& batch) {
  const std::pair<int64_t, int64_t> key{batch.input_ids.size(0), batch.input_ids.size(1)};
  Captured& c = shapes_[key];
  const bool can = device_.is_cuda() && batch.attention_mask.defined() && batch.labels.defined();
  if (!c.graph && (!can || c.failed || c.seen < warmup_ || graphs_ >= max_graphs_ ||
                   !opt_.step_is_gated())) {
    ++c.seen;
    ++stats_.eager;
    return train_step(model_, opt_, batch, device_, clip_, clip_state_, forward_);
  }
  if (c.graph && !same_layout(c.inputs, batch)) {  // e.g. token types now present: uncaptured
    ++stats_.eager;
    return train_step(model_, opt_, batch, device_, clip_, clip_state_, forward_);
  }
  check_batch(model_, batch);
  if (!c.graph) {
    try {
      capture(c, batch);
    } catch (const Error& e) {  // not capturable: this shape runs uncaptured
      c.failed = true;
      stats_.capture_error = e.what();
      ++c.seen;
      ++stats_.eager;
      return train_step(model_, opt_, batch, device_, clip_, clip_state_, forward_);
    }
  }
  ++c.seen;
  return replay(c, batch);
}

void GraphStep::capture(Captured& c, const data::Batch& batch) {
  c.inputs = data::to_device(batch, device_);  // this shape's buffers, kept for the graph's life
  c.philox_base = Tensor::zeros({8}, DType::u8, device_);
  opt_.set_gate(clip_state_);
  auto graph = std::make_unique<CudaGraph>(device_);
  // Dropout offsets are counted from 0 while capturing, on top of the device base that each
  // replay writes (runtime/random.h): restore the host generator afterwards.
  Generator& gen = default_generator();
  const Generator saved = gen;
  gen.offset = 0;
  gen.device_offset_base = reinterpret_cast<const uint64_t*>(c.philox_base.raw_data());
  try {
    graph->capture([&] { device_step_work(model_, opt_, c.inputs, clip_, clip_state_, forward_); });
  } catch (...) {
    gen = saved;
    opt_.zero_grad();  // the gradients of the broken capture were never computed
    throw;
  }
  c.philox_per_step = gen.offset;
  gen = saved;
  c.updates = opt_.captured_updates();
  c.graph = std::move(graph);
  ++graphs_;
  ++stats_.captures;
  stats_.capture_ms += c.graph->capture_ms();
  stats_.kernels = c.graph->kernels();
}

StepResult GraphStep::replay(Captured& c, const data::Batch& batch) {
  profile::mark_phase("data");
  copy_batch(c.inputs, batch);
  profile::mark_phase("upload");
  opt_.prepare_replay(c.updates);  // this step's learning rate and bias corrections
  Generator& gen = default_generator();
  uint8_t bytes[8];
  std::memcpy(bytes, &gen.offset, 8);  // this step's first dropout counter, as the base
  copy_(c.philox_base, Tensor::from(std::vector<uint8_t>(bytes, bytes + 8), {8}));
  gen.offset += c.philox_per_step;
  profile::mark_phase("replay");
  c.graph->replay();
  ++stats_.replays;
  profile::mark_phase("readback");
  const ClipReadout r = read_clip_state(clip_state_);  // the step's one host sync
  return StepResult{.loss = r.loss, .tokens = batch.real_tokens, .grad_norm = r.norm};
}

}  // namespace mase::train
