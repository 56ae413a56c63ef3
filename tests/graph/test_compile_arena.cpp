// tests/graph/test_compile_arena.cpp — the "arena" step of graph::compile (graph/compile.h):
// the first replay without autograd records the plan's allocations, later ones are served from
// one planned arena (runtime/allocator.h), and runs with autograd allocate as eager does;
// outputs and gradients stay the eager fused model's bit for bit,
// a tensor kept from one replay survives the next, nothing is asked of the OS in steady state,
// and the planned arena is no bigger than the recorded sum.
#include "compile_helpers.h"
#include "graph/compile.h"
#include "runtime/allocator.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

TEST_CASE("compile arena: eval replays run out of one arena and equal eager") {
  auto model = tiny_bert();
  model->eval();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});  // bit for bit: test_compile.cpp
  NoGradGuard ng;
  const data::Batch b = tiny_batch();
  std::vector<Tensor> ys;
  for (int i = 0; i < 4; ++i) ys.push_back(compiled(bert_inputs(eval_inputs(), b)).at("logits"));
  const CompiledGraph& cg = compiled.last();
  CHECK(cg.arena_planned);
  REQUIRE(cg.arena != nullptr);
  CHECK_FALSE(cg.arena_off);
  CHECK(compiled.arena_runs() == 2);  // call 1 compiles, call 2 records, calls 3 and 4 serve
  CHECK(compiled.arena_divergences() == 0);
  const AllocationPlan& a = cg.allocations;
  CHECK(a.sizes.size() > 30);                  // every op's output and scratch
  CHECK(a.arena_bytes >= a.live_peak_bytes);   // no arena below the lower bound
  CHECK(a.arena_bytes < a.total_bytes / 2);    // and reuse: far below no reuse at all
  CHECK(a.str().starts_with("arena: "));
  // the outputs live outside the arena: the first replay's logits are intact
  char* base = static_cast<char*>(cg.arena->base());
  const char* y = static_cast<const char*>(ys[3].raw_data());
  CHECK((y < base || y >= base + cg.arena->bytes()));
  nn::fuse_kernels(*model);
  Tensor want = eager_outputs(*model, b, false).at("logits");
  for (const Tensor& t : ys) CHECK(bitwise_equal(t, want));
  // steady state: nothing from the OS
  const uint64_t os = allocator_stats().os_allocs;
  compiled(bert_inputs(eval_inputs(), b));
  CHECK(allocator_stats().os_allocs == os);
  CHECK(compiled.arena_runs() == 3);
}

// The recording run's blocks would wait in the allocator's cache for requests the arena now
// serves: make_arena gives the cache back first, so the process holds the arena, not both.
TEST_CASE("compile arena: the recording run's cached blocks are given back when the arena is made") {
  auto model = tiny_bert();
  model->eval();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});
  NoGradGuard ng;
  const data::Batch b = tiny_batch();
  auto cached = [] { return allocator_stats().os_bytes - allocator_stats().in_use_bytes; };
  compiled(bert_inputs(eval_inputs(), b));  // compiles
  compiled(bert_inputs(eval_inputs(), b));  // records: its blocks go back to the cache
  // (at least an arena's worth: the plan's blocks, reused within the run as the arena will)
  REQUIRE(cached() >= compiled.last().allocations.arena_bytes);
  for (int i = 0; i < 3; ++i) compiled(bert_inputs(eval_inputs(), b));  // the arena serves
  REQUIRE(compiled.last().arena != nullptr);
  // what stays cached is the eager part around the plan (inputs, outputs), not the plan's blocks
  CHECK(cached() < compiled.last().allocations.arena_bytes / 2);
}

// The first call traces the model op by op (eager's sizes); the plan then asks for other ones
// (fused, narrowed, recomputed). compile_and_run gives the cache back before it returns.
TEST_CASE("compile arena: the trace's cached blocks are given back after the first call") {
  auto model = tiny_bert();
  model->train();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});
  const data::Batch b = tiny_batch();
  empty_cache();
  Tensor loss = compiled(bert_inputs(train_inputs(), b)).at("loss");  // traces and compiles
  const AllocatorStats s = allocator_stats();
  // nothing cached: every block held is in use (the model, the loss and what backward keeps);
  // without the give-back the trace's blocks stay (352 KB here, 136 MB for bert-tiny at B 32)
  CHECK(s.os_bytes == s.in_use_bytes);
}

TEST_CASE("compile arena: training replays (autograd on) allocate as eager and keep its bits") {
  auto model = tiny_bert();
  model->train();
  Compiled compiled = compile_bert(model, {{"narrow_cls"}});  // eager's bits: test_narrow_cls.cpp
  const data::Batch b = tiny_batch();
  std::map<std::string, Tensor> got;
  for (int i = 0; i < 3; ++i)
    got = loss_and_grads(*model,
                         [&] { return compiled(bert_inputs(train_inputs(), b)).at("loss"); });
  CHECK(compiled.arena_runs() == 0);  // an arena would hold the forward's blocks through backward
  CHECK_FALSE(compiled.last().arena_planned);
  // under NoGradGuard the same training-mode plan does run out of an arena
  {
    NoGradGuard ng;
    for (int i = 0; i < 2; ++i) compiled(bert_inputs(train_inputs(), b));
  }
  CHECK(compiled.arena_runs() == 1);
  CHECK(compiled.arena_divergences() == 0);
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(got, want);
}

TEST_CASE("compile arena: a plan with the arena off allocates as before") {
  auto model = small_bert();
  model->eval();
  Compiled compiled = compile_bert(model, {{"arena"}});
  NoGradGuard ng;
  for (int i = 0; i < 3; ++i) compiled(bert_inputs(eval_inputs(), small_batch()));
  CHECK_FALSE(compiled.last().arena_planned);
  CHECK(compiled.arena_runs() == 0);
}

TEST_CASE("compile arena: the budget gives back the least recently replayed plan's arena") {
  auto model = small_bert();
  model->eval();
  CompileOptions o;
  o.disabled = {"narrow_cls"};  // eager's bits: narrow_cls sums a Linear over fewer rows
  o.arena_budget_bytes = 1;  // room for one arena only: the one being replayed
  Compiled compiled = compile_bert(model, o);
  NoGradGuard ng;
  const data::Batch b5 = small_batch(5), b7 = small_batch(7);
  for (int i = 0; i < 3; ++i) compiled(bert_inputs(eval_inputs(), b5));
  for (int i = 0; i < 3; ++i) compiled(bert_inputs(eval_inputs(), b7));
  Signature s5 = Signature::of(bert_inputs(eval_inputs(), b5), false);
  CHECK(compiled.find(s5)->arena == nullptr);  // given back for b7's
  CHECK(compiled.last().arena != nullptr);
  Tensor y = compiled(bert_inputs(eval_inputs(), b5)).at("logits");  // made again
  CHECK(compiled.find(s5)->arena != nullptr);
  CHECK(compiled.arena_divergences() == 0);
  nn::fuse_kernels(*model);
  CHECK(bitwise_equal(y, eager_outputs(*model, b5, false).at("logits")));
}
