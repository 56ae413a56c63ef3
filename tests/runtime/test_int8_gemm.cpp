// tests/runtime/test_int8_gemm.cpp — the int8 GEMM (runtime/kernels/int8_gemm.h): hand-checked
// values, every ISA path against the scalar reference bit for bit on odd sizes (each ISA case
// is *skipped* on a CPU without it), the extremes of the int8 range, block scaling with NaN and
// zero scales, scales whose product leaves fp32 (against the fp32 reference), the −128
// fallback of the AVX2 path, and the integer activation codes.
#include <algorithm>
#include <cfloat>
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "helpers.h"
#include "runtime/error.h"
#include "runtime/kernels/int8_gemm.h"
#include "runtime/kernels/mxint8.h"
#include "runtime/kernels/quant_scalar.h"
#include "runtime/parallel.h"

using namespace mase;
using namespace mase::cpu;

namespace {

std::vector<int8_t> random_codes(int64_t n, uint32_t seed, int lo = -128, int hi = 127) {
  std::mt19937 gen(seed);
  std::uniform_int_distribution<int> d(lo, hi);
  std::vector<int8_t> v(static_cast<size_t>(n));
  for (auto& x : v) x = static_cast<int8_t>(d(gen));
  return v;
}

// Bit-for-bit equality of float arrays (NaN equals NaN).
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

bool runs(Int8Isa isa) {
  if (int8_isa_supported(isa)) return true;
  test::skip(std::string("this CPU has no ") + int8_isa_name(isa));
  return false;
}

// int32 product on every odd size combination: packed for `isa`, against the reference.
void check_int32_sizes(Int8Isa isa, int b_lo) {
  for (int64_t M : {1, 5, 13, 97})
    for (int64_t N : {1, 17, 33, 50})
      for (int64_t K : {1, 3, 31, 67, 130}) {
        const auto A = random_codes(M * K, uint32_t(M * 1000 + N * 10 + K));
        const auto B = random_codes(N * K, uint32_t(K * 1000 + N), b_lo, 127);
        std::vector<int32_t> want(static_cast<size_t>(M * N)), got(size_t(M * N), 7);
        int8_gemm_reference(want.data(), N, A.data(), K, B.data(), K, M, N, K);
        const Int8PackedB p = int8_pack_b(B.data(), K, nullptr, N, K, K, isa);
        CHECK(p.isa == isa);
        int8_gemm(got.data(), N, A.data(), K, M, p);
        INFO(int8_isa_name(isa), " M=", M, " N=", N, " K=", K);
        CHECK(got == want);
      }
}

// Block-scaled product: K cut in blocks of 32 (a short last block), random power-of-two
// scales, one NaN block scale and one zero, bias or not. Bit-exact against the reference.
void check_scaled(Int8Isa isa) {
  for (int64_t K : {5, 32, 70, 200, 1100})  // 1100: 35 blocks, three VNNI slices of K
    for (bool with_bias : {false, true}) {
      const int64_t M = 15, N = 37, block = 32, nb = (K + block - 1) / block;
      const auto A = random_codes(M * K, uint32_t(K + 1)), B = random_codes(N * K, uint32_t(K + 2), -127);
      std::mt19937 gen{uint32_t(K)};
      std::uniform_int_distribution<int> e(-20, 4);
      std::vector<float> sa(static_cast<size_t>(M * nb)), sb(static_cast<size_t>(N * nb)), bias(static_cast<size_t>(N));
      for (auto& s : sa) s = std::ldexp(1.0f, e(gen));
      for (auto& s : sb) s = std::ldexp(1.0f, e(gen));
      for (auto& b : bias) b = float(e(gen)) / 7.0f;
      sa[3] = NAN;   // row 0 or 1: every output of that row is NaN
      sb[5] = 0.0f;  // one block of one column contributes nothing
      std::vector<float> want(static_cast<size_t>(M * N)), got(size_t(M * N), -1.0f);
      const float* bp = with_bias ? bias.data() : nullptr;
      int8_gemm_scaled_reference(want.data(), N, A.data(), K, sa.data(), B.data(), K, sb.data(),
                                 M, N, K, block, bp);
      const Int8PackedB p = int8_pack_b(B.data(), K, sb.data(), N, K, block, isa);
      REQUIRE(p.nblocks == nb);
      int8_gemm_scaled(got.data(), N, A.data(), K, sa.data(), M, p, bp);
      INFO(int8_isa_name(isa), " K=", K, " bias=", with_bias);
      CHECK(same_bits(got, want));
      CHECK(std::isnan(want[size_t((3 / nb) * N)]));  // the NaN scale reached its row
      if (isa == Int8Isa::reference) {  // reads no offset codes
        CHECK_THROWS_AS(int8_gemm_scaled(got.data(), N, A.data(), K, sa.data(), M, p, bp, true), ConfigError);
        continue;
      }
      // the same A as offset codes (a ^ 0x80): read in place when no block is padded (K 32,
      // 200, 1100 on VNNI), else packed back; the same bits either way
      std::vector<int8_t> offset(A.size());
      for (size_t i = 0; i < A.size(); ++i) offset[i] = int8_t(A[i] ^ 0x80);
      std::vector<float> got_offset(size_t(M * N), -1.0f);
      int8_gemm_scaled(got_offset.data(), N, offset.data(), K, sa.data(), M, p, bp, true);
      CHECK(same_bits(got_offset, want));
    }
}

// The quantizer's offset codes (runtime/kernels/int8_gemm.h) are its codes ^ 0x80, byte by byte.
template <class F>
void check_offset_codes(const std::vector<int8_t>& codes, F&& quantize_offset) {
  std::vector<int8_t> got(codes.size());
  quantize_offset(got.data());
  size_t bad = 0;
  for (size_t i = 0; i < codes.size(); ++i) bad += got[i] != int8_t(codes[i] ^ 0x80);
  CHECK(bad == 0);
}

// MXINT8 codes of x (rows, K) by the packing kernel (the definition, runtime/kernels/mxint8.h)
// and by int8_quantize_mxint8, whose codes must equal it — and whose offset codes must be those
// codes ^ 0x80; the exponents and scales come back for the caller's checks.
struct MxCodes {
  std::vector<uint8_t> exps;
  std::vector<float> scales;
  std::vector<int8_t> codes;
};
MxCodes check_mxint8_codes(const std::vector<float>& x, int64_t rows, int64_t K) {
  const size_t nb = size_t(rows * ((K + 31) / 32));
  MxCodes m{std::vector<uint8_t>(nb), std::vector<float>(nb), std::vector<int8_t>(x.size())};
  std::vector<int8_t> want(x.size());
  mxint8_quantize(want.data(), m.exps.data(), x.data(), rows, K);
  int8_quantize_mxint8(m.codes.data(), m.scales.data(), x.data(), rows, K);
  CHECK(m.codes == want);
  check_offset_codes(want, [&](int8_t* q) { int8_quantize_mxint8(q, m.scales.data(), x.data(), rows, K, true); });
  return m;
}

}  // namespace

TEST_CASE("int8 gemm: hand-checked product on every path") {
  // A = [[1, 2, 3], [-4, 5, -6]], B = [[7, 8, 9], [-1, 0, 1]]
  // C = A·Bᵀ = [[7 + 16 + 27, -1 + 0 + 3], [-28 + 40 - 54, 4 + 0 - 6]] = [[50, 2], [-42, -2]]
  const std::vector<int8_t> A = {1, 2, 3, -4, 5, -6}, B = {7, 8, 9, -1, 0, 1};
  for (Int8Isa isa : {Int8Isa::reference, Int8Isa::avx2, Int8Isa::avx512_vnni}) {
    if (!int8_isa_supported(isa)) continue;  // the per-ISA cases below say skipped
    std::vector<int32_t> C(4);
    int8_gemm(C.data(), 2, A.data(), 3, 2, int8_pack_b(B.data(), 3, nullptr, 2, 3, 3, isa));
    CHECK(C == std::vector<int32_t>{50, 2, -42, -2});
  }
  std::vector<int32_t> R(4);
  int8_gemm_reference(R.data(), 2, A.data(), 3, B.data(), 3, 2, 2, 3);
  CHECK(R == std::vector<int32_t>{50, 2, -42, -2});
}

TEST_CASE("int8 gemm: the reference path packed and run equals the loops on odd sizes") {
  check_int32_sizes(Int8Isa::reference, -128);
}

TEST_CASE("int8 gemm: avx512-vnni equals the reference on odd sizes") {
  if (runs(Int8Isa::avx512_vnni)) check_int32_sizes(Int8Isa::avx512_vnni, -128);
}

TEST_CASE("int8 gemm: avx2 equals the reference on odd sizes") {
  if (runs(Int8Isa::avx2)) check_int32_sizes(Int8Isa::avx2, -127);
}

TEST_CASE("int8 gemm: the extremes of int8 sum exactly (no saturation, no overflow)") {
  // every a = −128 (u8 offset 0; |a| = 128 for the sign trick), b = ±127 or −128:
  // the sum is K·a·b, e.g. 4099·(−128)·127 = −66,633,344
  const int64_t M = 7, N = 19, K = 4099;
  std::vector<int8_t> A(size_t(M * K), -128), B(static_cast<size_t>(N * K));
  for (int64_t j = 0; j < N; ++j)
    for (int64_t k = 0; k < K; ++k) B[size_t(j * K + k)] = int8_t(j % 2 ? 127 : -127);
  for (Int8Isa isa : {Int8Isa::reference, Int8Isa::avx2, Int8Isa::avx512_vnni}) {
    if (!int8_isa_supported(isa)) continue;
    std::vector<int32_t> C(static_cast<size_t>(M * N));
    int8_gemm(C.data(), N, A.data(), K, M, int8_pack_b(B.data(), K, nullptr, N, K, K, isa));
    INFO(int8_isa_name(isa));
    CHECK(C[0] == K * -128 * -127);  // 66,633,344
    CHECK(C[1] == K * -128 * 127);
    CHECK(C[size_t(M * N - 1)] == K * -128 * -127);
  }
  // −128 · −128 through the VNNI offset trick: (0)·(−128) − 128·Σ(−128) = 128·128·K
  std::fill(B.begin(), B.end(), int8_t(-128));
  if (int8_isa_supported(Int8Isa::avx512_vnni)) {
    std::vector<int32_t> C(static_cast<size_t>(M * N));
    int8_gemm(C.data(), N, A.data(), K, M,
              int8_pack_b(B.data(), K, nullptr, N, K, K, Int8Isa::avx512_vnni));
    CHECK(C[0] == K * 128 * 128);
  }
}

TEST_CASE("int8 gemm: a B holding -128 packed for avx2 falls back to the reference, exactly") {
  if (!runs(Int8Isa::avx2)) return;
  const int64_t M = 9, N = 21, K = 45;
  const auto A = random_codes(M * K, 1);
  auto B = random_codes(N * K, 2, -127);
  B[100] = -128;  // one weight at the bottom of the range
  const Int8PackedB p = int8_pack_b(B.data(), K, nullptr, N, K, K, Int8Isa::avx2);
  CHECK(p.has_min);
  CHECK(p.isa == Int8Isa::reference);
  std::vector<int32_t> want(static_cast<size_t>(M * N)), got(static_cast<size_t>(M * N));
  int8_gemm_reference(want.data(), N, A.data(), K, B.data(), K, M, N, K);
  int8_gemm(got.data(), N, A.data(), K, M, p);
  CHECK(got == want);
}

TEST_CASE("int8 gemm: block-scaled reference path bit-exact") { check_scaled(Int8Isa::reference); }

TEST_CASE("int8 gemm: block-scaled avx512-vnni bit-exact against the reference") {
  if (runs(Int8Isa::avx512_vnni)) check_scaled(Int8Isa::avx512_vnni);
}

TEST_CASE("int8 gemm: block-scaled avx2 bit-exact against the reference") {
  if (runs(Int8Isa::avx2)) check_scaled(Int8Isa::avx2);
}

// Int8Isa::onednn (runtime/cpu/onednn_gemm.h): one scale for all rows of A (as the integer
// formats give), a NaN row, power-of-two row scales of B, one of them 0, bias or not: the
// same bits as the reference (its two roundings: the exact scaled sum, then + bias). Rows
// with different scales, and blocks of 32, fall back to our own paths — still exact.
TEST_CASE("int8 gemm: onednn bit-exact against the reference; its fallbacks too") {
  if (!runs(Int8Isa::onednn)) return;
  for (int64_t M : {1, 37, 300})
    for (int64_t K : {64, 259})
      for (bool with_bias : {false, true}) {
        const int64_t N = 131;
        const auto A = random_codes(M * K, uint32_t(M + K)), B = random_codes(N * K, uint32_t(K));
        std::vector<float> sa(static_cast<size_t>(M), 0.0625f), sb(static_cast<size_t>(N)),
            bias(static_cast<size_t>(N));
        for (int64_t j = 0; j < N; ++j) {
          sb[size_t(j)] = std::ldexp(1.0f, -int(j % 9));
          bias[size_t(j)] = float(j % 11) / 7.0f - 0.5f;
        }
        sb[3] = 0.0f;
        if (M > 1) sa[1] = NAN;
        const float* bp = with_bias ? bias.data() : nullptr;
        std::vector<float> want(static_cast<size_t>(M * N)), got(static_cast<size_t>(M * N), -1.0f);
        int8_gemm_scaled_reference(want.data(), N, A.data(), K, sa.data(), B.data(), K, sb.data(),
                                   M, N, K, K, bp);
        const Int8PackedB p = int8_pack_b(B.data(), K, sb.data(), N, K, K, Int8Isa::onednn);
        REQUIRE(p.isa == Int8Isa::onednn);
        int8_gemm_scaled(got.data(), N, A.data(), K, sa.data(), M, p, bp);
        INFO("M=", M, " K=", K, " bias=", with_bias);
        CHECK(same_bits(got, want));
        if (M > 2) {  // two activation scales: three runs of rows, exactly
          sa[2] = 0.125f;
          int8_gemm_scaled_reference(want.data(), N, A.data(), K, sa.data(), B.data(), K,
                                     sb.data(), M, N, K, K, bp);
          int8_gemm_scaled(got.data(), N, A.data(), K, sa.data(), M, p, bp);
          CHECK(same_bits(got, want));
        }
        std::vector<int32_t> ci(static_cast<size_t>(M * N));
        CHECK_THROWS_AS(int8_gemm(ci.data(), N, A.data(), K, M, p), ConfigError);  // scaled only
      }
  // MXINT8's blocks of 32, and a B under 64 wide: packed for our own kernel instead
  const auto B = random_codes(80 * 64, 9);
  CHECK(int8_pack_b(B.data(), 64, nullptr, 80, 64, 32, Int8Isa::onednn).isa != Int8Isa::onednn);
  CHECK(int8_pack_b(B.data(), 64, nullptr, 5, 64, 64, Int8Isa::onednn).isa != Int8Isa::onednn);
}

TEST_CASE("int8 gemm: the result does not depend on the thread count") {
  // our own best kernel (the int32 product: onednn has the scaled one only)
  const Int8Isa isa = int8_isa_supported(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni
                      : int8_isa_supported(Int8Isa::avx2)      ? Int8Isa::avx2
                                                               : Int8Isa::reference;
  const int64_t M = 301, N = 70, K = 96;
  const auto A = random_codes(M * K, 5), B = random_codes(N * K, 6, -127);
  const Int8PackedB p = int8_pack_b(B.data(), K, nullptr, N, K, K, isa);
  std::vector<int32_t> one(static_cast<size_t>(M * N)), two(static_cast<size_t>(M * N));
  set_num_threads(1);
  int8_gemm(one.data(), N, A.data(), K, M, p);
  set_num_threads(2);
  int8_gemm(two.data(), N, A.data(), K, M, p);
  set_num_threads(0);
  CHECK(one == two);
}

// The fake-quantized fp32 reference of the scaled product: every code times its scale as an
// fp32 value, products and sums in fp32, k after k (what Q(x)·Q(W)ᵀ in an fp32 GEMM computes).
std::vector<float> fp32_reference(const std::vector<int8_t>& A, const std::vector<float>& sa,
                                  const std::vector<int8_t>& B, const std::vector<float>& sb,
                                  int64_t M, int64_t N, int64_t K, int64_t block) {
  const int64_t nb = (K + block - 1) / block;
  std::vector<float> C(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      float acc = 0.0f;
      for (int64_t k = 0; k < K; ++k)
        acc += (float(A[size_t(i * K + k)]) * sa[size_t(i * nb + k / block)]) *
               (float(B[size_t(j * K + k)]) * sb[size_t(j * nb + k / block)]);
      C[size_t(i * N + j)] = acc;
    }
  return C;
}

// Scales whose fp32 product sa·sb leaves fp32 (the sum is scaled after accumulation): near
// FLT_MAX, 2^120·2^20 overflowed to inf, and a block whose sum is 0 (codes on disjoint k) gave
// 0·inf = NaN; near FLT_MIN, 2^−126·2^−30 = 2^−156 flushed to 0 and dropped a block whose
// products (2^−145 each) are fp32 subnormals. The fp32 reference is finite and exact here
// (every product and sum is a power of two or a small multiple of one), so: equal, bit for bit,
// on every path — and the paths' results for ordinary scales are untouched (the tests above).
TEST_CASE("int8 gemm: scale products beyond fp32 equal the fp32 reference on every path") {
  const float big = std::ldexp(1.0f, 120), tiny = FLT_MIN;  // FLT_MIN = 2^−126
  // blocks of 32 (MXINT8's): A row 0 = (1 on k < 16, 0 on 16..31 | 2), scales (2^120, 2^−3);
  // row 1 = (64 | 0), scales (FLT_MIN, 1). B row 0 = (0 on k < 16, 1 on 16..31 | 3), scales
  // (2^20, 2^−2); row 1 = (32 | 5), scales (2^−30, 1).
  const int64_t M = 2, N = 2, K = 64;
  std::vector<int8_t> A(size_t(M * K)), B(size_t(N * K));
  for (int64_t k = 0; k < K; ++k) {
    A[size_t(k)] = int8_t(k < 16 ? 1 : k < 32 ? 0 : 2);
    A[size_t(K + k)] = int8_t(k < 32 ? 64 : 0);
    B[size_t(k)] = int8_t(k < 16 ? 0 : k < 32 ? 1 : 3);
    B[size_t(K + k)] = int8_t(k < 32 ? 32 : 5);
  }
  const std::vector<float> sa = {big, 0.125f, tiny, 1.0f};
  const std::vector<float> sb = {std::ldexp(1.0f, 20), 0.25f, std::ldexp(1.0f, -30), 1.0f};
  const std::vector<float> want = fp32_reference(A, sa, B, sb, M, N, K, 32);
  // (0, 0): block 0 sums to 0 under 2^140, block 1 gives 32·6/32 = 6; (1, 1): 32·2^−145
  CHECK(want == std::vector<float>{6.0f, std::ldexp(1.0f, 99), std::ldexp(1.0f, -96),
                                   std::ldexp(1.0f, -140)});
  std::vector<float> got(want.size(), -1.0f);
  int8_gemm_scaled_reference(got.data(), N, A.data(), K, sa.data(), B.data(), K, sb.data(), M, N,
                             K, 32, nullptr);
  CHECK(same_bits(got, want));
  for (Int8Isa isa : {Int8Isa::reference, Int8Isa::avx2, Int8Isa::avx512_vnni}) {
    if (!int8_isa_supported(isa)) continue;
    INFO(std::string(int8_isa_name(isa)));
    const Int8PackedB p = int8_pack_b(B.data(), K, sb.data(), N, K, 32, isa);
    std::fill(got.begin(), got.end(), -1.0f);
    int8_gemm_scaled(got.data(), N, A.data(), K, sa.data(), M, p, nullptr);
    CHECK(same_bits(got, want));
    if (isa == Int8Isa::reference) continue;
    std::vector<int8_t> offset(A.size());  // offset codes, read in place (VNNI, K 64)
    for (size_t i = 0; i < A.size(); ++i) offset[i] = int8_t(A[i] ^ 0x80);
    std::fill(got.begin(), got.end(), -1.0f);
    int8_gemm_scaled(got.data(), N, offset.data(), K, sa.data(), M, p, nullptr, true);
    CHECK(same_bits(got, want));
  }
  // oneDNN (one block per row, N and K from 64): row 0 = 1 on k < 32, scale 2^120; row 1 = 64,
  // scale FLT_MIN; even columns 1 on k ≥ 32, scale 2^20 (row 0: a sum of 0 under 2^140); odd
  // columns 32, scale 2^−30 (row 1: 2^17 under 2^−156), a bias on the second pass
  if (!int8_isa_supported(Int8Isa::onednn)) return;
  const int64_t N2 = 64;
  std::vector<int8_t> A2(size_t(M * K)), B2(size_t(N2 * K));
  std::vector<float> sb2(static_cast<size_t>(N2)), bias(static_cast<size_t>(N2));
  for (int64_t k = 0; k < K; ++k) {
    A2[size_t(k)] = int8_t(k < 32 ? 1 : 0);
    A2[size_t(K + k)] = 64;
  }
  for (int64_t j = 0; j < N2; ++j) {
    for (int64_t k = 0; k < K; ++k) B2[size_t(j * K + k)] = int8_t(j % 2 ? 32 : k >= 32);
    sb2[size_t(j)] = std::ldexp(1.0f, j % 2 ? -30 : 20);
    bias[size_t(j)] = float(j % 5) - 2.0f;
  }
  const std::vector<float> sa2 = {big, tiny};
  const Int8PackedB p = int8_pack_b(B2.data(), K, sb2.data(), N2, K, K, Int8Isa::onednn);
  REQUIRE(p.isa == Int8Isa::onednn);
  std::vector<float> want2 = fp32_reference(A2, sa2, B2, sb2, M, N2, K, K);
  CHECK(want2[0] == 0.0f);
  CHECK(want2[1] == std::ldexp(1.0f, 100));
  CHECK(want2[size_t(N2 + 1)] == std::ldexp(1.0f, -139));
  std::vector<float> got2(want2.size(), -1.0f);
  int8_gemm_scaled(got2.data(), N2, A2.data(), K, sa2.data(), M, p, nullptr);
  CHECK(same_bits(got2, want2));
  for (size_t i = 0; i < want2.size(); ++i) want2[i] += bias[i % size_t(N2)];
  int8_gemm_scaled(got2.data(), N2, A2.data(), K, sa2.data(), M, p, bias.data());
  CHECK(same_bits(got2, want2));
}

TEST_CASE("int8 gemm: errors") {
  const std::vector<int8_t> B(64 * 2, 1);
  const Int8PackedB p = int8_pack_b(B.data(), 64, nullptr, 2, 64, 32, Int8Isa::reference);
  std::vector<int32_t> C(2);
  CHECK_THROWS_AS(int8_gemm(C.data(), 2, B.data(), 64, 1, p), ConfigError);  // 2 blocks
  CHECK_THROWS_WITH_AS(int8_pack_b(B.data(), 64, nullptr, 2, 64, 0, Int8Isa::reference),
                       "[int8_pack_b] expected a block ≥ 1, got 0", ConfigError);
  const std::vector<int8_t> wide(70000, 1);
  CHECK_THROWS_AS(int8_pack_b(wide.data(), 70000, nullptr, 1, 70000, 70000, Int8Isa::reference),
                  ConfigError);
  CHECK_THROWS_AS(int8_pack_b(B.data(), 64, nullptr, -1, 64, 64, Int8Isa::reference), ShapeError);
}

TEST_CASE("int8 quantize integer: the codes of quant_scalar's integer format, NaN rows marked") {
  // integer(8, 2): q = clamp(RNE(x·4), −128, 127); ties to even: 0.125·4 = 0.5 → 0,
  // 0.375·4 = 1.5 → 2, −0.625·4 = −2.5 → −2; 40·4 = 160 → 127; −33·4 → −128; inf → 127
  const std::vector<float> x = {0.125f, 0.375f, -0.625f, 40.0f, -33.0f, INFINITY, -0.0f, 1.0f,
                                0.5f,   NAN,    2.0f,    -1.0f, 0.2f,   0.3f,     -0.1f, 3.1f};
  std::vector<int8_t> q(16);
  std::vector<float> s(2);
  int8_quantize_integer(q.data(), s.data(), x.data(), 2, 8, 8, 2);
  CHECK(std::vector<int>(q.begin(), q.begin() + 8) == std::vector<int>{0, 2, -2, 127, -128, 127, 0, 4});
  CHECK(s[0] == 0.25f);
  CHECK(std::isnan(s[1]));  // the row with the NaN
  // against the fake quantizer on many values: code · 2^−f == integer_one(x)
  std::vector<float> v(4096);
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> d(-40.0f, 40.0f);
  for (auto& e : v) e = std::round(d(gen) * 16.0f) / 32.0f;  // many exact ties
  for (auto [w, f] : {std::pair{8, 4}, {6, 2}, {4, 0}, {8, 7}}) {
    std::vector<int8_t> codes(v.size());
    std::vector<float> rs(1);
    int8_quantize_integer(codes.data(), rs.data(), v.data(), 1, int64_t(v.size()), w, f);
    const auto p = integer_params<float>(w, f);
    int bad = 0;
    for (size_t i = 0; i < v.size(); ++i) bad += float(codes[i]) * rs[0] != integer_one(v[i], p);
    INFO("integer(", w, ", ", f, ")");
    CHECK(bad == 0);
    check_offset_codes(codes, [&](int8_t* q) {  // the vector loop and the 8-wide tail
      int8_quantize_integer(q, rs.data(), v.data(), 1, int64_t(v.size()) - 8, w, f, true);
      for (size_t i = v.size() - 8; i < v.size(); ++i) q[i] = int8_t(codes[i] ^ 0x80);
    });
    check_offset_codes(std::vector<int8_t>(codes.begin(), codes.begin() + 7), [&](int8_t* q) {
      int8_quantize_integer(q, rs.data(), v.data(), 1, 7, w, f, true);  // the scalar tail alone
    });
  }
  v[100] = NAN;  // inside the 32-wide vector loop this time
  std::vector<int8_t> codes(v.size());
  float rs = 0;
  int8_quantize_integer(codes.data(), &rs, v.data(), 1, int64_t(v.size()), 8, 4);
  CHECK(std::isnan(rs));
  CHECK_THROWS_AS(int8_quantize_integer(q.data(), s.data(), x.data(), 1, 8, 9, 2), ConfigError);
}

TEST_CASE("int8 quantize mxint8: the codes and exponents of the MXINT8 packing kernel") {
  // 3 rows of K = 70 (blocks 32, 32, 6): random values over many binades, then hostile blocks:
  // zeros, a NaN, an inf, subnormals, values that round to ±128 (clamped to ±127), ties
  const int64_t rows = 3, K = 70, nb = 3;
  std::vector<float> x(static_cast<size_t>(rows * K));
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  std::uniform_int_distribution<int> e(-140, 60);
  for (auto& v : x) v = std::ldexp(u(gen), e(gen));
  for (int k = 0; k < 32; ++k) x[size_t(k)] = 0.0f;               // row 0 block 0: zeros
  x[size_t(40)] = NAN;                                             // row 0 block 1
  x[size_t(K + 3)] = INFINITY;                                     // row 1 block 0
  for (int k = 32; k < 64; ++k) x[size_t(K + k)] = 1e-41f * float(k);  // row 1 block 1: subnormal
  for (int k = 0; k < 32; ++k) x[size_t(2 * K + k)] = (k % 2 ? -1.0f : 1.0f) * (k ? 1.999f : 1.0f);
  for (int k = 64; k < 70; ++k) x[size_t(2 * K + k)] = 0.5f + float(k) / 128.0f;  // short block
  const auto [exps, scales, got] = check_mxint8_codes(x, rows, K);
  REQUIRE(exps.size() == size_t(rows * nb));
  for (size_t i = 0; i < exps.size(); ++i) {
    INFO("block ", i, " exponent ", int(exps[i]));
    if (exps[i] == 0xFF) CHECK(std::isnan(scales[i]));
    else CHECK(scales[i] == std::ldexp(1.0f, int(exps[i]) - 133));
  }
  CHECK(exps[0] == 0);     // the zero block
  CHECK(exps[1] == 0xFF);  // NaN
  CHECK(got[size_t(2 * K + 1)] == -127);  // −1.999 at scale 2^0: −127.9 → −128 → clamped
}

TEST_CASE("int8 quantize mxint8: every block exponent, exhaustively") {
  // one row per exponent field s = 0..254 (a block whose largest |x| has that field), so every
  // scale 2^(s−133) — subnormal ones included — and every split of 2^(133−s) is checked. K = 32:
  // one block a row (the one-block loop); K = 128: four, whose fields (s + 67·b) mod 255 put
  // every s in every quarter of the AVX-512 kernel's four-block step
  for (const int64_t K : {int64_t(32), int64_t(128)}) {
    INFO("K = ", K);
    const int64_t rows = 255, nb = K / 32;
    std::vector<float> x(static_cast<size_t>(rows * K));
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t k = 0; k < K; ++k) {
        const uint32_t field = uint32_t((r + 67 * (k / 32)) % 255);
        const uint32_t bits = (field << 23) | (uint32_t(k * 262147) & 0x7FFFFF);
        float v;
        std::memcpy(&v, &bits, 4);
        x[size_t(r * K + k)] = (k % 3 ? v : -v) / (k % 5 ? 1.0f : 3.0f);
      }
    const auto [exps, scales, codes] = check_mxint8_codes(x, rows, K);
    for (int64_t r = 0; r < rows; ++r)
      for (int64_t b = 0; b < nb; ++b) {
        const size_t i = size_t(r * nb + b);
        INFO("row ", r, " block ", b, " exponent ", int(exps[i]));
        CHECK(int(exps[i]) == (r + 67 * b) % 255);
        CHECK(scales[i] == std::ldexp(1.0f, int(exps[i]) - 133));
      }
  }
}

TEST_CASE("int8 quantize mxint8: NaN, inf, zero and tiny blocks in every position of a row") {
  // rows of K = 160 (a four-block step, then one block alone), each a rotation of the same five
  // blocks: a NaN, an inf, zeros, subnormals (field 0, f2 = 2^6) and ordinary values
  const int64_t rows = 5, K = 160, nb = 5;
  std::mt19937 gen(11);
  std::uniform_real_distribution<float> u(-4.0f, 4.0f);
  std::vector<float> x(static_cast<size_t>(rows * K));
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t k = 0; k < K; ++k) {
      const int64_t kind = (k / 32 + r) % 5;
      float v = u(gen);
      if (kind == 0) v = k % 32 == 7 ? NAN : v;
      if (kind == 1) v = k % 32 == 30 ? -INFINITY : v;
      if (kind == 2) v = 0.0f;
      if (kind == 3) v = 1e-40f * float(k % 32 + 1) * (k % 2 ? -1.0f : 1.0f);
      x[size_t(r * K + k)] = v;
    }
  const auto [exps, scales, codes] = check_mxint8_codes(x, rows, K);
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t b = 0; b < nb; ++b) {
      const size_t i = size_t(r * nb + b);
      INFO("row ", r, " block ", b, " exponent ", int(exps[i]));
      const int64_t kind = (b + r) % 5;
      CHECK(exps[i] == (kind < 2 ? 0xFF : kind == 2 || kind == 3 ? 0 : exps[i]));
      if (exps[i] == 0xFF) CHECK(std::isnan(scales[i]));
      else CHECK(scales[i] == std::ldexp(1.0f, int(exps[i]) - 133));
    }
}
