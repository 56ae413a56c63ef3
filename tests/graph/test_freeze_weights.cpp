// tests/graph/test_freeze_weights.cpp — frozen weights (autograd/frozen.h) and the
// freeze_weights pass (graph/passes/freeze_weights.h): a Linear on a packed weight equals the
// double-precision product within fp32 rounding at edge shapes (one row, odd sizes, bias or
// not, rows strided wider than the matrix); linear() uses the table only inside a FrozenScope
// and without autograd, and only for the very matrix it packed; compile with freeze packs an
// eval plan's 14 Linear weights and leaves training plans and unfrozen compiles untouched.
// *Skipped* in a build without oneDNN (nothing can be packed there). Under --precision bf16 on
// a CPU with AMX-BF16 the table holds our AMX tiles, and a frozen Linear gives eager bf16's
// bits (*skipped* without AMX); without AMX it holds oneDNN's layout in bf16 (checked on every
// CPU, oneDNN's bf16 forced), within bf16 reassociation of eager bf16; where bf16 is emulated
// it packs nothing.
#include "autograd/frozen.h"
#include "compile_helpers.h"
#include "graph/compile.h"
#include "graph/passes/freeze_weights.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/kernels/bf16.h"
#include "runtime/parallel.h"

using namespace mase;
using namespace mase::graph;
using namespace mase::test;

namespace {

bool can_freeze() {
  if (cpu::onednn_version().empty() || !cpu::onednn_enabled()) {
    skip("this build has no oneDNN (libdnnl-dev), or it is turned off: nothing to pack");
    return false;
  }
  return true;
}

// y = x·Wᵀ + b in double, (rows, out)
std::vector<double> linear_double(const Tensor& x, const Tensor& w, const Tensor& b) {
  const auto xv = x.contiguous().to_vector<double>(), wv = w.contiguous().to_vector<double>();
  const auto bv = b.defined() ? b.to_vector<double>() : std::vector<double>();
  const int64_t in = w.size(1), out = w.size(0), rows = x.numel() / in;
  std::vector<double> y(size_t(rows * out));
  for (int64_t i = 0; i < rows; ++i)
    for (int64_t j = 0; j < out; ++j) {
      double s = bv.empty() ? 0.0 : bv[size_t(j)];
      for (int64_t k = 0; k < in; ++k) s += xv[size_t(i * in + k)] * wv[size_t(j * in + k)];
      y[size_t(i * out + j)] = s;
    }
  return y;
}

}  // namespace

TEST_CASE("frozen weights: linear on a packed weight equals the double product (edge shapes)") {
  if (!can_freeze()) return;
  struct Case { int64_t rows, out, in; bool bias; };
  for (const Case c : {Case{1, 3, 5, true}, Case{7, 65, 33, false}, Case{130, 128, 512, true},
                       Case{2, 1, 1, true}, Case{33, 96, 1, false}}) {
    CAPTURE(c.rows);
    CAPTURE(c.out);
    CAPTURE(c.in);
    const Tensor x = random_tensor({c.rows, c.in}, 1, -1, 1, DType::f32);
    // the weight as the rows of a wider matrix: a leading dimension other than `in`
    const Tensor wide = random_tensor({c.out, c.in + 3}, 2, -1, 1, DType::f32);
    const Tensor w = slice(wide, 1, 0, c.in);
    const Tensor b = c.bias ? random_tensor({c.out}, 3, -1, 1, DType::f32) : Tensor();
    FrozenWeights table;
    REQUIRE(table.add(w));
    CHECK(table.find(w) != nullptr);
    CHECK(table.bytes() >= size_t(c.out * c.in) * 4);
    NoGradGuard ng;
    FrozenScope scope(&table);
    const std::vector<double> want = linear_double(x, w, b);
    const std::vector<double> got = linear(x, w, b).to_vector<double>();
    REQUIRE(got.size() == want.size());
    double worst = 0;
    for (size_t i = 0; i < got.size(); ++i)
      worst = std::max(worst, std::abs(got[i] - want[i]) / (1.0 + std::abs(want[i])));
    CHECK(worst <= 1e-5 * std::sqrt(double(c.in)));
  }
}

TEST_CASE("frozen weights: only inside a scope, without autograd, for the matrix it packed") {
  if (!can_freeze()) return;
  const Tensor x = random_tensor({9, 64}, 1, -1, 1, DType::f32);
  const Tensor w = random_tensor({48, 64}, 2, -1, 1, DType::f32);
  const Tensor b = random_tensor({48}, 3, -1, 1, DType::f32);
  FrozenWeights table;
  REQUIRE(table.add(w));
  NoGradGuard ng;
  const Tensor eager = linear(x, w, b);
  // the table is used: the frozen result is close to eager's, and it is what the scope changes
  Tensor frozen;
  {
    FrozenScope scope(&table);
    CHECK(frozen_weights() == &table);
    frozen = linear(x, w, b);
    {
      FrozenScope none(nullptr);  // scopes nest: an inner null scope turns it off
      CHECK(bitwise_equal(linear(x, w, b), eager));
    }
    CHECK(frozen_weights() == &table);
    // another view of the same memory is another matrix: not matched
    const Tensor w_view = view(w, {24, 128});
    CHECK(table.find(w_view) == nullptr);
    // with autograd on, linear needs W as it is for the backward: the table is not used
    set_grad_enabled(true);
    const Tensor wg = w.detach().set_requires_grad(true);
    CHECK(table.find(wg) != nullptr);  // the same storage...
    CHECK(bitwise_equal(linear(x, wg, b).detach(), eager));  // ...but the eager GEMM
    set_grad_enabled(false);
  }
  CHECK(frozen_weights() == nullptr);
  CHECK(max_abs_diff(frozen, eager) <= 1e-5);
  CHECK(bitwise_equal(linear(x, w, b), eager));  // after the scope: eager again
  // what cannot be packed is refused, not mispacked
  CHECK_FALSE(table.add(w.to(DType::f64)));
  CHECK_FALSE(table.add(transpose(w, 0, 1)));
  CHECK_FALSE(table.add(Tensor()));
}

TEST_CASE("freeze_weights: compile with freeze packs an eval plan's Linears, nothing else") {
  if (!can_freeze()) return;
  auto model = small_bert();
  const data::Batch b = small_batch();
  // eval, frozen: 2 layers x 6 Linears + pooler + classifier, close to eager fused
  model->eval();
  CompileOptions frozen_options;
  frozen_options.freeze = true;
  Compiled frozen = compile_bert(model, frozen_options);
  NoGradGuard ng;
  const Tensor got = frozen(bert_inputs(eval_inputs(), b)).at("logits");
  const CompiledGraph& cg = frozen.last();
  REQUIRE(cg.frozen != nullptr);
  CHECK(cg.frozen->size() == 14);
  CHECK(cg.passes.back().name == "freeze_weights");
  CHECK(cg.passes.back().report.find("packed 14 Linear weights") != std::string::npos);
  const Tensor replayed = frozen(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(bitwise_equal(replayed, got));  // a replay runs the same packed kernels
  // another shape compiles again
  const data::Batch b2 = small_batch(5);
  const Tensor got2 = frozen(bert_inputs(eval_inputs(), b2)).at("logits");
  CHECK(frozen.compiles() == 2);
  CHECK(frozen.last().frozen == cg.frozen);  // one table: the second plan reuses the packing
  CHECK(cg.frozen->size() == 14);
  CHECK(frozen.summary().find("frozen: 14 Linear weights packed once") != std::string::npos);
  nn::fuse_kernels(*model);
  CHECK(max_abs_diff(got, eager_outputs(*model, b, false).at("logits")) <= 1e-5);
  CHECK(max_abs_diff(got2, eager_outputs(*model, b2, false).at("logits")) <= 1e-5);
  // without freeze (and narrow_cls, which sums a Linear over fewer rows): eager's bits
  nn::unfuse_kernels(*model);
  Compiled plain = compile_bert(model, {{"narrow_cls"}});
  const Tensor plain_logits = plain(bert_inputs(eval_inputs(), b)).at("logits");
  CHECK(plain.last().frozen == nullptr);
  nn::fuse_kernels(*model);
  CHECK(bitwise_equal(plain_logits, eager_outputs(*model, b, false).at("logits")));
}

TEST_CASE("freeze_weights: a training plan is not frozen (its backward needs W as it is)") {
  auto model = small_bert();
  model->train();
  const data::Batch b = small_batch();
  CompileOptions options;
  options.freeze = true;
  options.disabled = {"narrow_cls"};  // eager's bits (narrow_cls: test_narrow_cls.cpp)
  Compiled c = compile_bert(model, options);
  auto got = loss_and_grads(*model, [&] { return c(bert_inputs(train_inputs(), b)).at("loss"); });
  CHECK(c.last().frozen == nullptr);
  for (const PassRun& p : c.last().passes) CHECK(p.name != "freeze_weights");
  nn::fuse_kernels(*model);
  auto want = loss_and_grads(*model, [&] { return eager_outputs(*model, b, true).at("loss"); });
  check_all_bitwise(got, want);
}

namespace {
// --precision bf16 on oneDNN's bf16 matmul, not on AMX: what a CPU with AVX512-BF16 and no
// AMX runs (AMD Zen 4/5); forced, so that every CPU with AVX-512 checks it (oneDNN emulates
// bf16 where the CPU has no bf16 unit: slower, the same rounded operands; below AVX-512 its
// 2.6 has no bf16 kernel for packed weights, and the table packs nothing: *skipped* there)
struct OnednnBf16Scope {
  OnednnBf16Scope() : amx(cpu::amx_bf16_active()) {
    cpu::set_amx_bf16_enabled(false);
    cpu::set_onednn_bf16_forced(true);
    set_cpu_gemm_precision(GemmPrecision::bf16);
  }
  ~OnednnBf16Scope() {
    set_cpu_gemm_precision(GemmPrecision::fp32);
    cpu::set_onednn_bf16_forced(false);
    cpu::set_amx_bf16_enabled(amx);
  }
  bool amx;
};

// Whether oneDNN packs bf16 weights on this CPU (false below AVX-512: skip, saying so)
bool onednn_packs_bf16() {
  OnednnBf16Scope bf16;
  const std::vector<float> w(64 * 64, 0.5f);
  if (cpu::onednn_bf16_pack(w.data(), 64, 64, 64)) return true;
  skip("oneDNN has no bf16 matmul on packed weights for this CPU (below AVX-512)");
  return false;
}
// A Linear (300 × 192 × 256 multiply-adds) frozen under the bf16 setting `Scope` makes: held in
// AMX tiles (`amx`: eager bf16 runs it on AMX too, packing W at every call, so the same tiles
// give eager's bits) or in oneDNN's layout in bf16 (eager's rounded operands, summed in another
// order); half an fp32 copy's bytes; nothing for linear() under fp32; and under bf16 really
// read: W changed behind the table's back (what the contract forbids) still gives the old W's
// product, where eager sees the new one.
template <class Scope>
void check_frozen_bf16_linear(bool amx) {
  const Tensor x = random_tensor({300, 256}, 1, -1, 1, DType::f32);
  const Tensor w = random_tensor({192, 256}, 2, -1, 1, DType::f32);
  const Tensor b = random_tensor({192}, 3, -1, 1, DType::f32);
  Tensor fp32;
  {
    NoGradGuard ng;
    fp32 = linear(x, w, b);
  }
  FrozenWeights table;
  {
    Scope bf16;
    REQUIRE(table.add(w));
    CHECK((table.find_amx(w) != nullptr) == amx);
    CHECK((table.find(w) != nullptr) == !amx);  // the layout follows the precision and the CPU
    CHECK(table.amx_size() == (amx ? 1 : 0));
    CHECK(table.bf16_size() == (amx ? 0 : 1));
    CHECK(table.bytes() >= size_t(192 * 256) * 2);
    CHECK(table.bytes() < size_t(192 * 256) * 4);  // bf16: half an fp32 copy (and padding)
    NoGradGuard ng;
    for (const Tensor& bias : {b, Tensor()}) {
      const Tensor eager = linear(x, w, bias);
      FrozenScope scope(&table);
      if (amx) CHECK(bitwise_equal(linear(x, w, bias), eager));
      else CHECK(max_abs_diff(linear(x, w, bias), eager) <= 1e-4);
      if (bias.defined()) CHECK(max_abs_diff(eager, fp32) > 1e-4);  // it is bf16, not fp32
    }
  }
  NoGradGuard ng;
  FrozenScope scope(&table);
  CHECK(table.find(w) == nullptr);
  CHECK(table.find_amx(w) == nullptr);
  CHECK(bitwise_equal(linear(x, w, b), fp32));
  Scope bf16;
  const Tensor before = linear(x, w, b);
  fill_(w, 0.0);
  CHECK(bitwise_equal(linear(x, w, b), before));
  FrozenScope none(nullptr);
  CHECK(max_abs_diff(linear(x, w, b), before) > 0.1);
}
}  // namespace

TEST_CASE("frozen weights: under --precision bf16 on AMX, packed tiles give eager bf16's bits") {
  if (!cpu::amx_bf16_available()) return skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  check_frozen_bf16_linear<Bf16Scope>(/*amx=*/true);
}

namespace {
// An eval plan of small_bert compiled with freeze under the bf16 setting in force: its 14
// Linear weights packed, `count` of them in `layout`; the logits within bf16 reassociation of
// eager bf16's (the same rounded operands, summed elsewhere: below kAmxMinWork eager runs
// oneDNN or rounded copies) and not fp32's.
void check_frozen_bf16_plan(const std::string& layout, size_t (FrozenWeights::*count)() const) {
  auto model = small_bert();
  model->eval();
  const data::Batch b = small_batch();
  CompileOptions options;
  options.freeze = true;
  Compiled frozen = compile_bert(model, options);
  NoGradGuard ng;
  const Tensor got = frozen(bert_inputs(eval_inputs(), b)).at("logits");
  const CompiledGraph& cg = frozen.last();
  REQUIRE(cg.frozen != nullptr);
  CHECK(cg.frozen->size() == 14);
  CHECK(((*cg.frozen).*count)() == 14);
  CHECK(cg.passes.back().report.find("packed 14 Linear weights") != std::string::npos);
  CHECK(cg.passes.back().report.find(layout) != std::string::npos);
  nn::fuse_kernels(*model);
  CHECK(max_abs_diff(got, eager_outputs(*model, b, false).at("logits")) <= 1e-4);
  set_cpu_gemm_precision(GemmPrecision::fp32);
  CHECK(max_abs_diff(got, eager_outputs(*model, b, false).at("logits")) > 0);  // not fp32's
  set_cpu_gemm_precision(GemmPrecision::bf16);
}
}  // namespace

TEST_CASE("freeze_weights: under --precision bf16 on AMX an eval plan runs its Linears on tiles") {
  if (!cpu::amx_bf16_available()) return skip("this CPU has no AMX-BF16 (or Linux did not grant it)");
  Bf16Scope bf16;
  check_frozen_bf16_plan("AMX bf16 tiles", &FrozenWeights::amx_size);
}


TEST_CASE("frozen weights: under --precision bf16 without AMX, oneDNN's layout in bf16") {
  if (!can_freeze() || !onednn_packs_bf16()) return;
  check_frozen_bf16_linear<OnednnBf16Scope>(/*amx=*/false);
}

TEST_CASE("frozen weights: bf16 with neither AMX nor oneDNN's bf16 packs nothing") {
  if (!can_freeze()) return;
  const Tensor w = random_tensor({64, 32}, 2, -1, 1, DType::f32);
  const bool amx = cpu::amx_bf16_active();
  cpu::set_amx_bf16_enabled(false);
  cpu::set_onednn_enabled(false);  // bf16 emulated: rounded copies into an fp32 GEMM per call
  FrozenWeights table;
  Bf16Scope bf16;
  CHECK_FALSE(table.add(w));  // an fp32 copy would run the Linear in fp32
  CHECK(table.size() == 0);
  cpu::set_onednn_enabled(true);
  cpu::set_amx_bf16_enabled(amx);
}

TEST_CASE("freeze_weights: under --precision bf16 without AMX an eval plan packs bf16 weights") {
  if (!can_freeze() || !onednn_packs_bf16()) return;
  OnednnBf16Scope bf16;
  check_frozen_bf16_plan("oneDNN's blocked layout in bf16", &FrozenWeights::bf16_size);
}
