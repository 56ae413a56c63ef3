// scripts/cuda_emu/attn_check.cpp — the CUDA softmax and attention kernels, run on the CPU
// through emu.h (see run.sh), against references computed in double from the definitions.
// Each part prints one line per case and the number of mismatches; exit status 1 on any.
//   softmax  forward and backward, softmax and log_softmax, every kernel path (warp per row,
//            cached block, two-read block), misaligned rows, fully masked rows, the ladder
//   sdpa     the FMA flash attention: HS 32/64/128, ragged tiles, Tq != Tk, padding masks
//            (finfo.min and −inf, fully padded rows), dropout, Tq = 0 and Tk = 0, strided
//            (head-split) views, misaligned rows
//   tc       the tensor-core kernels: tf32x3 at the fp32 tolerances, tf32 at 50× looser
//   bwd      the three fp32 backwards (SdpaBackward: fused, atomic, two_kernel) on shapes that
//            make the fused kernel split a head's key tiles into G = 1, 2, 3 groups (the
//            emulated GPU holds 6 blocks), with masks and dropout; the fused one run twice
//            must give the same bits
#include <cstdio>
#include <limits>
#include <random>
#include <string>

#include "check.h"
#include "emu.h"
// the kernels themselves, as prep.py rewrote them
#include "cuda/sdpa_backward.cu"
#include "cuda/sdpa_backward_fused.cu"
#include "cuda/sdpa_backward_tc.cu"
#include "cuda/sdpa_forward.cu"
#include "cuda/sdpa_forward_tc.cu"
#include "cuda/softmax.cu"
#include "cuda/softmax_ladder.cu"

using namespace mase;

namespace {

// Softmax of (rows, cols) random in [-6, 6) with row 0 all −inf, row 1 −inf on its first half
// and row 2's max in its last column; version 0: softmax_forward (and backward), else a rung of
// the ladder. misalign: the rows start one float past a 16-byte boundary.
void check_softmax(int rows, int cols, bool log, int version = 0, int misalign = 0) {
  std::mt19937 rng(rows * 31 + cols);
  std::uniform_real_distribution<float> U(-6, 6);
  const int n = rows * cols;
  std::vector<float> xb(n + 8), yb(n + 8, 777.f), dy(n), dxb(n + 8, 777.f);
  float *x = xb.data() + misalign, *y = yb.data() + misalign, *dx = dxb.data() + misalign;
  for (int i = 0; i < n; ++i) x[i] = U(rng), dy[i] = U(rng) / 6;
  for (int c = 0; c < cols; ++c) x[c] = -INFINITY;
  if (rows > 1)
    for (int c = 0; c < cols / 2; ++c) x[cols + c] = -INFINITY;
  if (rows > 2) x[3 * cols - 1] = 30;
  if (version) cuda::softmax_forward_version(version, y, x, rows, cols);
  else if (log) cuda::log_softmax_forward(y, x, rows, cols);
  else cuda::softmax_forward(y, x, rows, cols);
  std::vector<double> want(n), dwant(n);
  for (int r = 0; r < rows; ++r) {
    const float* xr = x + r * cols;
    double m = -INFINITY, s = 0, sum = 0;
    for (int c = 0; c < cols; ++c) m = std::max(m, double(xr[c]));
    for (int c = 0; c < cols; ++c) s += m == -INFINITY ? 0.0 : std::exp(xr[c] - m);
    for (int c = 0; c < cols; ++c)
      want[r * cols + c] = m == -INFINITY ? (log ? -INFINITY : 0.0)
                           : log          ? xr[c] - m - std::log(s)
                                          : std::exp(xr[c] - m) / s;
    // the backward from the kernel's own y
    for (int c = 0; c < cols; ++c)
      sum += log ? dy[r * cols + c] : double(dy[r * cols + c]) * y[r * cols + c];
    for (int c = 0; c < cols; ++c) {
      const double yy = y[r * cols + c], g = dy[r * cols + c];
      dwant[r * cols + c] = log ? g - std::exp(yy) * sum : yy * (g - sum);
    }
  }
  const std::string what = std::string(log ? "log_softmax" : "softmax") + " v" +
                           std::to_string(version) + " " + std::to_string(rows) + "x" +
                           std::to_string(cols) + (misalign ? " misaligned" : "");
  for (int i = 0; i < n; ++i)
    expect_close(what + " fwd", y[i], want[i], log ? 2e-5 : 1e-6, 2e-5, i);
  if (y[n] != 777.f) expect_close(what + " wrote past the end", 1, 0, 0, 0, n);
  if (version == 0) {
    if (log) cuda::log_softmax_backward(dx, dy.data(), y, rows, cols);
    else cuda::softmax_backward(dx, dy.data(), y, rows, cols);
    for (int i = 0; i < n; ++i) expect_close(what + " bwd", dx[i], dwant[i], 1e-5, 2e-5, i);
    if (dx[n] != 777.f) expect_close(what + " bwd wrote past the end", 1, 0, 0, 0, n);
  }
  std::printf("%-40s mismatches so far: %d\n", what.c_str(), failures);
}

struct Attn {
  int B, NH, Tq, Tk, HS;
  bool mask_on;
  double hidden;  // the mask value of padded keys
  std::vector<int> lengths;  // per batch: keys kept
  double p;                  // dropout
  SdpaMath math = SdpaMath::fp32;
  int misalign = 0;  // floats added to the views' bases: rows not 16-byte aligned
  SdpaBackward alg = SdpaBackward::fused;
};

// dq, dk, dv of one backward, kept to compare two runs bit for bit
struct Grads {
  std::vector<float> dq, dk, dv;
};

// Forward and backward of the CUDA kernels against attention in double: out, stats, dq, dk, dv.
// q is a head-split view of a (B, Tq, 2, NH, HS) buffer, k and v of one (B, Tk, 2, NH, HS).
Grads check_sdpa(const Attn& A) {
  const int B = A.B, NH = A.NH, Tq = A.Tq, Tk = A.Tk, HS = A.HS, C = NH * HS;
  std::mt19937 rng(B * 1000 + Tq * 7 + Tk + HS);
  std::uniform_real_distribution<float> U(-2, 2), V(-1, 1);
  std::vector<float> qb(B * Tq * 2 * C + 4), kvb(B * Tk * 2 * C + 4), dob(B * Tq * C);
  for (auto& x : qb) x = U(rng);
  for (auto& x : kvb) x = U(rng) / 2;
  for (auto& x : dob) x = V(rng);
  const HeadsView<const float> q{qb.data() + A.misalign, int64_t(Tq) * 2 * C, HS, 2 * C};
  const HeadsView<const float> k{kvb.data() + A.misalign, int64_t(Tk) * 2 * C, HS, 2 * C};
  const HeadsView<const float> v{kvb.data() + C + A.misalign, int64_t(Tk) * 2 * C, HS, 2 * C};
  std::vector<float> mb(B * Tk, 0.f);
  MaskView<float> mask;
  if (A.mask_on) {
    for (int b = 0; b < B; ++b)
      for (int j = 0; j < Tk; ++j) mb[b * Tk + j] = j < A.lengths[b] ? 0.f : float(A.hidden);
    mask = MaskView<float>{mb.data(), Tk, 0, 0, 1};
  }
  DropoutMask drop;
  if (A.p > 0) drop = {true, 1234, 77, dropout_threshold(A.p), 1.0 / (1.0 - A.p)};
  const float scale = 1.f / std::sqrt(float(HS));
  const SdpaSizes n{B, NH, Tq, Tk, HS, HS};
  // NaN: a partial dQ sum read before the kernel wrote it would poison the gradients
  std::vector<float> ob(B * Tq * C, 555.f), stats(B * NH * Tq * 2, 555.f),
      ws(cuda::sdpa_backward_workspace(n, A.math, A.alg), NAN);
  std::vector<float> dqb(B * Tq * C, 555.f), dkb(B * Tk * C, 555.f), dvb(B * Tk * C, 555.f);
  auto packed = [&](float* p, int T) { return HeadsView<float>{p, int64_t(T) * C, HS, C}; };
  cuda::sdpa_forward(packed(ob.data(), Tq), stats.data(), q, k, v, mask, n, scale, drop, A.math);
  const HeadsView<const float> out{ob.data(), int64_t(Tq) * C, HS, C};
  const HeadsView<const float> dout{dob.data(), int64_t(Tq) * C, HS, C};
  cuda::sdpa_backward(packed(dqb.data(), Tq), packed(dkb.data(), Tk), packed(dvb.data(), Tk), dout,
                      out, stats.data(), q, k, v, mask, n, scale, drop, ws.data(), A.math, A.alg);

  char name[160];
  const char* algs[] = {"fused", "atomic", "two_kernel"};
  const bool fused = A.math == SdpaMath::fp32 && A.alg == SdpaBackward::fused && Tq && Tk;
  std::snprintf(name, sizeof name, "sdpa math %d %s%s B%d NH%d Tq%d Tk%d HS%d mask %g p %g%s",
                int(A.math), algs[int(A.alg)],
                fused ? ("(G" + std::to_string(cuda::sdpa_bwd::fused_groups(n)) + ")").c_str() : "",
                B, NH, Tq, Tk, HS, A.mask_on ? A.hidden : 0.0, A.p,
                A.misalign ? " misaligned" : "");
  const std::string what = name;
  const double tol = A.math == SdpaMath::tf32 ? 50.0 : 1.0;  // tf32: ~2⁻¹¹ a product
  auto at = [](const HeadsView<const float>& x, int b, int h, int t, int e) {
    return double(x.data[b * x.sb + h * x.sh + t * x.st + e]);
  };
  std::vector<double> rdq(dqb.size(), 0), rdk(dkb.size(), 0), rdv(dvb.size(), 0);
  for (int b = 0; b < B; ++b)
    for (int h = 0; h < NH; ++h)
      for (int i = 0; i < Tq; ++i) {
        const int64_t bh = b * NH + h, srow = 2 * (bh * Tq + i);
        std::vector<double> s(Tk), P(Tk), z(Tk, 1.0);
        double m = -INFINITY, l = 0, Dd = 0;
        for (int j = 0; j < Tk; ++j) {
          double d = 0;
          for (int e = 0; e < HS; ++e) d += at(q, b, h, i, e) * at(k, b, h, j, e);
          s[j] = float(d) * scale + (A.mask_on ? mb[b * Tk + j] : 0.f);
          m = std::max(m, s[j]);
          if (drop.on) {
            const uint64_t word = (uint64_t(bh) * Tq + i) * Tk + j;
            z[j] = dropout_keep(philox_word(drop.seed, drop.offset, word), drop.threshold)
                       ? float(drop.scale) : 0.0;
          }
        }
        for (int j = 0; j < Tk; ++j) l += (P[j] = m == -INFINITY ? 0.0 : std::exp(s[j] - m));
        for (int j = 0; j < Tk; ++j) P[j] = l > 0 ? P[j] / l : 0.0;
        expect_close(what + " m", stats[srow], m, 1e-5 * tol, 1e-5 * tol, srow);
        expect_close(what + " l", stats[srow + 1], l, 1e-5 * tol, 1e-4 * tol, srow);
        for (int e = 0; e < HS; ++e) {
          double o = 0;
          for (int j = 0; j < Tk; ++j) o += z[j] * P[j] * at(v, b, h, j, e);
          const double got = at(out, b, h, i, e);
          expect_close(what + " out", got, o, 1e-5 * tol, 1e-4 * tol, i * HS + e);
          Dd += at(dout, b, h, i, e) * got;
        }
        for (int j = 0; j < Tk; ++j) {
          double dp = 0;
          for (int e = 0; e < HS; ++e) dp += at(dout, b, h, i, e) * at(v, b, h, j, e);
          const double ds = P[j] * (z[j] * dp - Dd);
          for (int e = 0; e < HS; ++e) {
            rdq[(b * Tq + i) * C + h * HS + e] += scale * ds * at(k, b, h, j, e);
            rdk[(b * Tk + j) * C + h * HS + e] += scale * ds * at(q, b, h, i, e);
            rdv[(b * Tk + j) * C + h * HS + e] += z[j] * P[j] * at(dout, b, h, i, e);
          }
        }
      }
  for (size_t i = 0; i < rdq.size(); ++i)
    expect_close(what + " dq", dqb[i], rdq[i], 1e-4 * tol, 1e-3 * tol, i);
  for (size_t i = 0; i < rdk.size(); ++i)
    expect_close(what + " dk", dkb[i], rdk[i], 1e-4 * tol, 1e-3 * tol, i);
  for (size_t i = 0; i < rdv.size(); ++i)
    expect_close(what + " dv", dvb[i], rdv[i], 1e-4 * tol, 1e-3 * tol, i);
  std::printf("%-72s mismatches so far: %d\n", what.c_str(), failures);
  return {dqb, dkb, dvb};
}

// Two runs of the same backward give the same bits.
void check_same_bits(const Attn& A) {
  const Grads a = check_sdpa(A), b = check_sdpa(A);
  if (a.dq != b.dq || a.dk != b.dk || a.dv != b.dv) {
    std::printf("FAIL two runs of the same backward differ\n");
    ++failures;
  }
}

constexpr double kLowest = std::numeric_limits<float>::lowest();

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "softmax";
  if (part == "softmax") {
    const int shapes[][2] = {{9, 1},     {9, 31},   {5, 128},  {3, 257},  {3, 33},   {5, 1024},
                             {2, 1025},  {2, 4096}, {2, 5000}, {2, 6145}, {2, 13001}};
    for (auto& s : shapes)
      for (bool log : {false, true}) check_softmax(s[0], s[1], log);
    check_softmax(5, 128, false, 0, 1);
    check_softmax(2, 4096, true, 0, 1);
    for (int v = 1; v <= cuda::kSoftmaxVersions; ++v)
      for (int cols : {257, 1024, 4096})
        if (cuda::softmax_version_applies(v, cols)) check_softmax(3, cols, false, v);
  } else if (part == "sdpa") {
    for (int HS : {32, 64, 128}) {
      check_sdpa({1, 1, 1, 1, HS, false, 0, {}, 0.0});
      check_sdpa({2, 1, 70, 70, HS, true, kLowest, {60, 0}, 0.0});
      check_sdpa({1, 2, 5, 131, HS, true, -INFINITY, {100}, 0.0});
      check_sdpa({2, 1, 67, 67, HS, true, -INFINITY, {67, 0}, 0.3});
    }
    check_sdpa({1, 1, 130, 20, 64, false, 0, {}, 0.5});
    check_sdpa({1, 2, 70, 70, 32, false, 0, {}, 0.0, SdpaMath::fp32, 1});
    check_sdpa({1, 1, 0, 5, 64, false, 0, {}, 0.0});
    check_sdpa({1, 1, 5, 0, 64, false, 0, {}, 0.0});
  } else if (part == "tc") {
    for (SdpaMath math : {SdpaMath::tf32x3, SdpaMath::tf32})
      for (int HS : {32, 64, 128}) {
        check_sdpa({2, 1, 70, 70, HS, true, kLowest, {60, 0}, 0.0, math});
        check_sdpa({1, 2, 5, 131, HS, true, -INFINITY, {100}, 0.3, math});
      }
    check_sdpa({1, 1, 0, 5, 64, false, 0, {}, 0.0, SdpaMath::tf32x3});
    check_sdpa({1, 1, 5, 0, 64, false, 0, {}, 0.0, SdpaMath::tf32x3});
    check_sdpa({1, 2, 70, 70, 64, false, 0, {}, 0.0, SdpaMath::tf32x3, 1});
  } else if (part == "bwd") {
    for (SdpaBackward alg : {SdpaBackward::fused, SdpaBackward::atomic, SdpaBackward::two_kernel}) {
      Attn a{1, 1, 70, 70, 64, true, kLowest, {60}, 0.0};  // G = 2
      a.alg = alg;
      check_sdpa(a);
      a = {2, 1, 131, 150, 64, true, -INFINITY, {100, 0}, 0.3};  // G = 3, a fully padded batch
      a.alg = alg;
      check_sdpa(a);
      a = {3, 2, 40, 100, 32, false, 0, {}, 0.0};  // G = 1
      a.alg = alg;
      check_sdpa(a);
      a = {3, 2, 100, 70, 64, true, kLowest, {60, 70, 0}, 0.2};  // G = 1: 2 key tiles a block
      a.alg = alg;
      check_sdpa(a);
      a = {1, 1, 300, 130, 128, true, kLowest, {129}, 0.1};  // G = 3 over 3 key tiles
      a.alg = alg;
      check_sdpa(a);
      a = {1, 2, 70, 70, 64, false, 0, {}, 0.0, SdpaMath::fp32, 1};  // misaligned rows
      a.alg = alg;
      check_sdpa(a);
      a = {1, 1, 0, 5, 64, false, 0, {}, 0.0};  // no query; no key
      a.alg = alg;
      check_sdpa(a);
      a = {1, 1, 5, 0, 64, false, 0, {}, 0.0};
      a.alg = alg;
      check_sdpa(a);
    }
    check_same_bits({1, 1, 300, 300, 64, true, kLowest, {250}, 0.1});  // fused, G = 3
  } else {
    std::printf("attn_check: unknown part '%s' (softmax, sdpa, tc, bwd)\n", part.c_str());
    return 2;
  }
  std::printf("%s: %d mismatches\n", part.c_str(), failures);
  return failures != 0;
}
