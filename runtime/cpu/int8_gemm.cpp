// runtime/cpu/int8_gemm.cpp — the int8 GEMM around its microkernels: run-time ISA choice,
// packing B once, packing A per task, the loops and threads, and the scalar reference.
// The contract and the math: runtime/kernels/int8_gemm.h. The microkernels:
// int8_gemm_vnni.cpp, int8_gemm_avx2.cpp (read int8_tile.h first). Calls whose block scales
// multiply past fp32's range take a detour: int8_gemm_wide.cpp.
//
// The activation quantizers the Linear calls before it: runtime/cpu/int8_quantize.cpp.
//
// The loop structure (what GotoBLAS taught every GEMM since):
//   parallel over tasks = (a block of MC rows of A) × (a range of B's panels)
//     pack the task's rows of A into a buffer laid out like B's blocks (VNNI: codes + 128) —
//     or, handed offset codes with no padded block, read them where they lie
//     for each panel of nr columns
//       for each slice of K's blocks          — VNNI scaled: 16 blocks, B's slice stays in L1
//         for the task's MC rows              — VNNI: one call, the kernel walks them 6 at a
//                                               time; AVX2: one call per 4 rows
// B is packed once (int8_pack_b, by the caller: a Linear packs its weight once), so the
// microkernel reads both operands with unit stride and no bounds checks; partial tiles at the
// bottom and right edges are handled by the kernel's mr / nv, the padded K by zero bytes.
#include "runtime/kernels/int8_gemm.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "runtime/cpu/int8_gemm_wide.h"
#include "runtime/cpu/int8_layout.h"
#include "runtime/cpu/int8_tile.h"
#include "runtime/cpu_features.h"
#include "runtime/error.h"
#include "runtime/cpu/onednn_gemm.h"
#include "runtime/kernels/int8_scale.h"
#include "runtime/parallel.h"

namespace mase::cpu {

const char* int8_isa_name(Int8Isa isa) {
  switch (isa) {
    case Int8Isa::avx512_vnni: return "avx512-vnni";
    case Int8Isa::avx2: return "avx2";
    case Int8Isa::onednn: return "onednn";
    default: return "reference";
  }
}

bool int8_isa_supported(Int8Isa isa) {
  const CpuFeatures& f = cpu_features();
  switch (isa) {
    case Int8Isa::avx512_vnni: return f.avx512() && f.avx512_vnni;
    case Int8Isa::avx2: return f.avx2;
    case Int8Isa::onednn: return onednn_int8_available();
    default: return true;
  }
}

size_t Int8PackedB::nbytes() const {
  return data.size() + 4 * scales.size() + 4 * comp.size() + (onednn ? onednn_int8_bytes(*onednn) : 0);
}

Int8Isa int8_isa_best() {
  if (int8_isa_supported(Int8Isa::onednn)) return Int8Isa::onednn;
  if (int8_isa_supported(Int8Isa::avx512_vnni)) return Int8Isa::avx512_vnni;
  if (int8_isa_supported(Int8Isa::avx2)) return Int8Isa::avx2;
  return Int8Isa::reference;
}

Int8Isa int8_isa_for(int64_t N, int64_t K, int64_t block) {
  const Int8Isa best = int8_isa_best();
  if (best != Int8Isa::onednn) return best;
  // oneDNN takes one block per row only, N and K from kOnednnMinNK; on a CPU without AMX-INT8
  // (VNNI only) our kernel is the faster one below kOnednnVnniMinK
  const bool one_block = block >= K;
  const bool wins = cpu_features().amx_int8 || K >= kOnednnVnniMinK;
  if (one_block && N >= kOnednnMinNK && K >= kOnednnMinNK && wins) return Int8Isa::onednn;
  return int8_isa_supported(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni : Int8Isa::avx2;
}

namespace {

void check_sizes(const char* op, int64_t M, int64_t N, int64_t K, int64_t block) {
  MASE_CHECK(M >= 0 && N >= 0 && K >= 0, ShapeError, "[", op, "] expected sizes ≥ 0, got M=", M,
             " N=", N, " K=", K);
  MASE_CHECK(block >= 1, ConfigError, "[", op, "] expected a block ≥ 1, got ", block);
  MASE_CHECK(std::min(block, K) <= kInt8MaxBlock, ConfigError, "[", op, "] blocks of ",
             std::min(block, K), " could overflow int32 (at most ", kInt8MaxBlock,
             "; pass a smaller block with repeated scales)");
}

}  // namespace

// ---- the reference -------------------------------------------------------------------------

void int8_gemm_reference(int32_t* Ci, int64_t ldc, const int8_t* A, int64_t lda, const int8_t* B,
                         int64_t ldb, int64_t M, int64_t N, int64_t K) {
  parallel_for(0, M, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; ++k) s += int32_t(A[i * lda + k]) * int32_t(B[j * ldb + k]);
        Ci[i * ldc + j] = s;
      }
  });
}

void int8_gemm_scaled_reference(float* C, int64_t ldc, const int8_t* A, int64_t lda,
                                const float* sa, const int8_t* B, int64_t ldb, const float* sb,
                                int64_t M, int64_t N, int64_t K, int64_t block, const float* bias) {
  const KLayout l = k_layout(K, block);
  parallel_for(0, M, 1, [&](int64_t i0, int64_t i1) {
    for (int64_t i = i0; i < i1; ++i)
      for (int64_t j = 0; j < N; ++j) {
        float acc = 0.0f;
        for (int64_t blk = 0; blk < l.nblocks; ++blk) {
          int32_t s = 0;
          const int64_t k1 = std::min(K, (blk + 1) * l.block);
          for (int64_t k = blk * l.block; k < k1; ++k)
            s += int32_t(A[i * lda + k]) * int32_t(B[j * ldb + k]);
          // fma(float(s), sa·sb, acc), or in double where sa·sb leaves fp32 (int8_scale.h)
          const float b = sb ? sb[j * l.nblocks + blk] : 1.0f;
          acc = int8_add_block(acc, s, sa[i * l.nblocks + blk], b);
        }
        C[i * ldc + j] = bias ? acc + bias[j] : acc;
      }
  });
}

// ---- packing B -------------------------------------------------------------------------------

Int8PackedB int8_pack_b(const int8_t* B, int64_t ldb, const float* scales, int64_t N, int64_t K,
                        int64_t block, Int8Isa isa) {
  check_sizes("int8_pack_b", 0, N, K, block);
  MASE_CHECK(int8_isa_supported(isa), ConfigError, "[int8_pack_b] this CPU cannot run the ",
             int8_isa_name(isa), " kernel");
  const KLayout l = k_layout(K, block);
  Int8PackedB p;
  int8_note_scale_range(p, B, ldb, scales, N, K, l);  // int8_gemm_wide.cpp
  if (isa == Int8Isa::onednn) {
    // one scale per row only (scales inside K are beyond oneDNN's int8 matmul): B in the
    // reference layout (the fallback) and in oneDNN's; else the best of our own kernels
    std::vector<float> row_scale(size_t(N), 1.0f);
    if (scales && l.nblocks == 1)
      for (int64_t j = 0; j < N; ++j) row_scale[size_t(j)] = scales[j];
    // (tiny matrices stay on our kernels: oneDNN pads its layout to blocks of 64, which there
    // would take more bytes than the fp32 weights, and gains nothing)
    const bool fits = l.nblocks == 1 && N >= kOnednnMinNK && K >= kOnednnMinNK;
    auto w = fits ? onednn_int8_pack(B, ldb, row_scale.data(), N, K) : nullptr;
    if (!w) {
      const Int8Isa own = int8_isa_supported(Int8Isa::avx512_vnni) ? Int8Isa::avx512_vnni
                          : int8_isa_supported(Int8Isa::avx2)      ? Int8Isa::avx2
                                                                   : Int8Isa::reference;
      return int8_pack_b(B, ldb, scales, N, K, block, own);
    }
    p.isa = Int8Isa::onednn;  // B lives in oneDNN's copy only
    p.N = N;
    p.K = K;
    p.block = l.block;
    p.nblocks = 1;
    p.kp = K;
    p.onednn = std::move(w);
    return p;
  }
  p.N = N;
  p.K = K;
  p.block = l.block;
  p.nblocks = l.nblocks;
  for (int64_t j = 0; j < N && !p.has_min; ++j)
    for (int64_t k = 0; k < K; ++k)
      if (B[j * ldb + k] == -128) {
        p.has_min = true;
        break;
      }
  // the sign trick of the AVX2 kernel cannot negate −128 (int8_gemm_avx2.cpp)
  p.isa = (isa == Int8Isa::avx2 && p.has_min) ? Int8Isa::reference : isa;
  auto scale = [&](int64_t j, int64_t blk) { return scales ? scales[j * l.nblocks + blk] : 1.0f; };

  if (p.isa == Int8Isa::reference) {
    p.nr = 1;
    p.kp = K;
    p.data.resize(size_t(N * K));
    p.scales.resize(size_t(N * l.nblocks));
    for (int64_t j = 0; j < N; ++j) {
      std::memcpy(p.data.data() + j * K, B + j * ldb, size_t(K));
      for (int64_t blk = 0; blk < l.nblocks; ++blk) p.scales[j * l.nblocks + blk] = scale(j, blk);
    }
    return p;
  }
  const int64_t nr = p.isa == Int8Isa::avx512_vnni ? kVnniNR : kAvx2NR;
  p.nr = nr;
  p.kp = l.kp;
  const int64_t panels = p.panels();
  p.data.assign(size_t(panels * l.kp * nr), 0);  // padding columns and k-values stay 0
  p.scales.assign(size_t(panels * l.nblocks * nr), 0.0f);
  if (p.isa == Int8Isa::avx512_vnni) p.comp.assign(p.scales.size(), 0);
  parallel_for(0, N, std::max<int64_t>(1, kGrainElems / std::max<int64_t>(K, 1)),
               [&](int64_t j0, int64_t j1) {
    for (int64_t j = j0; j < j1; ++j) {
      const int64_t pan = j / nr, c = j % nr;
      int8_t* dst = p.data.data() + pan * l.kp * nr;
      for (int64_t k = 0; k < K; ++k) {
        const int64_t pk = packed_k(l, k);  // group pk/4, byte pk%4 of the group
        dst[(pk / 4) * 4 * nr + 4 * c + pk % 4] = B[j * ldb + k];
      }
      for (int64_t blk = 0; blk < l.nblocks; ++blk) {
        const int64_t at = (pan * l.nblocks + blk) * nr + c;
        p.scales[size_t(at)] = scale(j, blk);
        if (!p.comp.empty()) {  // the offset trick's correction, int8_gemm_vnni.cpp
          int32_t sum = 0;
          for (int64_t k = blk * l.block; k < std::min(K, (blk + 1) * l.block); ++k)
            sum += B[j * ldb + k];
          p.comp[size_t(at)] = 128 * sum;
        }
      }
    }
  });
  return p;
}

// ---- the driver ------------------------------------------------------------------------------

namespace {

// oneDNN's int8 matmul scales per output column only, so rows of A are sent in runs that share
// one scale: one call for the integer formats (every row 2^−f); a row whose scale is NaN gets
// NaN outputs, as in the reference.
// A run whose scale times some of B's leaves fp32's normal range (int8_gemm.h) is rescaled
// around oneDNN (int8_gemm_wide.cpp).
void run_onednn(float* C, int64_t ldc, const int8_t* A, int64_t lda, const float* sa, int64_t M,
                const Int8PackedB& B, const float* bias) {
  for (int64_t i0 = 0; i0 < M;) {
    const float s = sa[i0];  // one block per row
    int64_t i1 = i0 + 1;
    if (std::isnan(s)) {
      for (int64_t j = 0; j < B.N; ++j) C[i0 * ldc + j] = NAN;
      i0 = i1;
      continue;
    }
    while (i1 < M && sa[i1] == s) ++i1;
    if (int8_onednn_is_wide(s, B))
      int8_run_onednn_wide(C + i0 * ldc, ldc, A + i0 * lda, lda, s, i1 - i0, B, bias);
    else
      onednn_int8_gemm(C + i0 * ldc, ldc, A + i0 * lda, lda, i1 - i0, *B.onednn, s, bias);
    i0 = i1;
  }
}

// dst[k] = src[k] ^ fill for n bytes, 8 at a time (the byte loop, with fill reloaded on every
// byte for fear of aliasing, took a fifth of the GEMM's time).
void xor_copy(uint8_t* dst, const uint8_t* src, int64_t n, uint8_t fill) {
  const uint64_t f8 = 0x0101010101010101ull * fill;
  int64_t k = 0;
  for (; k + 8 <= n; k += 8) {
    uint64_t v;
    std::memcpy(&v, src + k, 8);
    v ^= f8;
    std::memcpy(dst + k, &v, 8);
  }
  for (; k < n; ++k) dst[k] = src[k] ^ fill;
}

// Pack mc rows of A like B's blocks: every block padded to a multiple of 4 bytes, the padding
// meeting zeros of B. When no block needs padding (block and K multiples of 4: MXINT8's 32,
// BERT's widths) a packed row is the row itself, XORed.
void pack_a(std::vector<uint8_t>& buf, const int8_t* A, int64_t lda, int64_t mc, int64_t K,
            const KLayout& l, uint8_t fill) {
  const bool dense = l.kp == K;
  if (dense) buf.resize(size_t(mc * l.kp));
  else buf.assign(size_t(mc * l.kp), fill);
  for (int64_t i = 0; i < mc; ++i) {
    const uint8_t* src = reinterpret_cast<const uint8_t*>(A + i * lda);
    uint8_t* dst = buf.data() + i * l.kp;
    if (dense) {
      xor_copy(dst, src, K, fill);
      continue;
    }
    for (int64_t blk = 0; blk < l.nblocks; ++blk) {
      const int64_t k0 = blk * l.block;
      xor_copy(dst + blk * l.gb * 4, src + k0, std::min(l.block, K - k0), fill);
    }
  }
}

// Either output: Ci (int32 mode, sa == nullptr) or C (scaled mode). a_offset: A holds a ^ 0x80.
void run(float* C, int32_t* Ci, int64_t ldc, const int8_t* A, int64_t lda, const float* sa,
         int64_t M, const Int8PackedB& B, const float* bias, bool a_offset) {
  const int64_t N = B.N, K = B.K;
  if (M == 0 || N == 0) return;
  if (B.nblocks == 0) {  // K = 0: an empty sum
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < N; ++j) {
        if (Ci) Ci[i * ldc + j] = 0;
        else C[i * ldc + j] = bias ? 0.0f + bias[j] : 0.0f;
      }
    return;
  }
  MASE_CHECK(!a_offset || B.isa == Int8Isa::avx512_vnni || B.isa == Int8Isa::avx2, ConfigError,
             "[int8_gemm] offset codes need B packed for avx512-vnni or avx2, got ",
             int8_isa_name(B.isa), " (see int8_reads_offset_codes)");
  if (B.isa == Int8Isa::onednn) {
    MASE_CHECK(!Ci, ConfigError, "[int8_gemm] the int32 product is not available for B packed ",
               "for onednn (its sums are scaled inside oneDNN): pack B for avx512-vnni");
    run_onednn(C, ldc, A, lda, sa, M, B, bias);
    return;
  }
  if (B.isa == Int8Isa::reference) {
    if (Ci) int8_gemm_reference(Ci, ldc, A, lda, B.data.data(), K, M, N, K);
    else
      int8_gemm_scaled_reference(C, ldc, A, lda, sa, B.data.data(), K, B.scales.data(), M, N, K,
                                 B.block, bias);
    return;
  }
  MASE_CHECK(int8_isa_supported(B.isa), ConfigError, "[int8_gemm] B was packed for ",
             int8_isa_name(B.isa), ", which this CPU cannot run");
  if (sa && int8_needs_wide(A, lda, sa, M, B, a_offset)) {  // int8_gemm_wide.cpp
    int8_run_wide(C, ldc, A, lda, sa, M, B, bias, a_offset);
    return;
  }
  const bool vnni = B.isa == Int8Isa::avx512_vnni;
  const int64_t nr = B.nr, MC = 96;
  const KLayout l = k_layout(K, B.block);
  const int64_t mblocks = ceil_div(M, MC), panels = B.panels();
  // enough tasks for every thread to have ~4 (small M: split the panels too); one task inside a
  // SerialRegion (a chunk of ffn_in_chunks), where a split would only pack A once per piece
  const int64_t want = SerialRegion::active() ? 1 : 4 * std::max(1, num_threads());
  const int64_t per_chunk = ceil_div(panels, std::clamp<int64_t>(ceil_div(want, mblocks), 1, panels));
  const int64_t chunks = ceil_div(panels, per_chunk);
  // the bytes the kernel wants: u = a + 128 for VNNI (a ^ 0x80), a for AVX2; offset codes
  // already are the first, and packed as they are when no block needs padding
  const uint8_t fill = uint8_t((vnni ? 0x80 : 0x00) ^ (a_offset ? 0x80 : 0x00));
  const bool in_place = vnni && a_offset && l.kp == K;
  // Slices of K (VNNI, scaled, many blocks): kVnniSliceBlocks blocks of B's panel (16 KB at
  // blocks of 32) stay in L1 while the strip's rows go by; the fp32 sums wait in C between
  // slices, exactly (a float stored and loaded is the same float). Without slices the tile
  // streamed all of K's panel from L2: 20% slower at K 2048 than at K 512 for the same work.
  const int64_t kblk = vnni && sa ? std::min(l.nblocks, kVnniSliceBlocks) : l.nblocks;

  parallel_for(0, mblocks * chunks, 1, [&](int64_t t0, int64_t t1) {
    thread_local std::vector<uint8_t> abuf;
    for (int64_t task = t0; task < t1; ++task) {
      const int64_t m0 = (task / chunks) * MC, mc = std::min(MC, M - m0);
      const int64_t p0 = (task % chunks) * per_chunk, p1 = std::min(panels, p0 + per_chunk);
      const uint8_t* a_rows = reinterpret_cast<const uint8_t*>(A + m0 * lda);
      int64_t a_ld = lda;
      if (!in_place) {
        pack_a(abuf, A + m0 * lda, lda, mc, K, l, fill);
        a_rows = abuf.data();
        a_ld = l.kp;
      }
      for (int64_t pan = p0; pan < p1; ++pan)
        for (int64_t b0 = 0; b0 < l.nblocks; b0 += kblk) {  // one slice of K's blocks
          const int64_t nb = std::min(kblk, l.nblocks - b0);
          const bool first = b0 == 0, last = b0 + nb == l.nblocks;
          Int8Tile t{};
          t.b = B.data.data() + pan * l.kp * nr + b0 * l.gb * 4 * nr;
          t.comp = vnni ? B.comp.data() + (pan * l.nblocks + b0) * nr : nullptr;
          t.sb = B.scales.data() + (pan * l.nblocks + b0) * nr;
          t.nblocks = nb;
          t.gb = l.gb;
          t.gl = last ? l.gl : l.gb;
          t.lda = a_ld;
          t.lds = l.nblocks;
          t.ldc = ldc;
          t.nv = int(std::min(nr, N - pan * nr));
          t.accumulate = !first;                                // f starts from C's slice sums
          t.bias = bias && last ? bias + pan * nr : nullptr;  // added once, after the last
          // VNNI: one call for the panel's whole strip of mc rows (the kernel walks them 6
          // at a time: less call overhead on small K); AVX2: one call per kAvx2MR rows
          const int64_t step = vnni ? mc : kAvx2MR;
          for (int64_t i0 = 0; i0 < mc; i0 += step) {
            t.mr = int(std::min(step, mc - i0));
            t.a = a_rows + i0 * a_ld + b0 * l.gb * 4;
            t.sa = sa ? sa + (m0 + i0) * l.nblocks + b0 : nullptr;
            t.c = C ? C + (m0 + i0) * ldc + pan * nr : nullptr;
            t.ci = Ci ? Ci + (m0 + i0) * ldc + pan * nr : nullptr;
            if (vnni) int8_tile_vnni(t);
            else int8_tile_avx2(t);
          }
        }
    }
  });
}

}  // namespace

void int8_gemm(int32_t* Ci, int64_t ldc, const int8_t* A, int64_t lda, int64_t M,
               const Int8PackedB& B) {
  MASE_CHECK(B.nblocks <= 1, ConfigError, "[int8_gemm] the int32 product needs B packed with one ",
             "block per row, got ", B.nblocks, " blocks");
  run(nullptr, Ci, ldc, A, lda, nullptr, M, B, nullptr, false);
}

void int8_gemm_scaled(float* C, int64_t ldc, const int8_t* A, int64_t lda, const float* sa,
                      int64_t M, const Int8PackedB& B, const float* bias, bool a_offset) {
  run(C, nullptr, ldc, A, lda, sa, M, B, bias, a_offset);
}

bool int8_reads_offset_codes(const Int8PackedB& B) { return B.isa == Int8Isa::avx512_vnni; }

}  // namespace mase::cpu
