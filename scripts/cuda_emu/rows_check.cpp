// scripts/cuda_emu/rows_check.cpp — the dropout row map (RowMap, runtime/philox.h) of the two
// fused CUDA kernels that take one, run on the CPU through emu.h (see run.sh). A narrowed
// tensor (graph/passes/narrow_cls.h: one [CLS] row per sequence) must draw the dropout words
// the full tensor draws for those rows. Part `rows`: each case runs the kernels twice — on the
// full tensor with no map, then on the picked rows with the map — and compares narrowed row r
// with full row map(r):
//   sdpa       flash attention (fill_dropout_tile, cuda/sdpa_tile.cuh): out and the (m, l)
//              stats of the narrowed query rows against the full query set's rows; dq, dk, dv
//              of the narrowed backward against the full backward with dO zero off the picked
//              rows; at attn_check's fp32 tolerances (the full runs, unmapped, are checked
//              against double by its parts). Forward fp32 (HS 32/64/128) and tf32x3, backward
//              fused/atomic/two_kernel and tf32x3; maps: [CLS] (period 1, stride T, first 0
//              or 5, one offset on the "device"), period 2 and 5 with a stride below T (picked
//              rows on both sides of a query tile edge; 2 narrowed query tiles)
//   layernorm  dropout + bias + residual + LayerNorm forward (cuda/layer_norm.cu): keep bytes,
//              hidden, out, mean, rstd of the narrowed rows equal to the full rows' bit for
//              bit; and both runs against the host (keep from the Philox words, hidden exact,
//              out, mean, rstd against double); maps: [CLS], token 11, pairs (period 2)
#include <cstdio>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "emu.h"

// what cuda/cublas.h gives the column sums (layer_norm.cu's backward): a grow-only scratch
namespace mase::cuda {
enum ScratchSlot : int { kScratchColumnSums = 3 };
inline void* device_scratch(int, size_t bytes) {
  static std::vector<char> buf;
  if (buf.size() < bytes) buf.assign(bytes, char(0x7F));
  return buf.data();
}
}  // namespace mase::cuda
using std::max;
using std::min;
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }

// the kernels themselves, as prep.py rewrote them (not cuda/reduce.cu: its kThreads clashes
// with sdpa_tile.cuh's; only the LayerNorm backward, not run here, calls its sum_forward)
#include "cuda/layer_norm.cu"
#include "cuda/sdpa_backward.cu"
#include "cuda/sdpa_backward_fused.cu"
#include "cuda/sdpa_backward_tc.cu"
#include "cuda/sdpa_forward.cu"
#include "cuda/sdpa_forward_tc.cu"

namespace mase::cuda {
void sum_forward(float*, const float*, int64_t, int64_t, int64_t) {
  throw std::runtime_error("rows_check: sum_forward is not linked");
}
}  // namespace mase::cuda

using namespace mase;

namespace {

void expect_bits(const std::string& what, float got, float want, long idx) {
  if (std::memcmp(&got, &want, sizeof got) == 0) return;
  if (failures < 30)
    std::printf("FAIL %s [%ld]: got %.9g, want %.9g (bit for bit)\n", what.c_str(), idx, got, want);
  ++failures;
}

std::string map_name(const RowMap& m) {
  return "map(period " + std::to_string(m.period) + " stride " + std::to_string(m.stride) +
         " first " + std::to_string(m.first) + ")";
}

// One attention: the full query set (B, Tfull) and the narrowed one, Tq rows a head, row
// bh·Tq + i standing for full row map(bh·Tq + i) = bh·Tfull + (its row in the head).
struct Narrowed {
  int B, NH, Tfull, Tk, HS, Tq;
  RowMap map;
  std::vector<int> lengths;  // keys kept per batch (padding mask, −inf); empty: no mask
  double p;
  SdpaMath math = SdpaMath::fp32;
  SdpaBackward alg = SdpaBackward::fused;
  bool offset_base = false;  // the offset partly on the "device" (a captured step)
};

struct SdpaRun {
  std::vector<float> out, stats, dq, dk, dv;
};

// Forward and backward of the CUDA kernels on q (B, T, 2, NH, HS: the head-split view of a
// fused qkv-like buffer, as attn_check), k, v (B, Tk, 2, NH, HS) and dout (B, T, NH, HS).
SdpaRun run_sdpa(const Narrowed& A, int T, const std::vector<float>& qb,
                 const std::vector<float>& kvb, const std::vector<float>& dob,
                 const DropoutMask& drop) {
  const int B = A.B, NH = A.NH, Tk = A.Tk, HS = A.HS, C = NH * HS;
  const HeadsView<const float> q{qb.data(), int64_t(T) * 2 * C, HS, 2 * C};
  const HeadsView<const float> k{kvb.data(), int64_t(Tk) * 2 * C, HS, 2 * C};
  const HeadsView<const float> v{kvb.data() + C, int64_t(Tk) * 2 * C, HS, 2 * C};
  static std::vector<float> mb;
  mb.assign(size_t(B) * Tk, 0.f);
  MaskView<float> mask;
  if (!A.lengths.empty()) {
    for (int b = 0; b < B; ++b)
      for (int j = A.lengths[b]; j < Tk; ++j) mb[b * Tk + j] = -INFINITY;
    mask = MaskView<float>{mb.data(), Tk, 0, 0, 1};
  }
  const float scale = 1.f / std::sqrt(float(HS));
  const SdpaSizes n{B, NH, T, Tk, HS, HS};
  SdpaRun r{std::vector<float>(size_t(B) * T * C, 555.f),
            std::vector<float>(size_t(B) * NH * T * 2, 555.f),
            std::vector<float>(size_t(B) * T * C, 555.f),
            std::vector<float>(size_t(B) * Tk * C, 555.f),
            std::vector<float>(size_t(B) * Tk * C, 555.f)};
  std::vector<float> ws(cuda::sdpa_backward_workspace(n, A.math, A.alg), NAN);
  auto packed = [&](float* p, int rows) { return HeadsView<float>{p, int64_t(rows) * C, HS, C}; };
  cuda::sdpa_forward(packed(r.out.data(), T), r.stats.data(), q, k, v, mask, n, scale, drop,
                     A.math);
  const HeadsView<const float> out{r.out.data(), int64_t(T) * C, HS, C};
  const HeadsView<const float> dout{dob.data(), int64_t(T) * C, HS, C};
  cuda::sdpa_backward(packed(r.dq.data(), T), packed(r.dk.data(), Tk), packed(r.dv.data(), Tk),
                      dout, out, r.stats.data(), q, k, v, mask, n, scale, drop, ws.data(), A.math,
                      A.alg);
  return r;
}

void check_sdpa_rows(const Narrowed& A) {
  const int B = A.B, NH = A.NH, Tf = A.Tfull, Tq = A.Tq, Tk = A.Tk, HS = A.HS, C = NH * HS;
  const int before = failures;
  std::mt19937 rng(B * 1000 + Tf * 7 + Tk + HS);
  std::uniform_real_distribution<float> U(-2, 2), V(-1, 1);
  std::vector<float> qf(size_t(B) * Tf * 2 * C), kvb(size_t(B) * Tk * 2 * C);
  for (auto& x : qf) x = U(rng);
  for (auto& x : kvb) x = U(rng) / 2;
  // full row of narrowed row (b, h, i); the map must keep the head (as narrow_cls's does)
  auto full_row = [&](int b, int h, int i) {
    const int64_t bh = int64_t(b) * NH + h, f = A.map(bh * Tq + i);
    if (f / Tf != bh) throw std::runtime_error("rows_check: the map leaves the head");
    return int(f % Tf);
  };
  // narrowed query (b, i) of head h is full query (b, full_row(b, h, i)) of that head; dO
  // (B, Tq, NH, HS) random, and the full dO zero but on the picked rows, which get the narrowed
  // dO (so the full backward's dk, dv are the narrowed rows' alone, and its dq on them theirs)
  std::vector<float> qn(size_t(B) * Tq * 2 * C), don(size_t(B) * Tq * C),
      dof(size_t(B) * Tf * C, 0.f);
  for (auto& x : don) x = V(rng);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const int f = full_row(b, h, i);
        for (int e = 0; e < HS; ++e) {
          qn[(size_t(b) * Tq + i) * 2 * C + h * HS + e] =
              qf[(size_t(b) * Tf + f) * 2 * C + h * HS + e];
          dof[(size_t(b) * Tf + f) * C + h * HS + e] = don[(size_t(b) * Tq + i) * C + h * HS + e];
        }
      }
  uint64_t base = 1000;
  DropoutMask drop{true, 1234, 77, dropout_threshold(A.p), 1.0 / (1.0 - A.p)};
  if (A.offset_base) drop.offset_base = &base;
  const SdpaRun full = run_sdpa(A, Tf, qf, kvb, dof, drop);
  drop.rows = A.map;
  const SdpaRun nar = run_sdpa(A, Tq, qn, kvb, don, drop);

  const char* maths[] = {"fp32", "tf32x3", "tf32"};
  const char* algs[] = {"fused", "atomic", "two_kernel"};
  char name[200];
  std::snprintf(name, sizeof name, "sdpa %s %s B%d NH%d T%d->%d Tk%d HS%d p %g %s%s",
                maths[int(A.math)], A.math == SdpaMath::fp32 ? algs[int(A.alg)] : "tc", B, NH, Tf, Tq, Tk, HS, A.p,
                map_name(A.map).c_str(), A.offset_base ? " offset_base" : "");
  const std::string what = name;
  long fwd_bits = 0, fwd_n = 0;  // forward values equal to the full run's bit for bit
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const int f = full_row(b, h, i);
        const size_t sn = 2 * ((size_t(b) * NH + h) * Tq + i);
        const size_t sf = 2 * ((size_t(b) * NH + h) * Tf + f);
        expect_close(what + " m", nar.stats[sn], full.stats[sf], 1e-5, 1e-5, long(sn));
        expect_close(what + " l", nar.stats[sn + 1], full.stats[sf + 1], 1e-5, 1e-4, long(sn));
        fwd_bits += (nar.stats[sn] == full.stats[sf]) + (nar.stats[sn + 1] == full.stats[sf + 1]);
        fwd_n += 2;
        for (int e = 0; e < HS; ++e) {
          const size_t on = (size_t(b) * Tq + i) * C + h * HS + e;
          const size_t of = (size_t(b) * Tf + f) * C + h * HS + e;
          expect_close(what + " out", nar.out[on], full.out[of], 1e-5, 1e-4, long(on));
          expect_close(what + " dq", nar.dq[on], full.dq[of], 1e-4, 1e-3, long(on));
          fwd_bits += nar.out[on] == full.out[of];
          ++fwd_n;
        }
      }
  for (size_t i = 0; i < full.dk.size(); ++i) {
    expect_close(what + " dk", nar.dk[i], full.dk[i], 1e-4, 1e-3, long(i));
    expect_close(what + " dv", nar.dv[i], full.dv[i], 1e-4, 1e-3, long(i));
  }
  std::printf("%-100s %d mismatches (forward %s)\n", what.c_str(), failures - before,
              fwd_bits == fwd_n ? "bit for bit" : "within tolerance");
}

// dropout_add_layer_norm_forward on `rows` rows of `cols` with the mask `m`: out, hidden,
// keep, mean, rstd
struct LnRun {
  std::vector<float> out, hidden, mean, rstd;
  std::vector<uint8_t> keep;
};
LnRun run_ln(const std::vector<float>& x, const std::vector<float>& xb,
             const std::vector<float>& res, const std::vector<float>& w,
             const std::vector<float>& bias, int64_t rows, int64_t cols, const DropoutMask& m) {
  const size_t n = size_t(rows * cols);
  LnRun r{std::vector<float>(n, 555.f), std::vector<float>(n, 555.f),
          std::vector<float>(size_t(rows), 555.f), std::vector<float>(size_t(rows), 555.f),
          std::vector<uint8_t>(n, 7)};
  cuda::dropout_add_layer_norm_forward(r.out.data(), r.hidden.data(), r.keep.data(), r.mean.data(),
                                       r.rstd.data(), x.data(), xb.data(), res.data(), w.data(),
                                       bias.data(), rows, cols, 1e-5, m);
  return r;
}

// Each row of a run against the host: keep from the Philox word of stream row map(r),
// hidden = keep ? (x + xb)·scale : 0, + residual (the same float operations: exact), out from
// a double LayerNorm of hidden.
void check_ln_host(const std::string& what, const LnRun& r, const std::vector<float>& x,
                   const std::vector<float>& xb, const std::vector<float>& res,
                   const std::vector<float>& w, const std::vector<float>& bias, int64_t rows,
                   int64_t cols, const DropoutMask& m) {
  const float scale = float(m.scale);
  for (int64_t i = 0; i < rows; ++i) {
    double s = 0, v = 0;
    for (int64_t c = 0; c < cols; ++c) {
      const size_t e = size_t(i * cols + c);
      const uint64_t word = uint64_t(m.rows(i)) * uint64_t(cols) + uint64_t(c);
      const bool k = dropout_keep(philox_word(m.seed, dropout_offset(m), word), m.threshold);
      if (r.keep[e] != uint8_t(k)) expect_bits(what + " keep", r.keep[e], k, long(e));
      const float xv = x[e] + xb[size_t(c)];
      expect_bits(what + " hidden", r.hidden[e], (k ? xv * scale : 0.f) + res[e], long(e));
      s += r.hidden[e];
    }
    const double mean = s / double(cols);
    for (int64_t c = 0; c < cols; ++c) {
      const double d = r.hidden[size_t(i * cols + c)] - mean;
      v += d * d;
    }
    const double rstd = 1 / std::sqrt(v / double(cols) + 1e-5);
    expect_close(what + " mean", r.mean[size_t(i)], mean, 1e-5, 1e-5, long(i));
    expect_close(what + " rstd", r.rstd[size_t(i)], rstd, 1e-5, 1e-4, long(i));
    for (int64_t c = 0; c < cols; ++c) {
      const size_t e = size_t(i * cols + c);
      const double y = (r.hidden[e] - mean) * rstd * w[size_t(c)] + bias[size_t(c)];
      expect_close(what + " out", r.out[e], y, 1e-5, 1e-4, long(e));
    }
  }
}

// (B·T, cols) rows in full, and the Rn rows `map` picks (full row map(r) for narrowed row r).
void check_ln_rows(int B, int T, int64_t cols, int64_t Rn, const RowMap& map, double p,
                   bool offset_base) {
  const int before = failures;
  const int64_t Rf = int64_t(B) * T;
  std::mt19937 rng(unsigned(Rf * 3 + cols));
  std::uniform_real_distribution<float> U(-1, 1);
  auto rnd = [&](size_t n) {
    std::vector<float> v(n);
    for (float& e : v) e = U(rng);
    return v;
  };
  const std::vector<float> xf = rnd(size_t(Rf * cols)), resf = rnd(xf.size()),
                           xb = rnd(size_t(cols)), w = rnd(size_t(cols)), bias = rnd(size_t(cols));
  std::vector<float> xn(size_t(Rn * cols)), resn(xn.size());
  for (int64_t r = 0; r < Rn; ++r) {
    const int64_t f = map(r);
    if (f < 0 || f >= Rf) throw std::runtime_error("rows_check: the map leaves the tensor");
    std::copy_n(xf.begin() + f * cols, cols, xn.begin() + r * cols);
    std::copy_n(resf.begin() + f * cols, cols, resn.begin() + r * cols);
  }
  uint64_t base = 4242;
  DropoutMask m{true, 99, 5, dropout_threshold(p), 1.0 / (1.0 - p)};
  if (offset_base) m.offset_base = &base;
  const LnRun full = run_ln(xf, xb, resf, w, bias, Rf, cols, m);
  const std::string what = "layernorm B" + std::to_string(B) + " T" + std::to_string(T) + " cols " +
                           std::to_string(cols) + " rows " + std::to_string(Rf) + "->" +
                           std::to_string(Rn) + " p " + std::to_string(p).substr(0, 4) + " " +
                           map_name(map) + (offset_base ? " offset_base" : "");
  check_ln_host(what + " full", full, xf, xb, resf, w, bias, Rf, cols, m);
  m.rows = map;
  const LnRun nar = run_ln(xn, xb, resn, w, bias, Rn, cols, m);
  check_ln_host(what + " narrowed", nar, xn, xb, resn, w, bias, Rn, cols, m);
  for (int64_t r = 0; r < Rn; ++r) {
    const size_t f = size_t(map(r));
    expect_bits(what + " mean", nar.mean[size_t(r)], full.mean[f], long(r));
    expect_bits(what + " rstd", nar.rstd[size_t(r)], full.rstd[f], long(r));
    for (int64_t c = 0; c < cols; ++c) {
      const size_t en = size_t(r * cols + c), ef = f * size_t(cols) + size_t(c);
      if (nar.keep[en] != full.keep[ef])
        expect_bits(what + " keep", nar.keep[en], full.keep[ef], long(en));
      expect_bits(what + " hidden", nar.hidden[en], full.hidden[ef], long(en));
      expect_bits(what + " out", nar.out[en], full.out[ef], long(en));
    }
  }
  std::printf("%-100s %d mismatches (exact)\n", what.c_str(), failures - before);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "rows";
  if (part != "rows") {
    std::printf("rows_check: unknown part '%s' (rows)\n", part.c_str());
    return 2;
  }
  // narrow_cls's map: one row a (b, h), row bh·T + first of the stream
  for (int HS : {32, 64, 128})
    check_sdpa_rows({2, 2, 70, 70, HS, 1, {1, 70, 0}, {60, 70}, 0.3});
  check_sdpa_rows({2, 2, 70, 70, 64, 1, {1, 70, 5}, {60, 70}, 0.3, SdpaMath::fp32,
                   SdpaBackward::fused, true});
  // period 2, stride 35: rows 33, 34, 68, 69 of each head (both sides of the query tile edge)
  check_sdpa_rows({2, 2, 70, 70, 64, 4, {2, 35, 33}, {60, 70}, 0.3});
  // period 5, stride 10: rows 3..7, 13..17, … 193..197 of each head: 100 narrowed query rows
  // (two tiles), 200 full, against 67 keys
  check_sdpa_rows({1, 2, 200, 67, 32, 100, {5, 10, 3}, {}, 0.2});
  // the other backwards, and the tensor cores (forward and backward) at fp32 accuracy
  for (SdpaBackward alg : {SdpaBackward::atomic, SdpaBackward::two_kernel}) {
    check_sdpa_rows({2, 2, 70, 70, 64, 1, {1, 70, 0}, {60, 70}, 0.3, SdpaMath::fp32, alg});
    check_sdpa_rows({2, 2, 70, 70, 64, 4, {2, 35, 33}, {60, 70}, 0.3, SdpaMath::fp32, alg});
  }
  check_sdpa_rows({2, 2, 70, 70, 32, 1, {1, 70, 0}, {60, 70}, 0.3, SdpaMath::tf32x3});
  check_sdpa_rows({2, 2, 70, 70, 64, 4, {2, 35, 33}, {60, 70}, 0.3, SdpaMath::tf32x3});

  // dropout + residual + LayerNorm: [CLS] rows (period 1, stride T), a later token, and pairs
  check_ln_rows(3, 19, 200, 3, {1, 19, 0}, 0.1, false);
  check_ln_rows(3, 19, 200, 3, {1, 19, 11}, 0.3, true);
  check_ln_rows(2, 20, 768, 2, {1, 20, 0}, 0.1, false);
  check_ln_rows(3, 19, 200, 6, {2, 19, 17}, 0.3, false);  // rows 17, 18 of each sequence
  std::printf("rows: %d mismatches\n", failures);
  return failures != 0;
}
