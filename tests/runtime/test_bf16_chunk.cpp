// tests/runtime/test_bf16_chunk.cpp — avx512_bf16_chunk (runtime/cpu/bf16_gemm_avx512.cpp): the
// AMX chunk's contract (runtime/cpu/bf16_amx_tile.h) computed with vdpbf16ps on the same packed
// operands, which is how the attention's products run under --precision bf16 on a CPU with
// AVX512-BF16 and no AMX (AMD Zen 4/5). Against a double sum of the rounded operands' products:
// rows not a multiple of the kernel's 8, a last block of 16 columns alone (N 37), a first column
// past 0 (j0 32), A's k tiles starting inside B's (kb0 1), alpha, beta, a bias, and GELU in the
// store (the bits of gelu_f32_serial after the same store without it); nothing written outside
// the chunk's columns. Against AMX's chunk too, where the CPU has it. *Skipped* on CPUs without
// AVX512-BF16.
#include <bit>
#include <cmath>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/cpu/amx_buffer.h"
#include "runtime/cpu/bf16_amx_tile.h"
#include "runtime/kernels/bf16.h"

using namespace mase;
using namespace mase::cpu;

namespace test_bf16_chunk {

struct Operands {
  int64_t M, N, K, kp, kb0;            // A holds k tiles kb0 .. of B's kp_b = kp + 32 · kb0
  std::vector<float> A, B;             // A (M × K), B (K_b × N), K_b = K + 32 · kb0
  std::vector<uint16_t> a_buf, b_buf;  // the packs
  uint16_t *a = nullptr, *b = nullptr;
};

Operands make(int64_t M, int64_t N, int64_t K, int64_t kb0, uint32_t seed) {
  Operands o{M, N, K, (K + 31) / 32 * 32, kb0, {}, {}, {}, {}};
  const int64_t Kb = K + 32 * kb0, kp_b = o.kp + 32 * kb0;
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> d(-2, 2);
  o.A.resize(size_t(M * K));
  o.B.resize(size_t(Kb * N));
  for (auto& x : o.A) x = d(gen);
  for (auto& x : o.B) x = d(gen);
  o.a = aligned_tiles(o.a_buf, (M + 31) / 32 * 32 * o.kp);
  amx_pack_a(o.A.data(), K, false, 0, M, K, o.kp, o.a);
  const int64_t blocks = (N + 15) / 16;
  o.b = aligned_tiles(o.b_buf, blocks * kp_b * 16);
  amx_pack_b(o.B.data(), N, false, N, Kb, kp_b, 0, blocks, o.b);
  return o;
}

AmxChunk chunk(const Operands& o, int64_t j0, float* C, int64_t ldc, float alpha, float beta,
               const float* bias, bool gelu) {
  return AmxChunk{o.a, o.M, o.kp, o.b, o.kp + 32 * o.kb0, o.kb0, j0, o.N, o.N,
                  C, ldc, alpha, beta, bias, gelu};
}

// how many of C's entries in columns j0 .. N differ from alpha · Σ round(a)·round(b) (A's k
// against B's rows 32·kb0 + k) + beta · C0 + bias by more than fp32 reassociation allows, plus
// any change in the columns before j0 or the gap past N
int mismatches(const Operands& o, int64_t j0, const std::vector<float>& C,
               const std::vector<float>& C0, int64_t ldc, float alpha, float beta,
               const float* bias) {
  int bad = 0;
  for (int64_t i = 0; i < o.M; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = size_t(i * ldc + j);
      if (j < j0 || j >= o.N) {
        bad += std::bit_cast<uint32_t>(C[at]) != std::bit_cast<uint32_t>(C0[at]);
        continue;
      }
      double ref = 0, mag = 0;
      for (int64_t k = 0; k < o.K; ++k) {
        const double x = bf16_round(o.A[size_t(i * o.K + k)]);
        const double y = bf16_round(o.B[size_t((32 * o.kb0 + k) * o.N + j)]);
        ref += x * y;
        mag += std::abs(x * y);
      }
      ref = alpha * ref + beta * C0[at] + (bias ? bias[j] : 0.0f);
      mag = std::abs(alpha) * mag + std::abs(beta * C0[at]) + (bias ? std::abs(bias[j]) : 0.0f);
      bad += !(std::abs(C[at] - ref) <= 1e-5 * mag + 1e-30);
    }
  return bad;
}

}  // namespace test_bf16_chunk

using namespace test_bf16_chunk;

TEST_CASE("avx512-bf16 chunk: the AMX chunk's products on vdpbf16ps, edge shapes") {
  if (!bf16_isa_supported(Bf16Isa::avx512_bf16)) return test::skip("this CPU has no AVX512-BF16");
  struct Shape { int64_t M, N, K, kb0, j0; float alpha, beta; bool bias; };
  const Shape shapes[] = {
      {1, 16, 1, 0, 0, 1.0f, 0.0f, false},     // one row, one column block, k 1
      {13, 37, 70, 0, 0, 0.125f, 0.0f, false},  // ragged rows, a lone last block of 16, k 70
      {64, 128, 64, 0, 32, 1.0f, 1.0f, false},  // attention's tile, from column 32, accumulating
      {40, 64, 33, 1, 0, -0.5f, 1.0f, true},    // A's k tiles from B's second, a bias
  };
  uint32_t seed = 1;
  for (const Shape& s : shapes) {
    const Operands o = make(s.M, s.N, s.K, s.kb0, seed++);
    const int64_t ldc = s.N + 5;
    std::vector<float> C(size_t(s.M * ldc)), bias(size_t(s.N));
    std::mt19937 gen(seed++);
    std::uniform_real_distribution<float> d(-1, 1);
    for (auto& x : C) x = d(gen);
    for (auto& x : bias) x = d(gen);
    const std::vector<float> C0 = C;
    const float* b = s.bias ? bias.data() : nullptr;
    avx512_bf16_chunk(chunk(o, s.j0, C.data(), ldc, s.alpha, s.beta, b, false));
    CAPTURE(s.M);
    CAPTURE(s.N);
    CAPTURE(s.K);
    CHECK(mismatches(o, s.j0, C, C0, ldc, s.alpha, s.beta, b) == 0);
    if (amx_bf16_available()) {  // AMX's chunk: the same products, another order of sums
      std::vector<float> Ca = C0;
      amx_bf16_chunk(chunk(o, s.j0, Ca.data(), ldc, s.alpha, s.beta, b, false));
      CHECK(mismatches(o, s.j0, Ca, C0, ldc, s.alpha, s.beta, b) == 0);
    }
  }
}

TEST_CASE("avx512-bf16 chunk: GELU in the store is gelu_f32_serial of the plain store") {
  if (!bf16_isa_supported(Bf16Isa::avx512_bf16)) return test::skip("this CPU has no AVX512-BF16");
  const Operands o = make(21, 50, 96, 0, 7);
  const int64_t ldc = 50;
  std::vector<float> bias(50);
  for (size_t j = 0; j < bias.size(); ++j) bias[j] = 0.05f * float(j) - 1.0f;
  std::vector<float> plain(size_t(21 * ldc), 0.0f), fused = plain, want(plain.size());
  avx512_bf16_chunk(chunk(o, 0, plain.data(), ldc, 0.25f, 0.0f, bias.data(), false));
  avx512_bf16_chunk(chunk(o, 0, fused.data(), ldc, 0.25f, 0.0f, bias.data(), true));
  gelu_f32_serial(want.data(), plain.data(), int64_t(plain.size()));
  int bad = 0, negative = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    bad += std::bit_cast<uint32_t>(fused[i]) != std::bit_cast<uint32_t>(want[i]);
    negative += plain[i] < 0;
  }
  CHECK(bad == 0);
  CHECK(negative > 100);  // GELU's curved side was exercised
}
