// cuda/sdpa_tile.cuh — the building blocks of the CUDA flash attention (cuda/sdpa_forward.cu,
// cuda/sdpa_backward.cu): tile sizes, how 256 threads split a 64 × 64 tile, copying a tile of
// rows from global to shared memory, and the three small matrix products every kernel is made
// of. Included by .cu files only. Read cuda/sdpa_forward.cu first.
//
// The thread layout. A block has 256 threads, seen as a 16 × 16 grid: tx = tid % 16,
// ty = tid / 16. A warp is then two rows of that grid (ty = 2w, 2w + 1), and the 16 threads
// that share a ty are 16 lanes of one warp, so a reduction over them is 4 register shuffles.
//   * In a 64 × 64 tile of scores S (query rows × key columns) thread (ty, tx) owns rows
//     ty·4 + i and columns tx + 16·j (i, j < 4): a 4 × 4 register tile, 16 products per pair
//     of 4-wide shared-memory loads.
//   * In a 64 × HS tile of an output (O, dQ, dK, dV) it owns rows ty·4 + i and HS / 16 columns
//     (Cols below): a 4 × (HS/16) register tile.
// Shared-memory rows are padded by 4 floats (kLd = HS + 4): the 16 threads of a ty reading rows
// tx + 16·j at the same column then fall in different banks (row stride 4 banks apart), while
// staying 16-byte aligned for float4 loads. Rows past the end of the sequence are filled
// with 0, so every product can run over whole tiles; the kernels mask those scores instead.
// A kernel's walk over the other side's tiles (keys for a query tile, or the reverse) copies
// them asynchronously, double buffered where shared memory allows (TileWalk below).
#pragma once
#include <cuda_pipeline.h>
#include <cuda_runtime.h>

#include <array>
#include <cmath>
#include <cstdint>

#include "runtime/kernels/sdpa.h"
#include "runtime/philox.h"

namespace mase::cuda::sdpa_tile {

constexpr int kThreads = 256;
constexpr int kBr = 64;          // query rows per tile
constexpr int kBc = 64;          // key rows per tile
constexpr int kLdP = kBc + 4;    // row stride of a (kBr, kBc) tile in shared memory
static_assert(kBr == 64 && kBc == 64 && kThreads == 256, "the 16 × 16 thread grid of 4 × 4 tiles");

template <int HS>
constexpr int kLd = HS + 4;      // row stride of a (rows, HS) tile in shared memory

// The columns of a (rows, HS) tile that thread tx owns: kVec consecutive floats (float4, or
// float2 for HS = 32) in each of kChunks chunks 16·kVec apart — so the 16 threads of a ty read
// a row's HS floats as one contiguous sweep (no bank conflicts).
template <int HS>
struct Cols {
  static_assert(HS == 32 || HS == 64 || HS == 128, "head sizes 32, 64, 128");
  static constexpr int kVec = HS >= 64 ? 4 : 2;
  static constexpr int kChunks = HS / (16 * kVec);
  static constexpr int kN = kVec * kChunks;  // = HS / 16 columns per thread
  __device__ static int col(int tx, int u) { return (u / kVec) * 16 * kVec + tx * kVec + u % kVec; }
  // the thread's kN floats of a shared-memory row
  __device__ static void load(float (&x)[kN], const float* row, int tx) {
#pragma unroll
    for (int ch = 0; ch < kChunks; ++ch) {
      const float* p = row + ch * 16 * kVec + tx * kVec;
      if constexpr (kVec == 4) {
        const float4 t = *reinterpret_cast<const float4*>(p);
        x[ch * 4] = t.x; x[ch * 4 + 1] = t.y; x[ch * 4 + 2] = t.z; x[ch * 4 + 3] = t.w;
      } else {
        const float2 t = *reinterpret_cast<const float2*>(p);
        x[ch * 2] = t.x; x[ch * 2 + 1] = t.y;
      }
    }
  }
};

// Which tile this block works on: block x covers rows t0 .. t0 + 63 (of queries or keys, T of
// them) of head bh = b·NH + h; and this thread's place (tx, ty) in the 16 × 16 grid.
struct BlockTile {
  int64_t bh, b, h;
  int t0, tx, ty;
};
__device__ inline BlockTile block_tile(int T, int NH) {
  const int tiles = (T + 63) / 64;
  const int64_t bh = blockIdx.x / tiles;
  return {bh, bh / NH, bh % NH, int(blockIdx.x % tiles) * 64, int(threadIdx.x % 16),
          int(threadIdx.x / 16)};
}

// Element (b, h, t, 0) of a HeadsView, in device code.
template <class T>
__device__ inline T* head_row(const HeadsView<T>& x, int64_t b, int64_t h, int64_t t) {
  return x.data + b * x.sb + h * x.sh + t * x.st;
}

// dst (kRows, HS) in shared memory, row stride kLd<HS> = rows t0 .. t0 + kRows − 1 of one head
// (`src` points at row t0, `st` is the row stride); rows at or past `valid` are set to 0.
// Consecutive threads read consecutive floats of a row: coalesced. When every row starts on
// 16 bytes (BERT's head-split views do: HS and C are multiples of 4) each thread moves
// float4s, a quarter of the load and store instructions; else one float at a time.
template <int HS, int kRows>
__device__ inline void load_rows(float* dst, const float* src, int64_t st, int valid) {
  if (reinterpret_cast<uintptr_t>(src) % 16 == 0 && st % 4 == 0) {  // the same for the block
    constexpr int kVecs = HS / 4;  // float4s a row
    for (int e = threadIdx.x; e < kRows * kVecs; e += kThreads) {
      const int r = e / kVecs, d = 4 * (e % kVecs);
      const float4 x = r < valid ? *reinterpret_cast<const float4*>(src + r * st + d)
                                 : make_float4(0.f, 0.f, 0.f, 0.f);
      *reinterpret_cast<float4*>(dst + r * kLd<HS> + d) = x;
    }
    return;
  }
  for (int e = threadIdx.x; e < kRows * HS; e += kThreads) {
    const int r = e / HS, d = e % HS;
    dst[r * kLd<HS> + d] = r < valid ? src[r * st + d] : 0.f;
  }
}

// load_rows with asynchronous copies (cp.async, sm_80 and later): each copy goes from global
// memory straight into shared memory without passing through registers, and the thread moves
// on at once. __pipeline_commit() closes the copies issued so far into a group;
// __pipeline_wait_prior(n) returns when all but the n latest groups have landed (this thread's
// copies: a __syncthreads() after it makes every thread's visible). Rows at or past `valid`
// are zero-filled (zfill = the whole copy; nothing is read, but src stays a valid address).
template <int HS, int kRows>
__device__ inline void load_rows_async(float* dst, const float* src, int64_t st, int valid) {
  if (reinterpret_cast<uintptr_t>(src) % 16 == 0 && st % 4 == 0) {
    constexpr int kVecs = HS / 4;
#pragma unroll 1
    for (int e = threadIdx.x; e < kRows * kVecs; e += kThreads) {
      const int r = e / kVecs, d = 4 * (e % kVecs);
      const bool ok = r < valid;
      __pipeline_memcpy_async(dst + r * kLd<HS> + d, src + (ok ? r * st + d : 0), 16, ok ? 0 : 16);
    }
    return;
  }
#pragma unroll 1
  for (int e = threadIdx.x; e < kRows * HS; e += kThreads) {
    const int r = e / HS, d = e % HS;
    const bool ok = r < valid;
    __pipeline_memcpy_async(dst + r * kLd<HS> + d, src + (ok ? r * st + d : 0), 4, ok ? 0 : 4);
  }
}

// The walk over the tiles t = 0 .. n − 1 of a sequence of T rows, each tile two (64, HS) blocks
// of rows (K and V, or Q and dO: `src_a`, `src_b` point at row 0, `st_a`, `st_b` are the row
// strides), copied asynchronously into stage t % kStages of `stages` (stage s holds a's tile
// at stages + 2·s·kTile and b's right after it). With two stages tile t + 1 is on its way while
// tile t is used (double buffering); with one, tile t is copied at the top of its own step.
// A kernel calls walk_start once, then walk_step(t) at the top of each step t.
template <int HS>
constexpr int kTile = 64 * kLd<HS>;  // floats of a (64, HS) tile in shared memory

template <int HS, int kStages>
struct TileWalk {
  float* stages;
  const float *src_a, *src_b;
  int64_t st_a, st_b;
  int T, n;

  __device__ float* a(int t) const { return stages + 2 * (t % kStages) * kTile<HS>; }
  __device__ float* b(int t) const { return a(t) + kTile<HS>; }
  // The copies of tile t (none past the end), closed into one group.
  __device__ void issue(int t) const {
    if (t < n) {
      const int t0 = t * 64;
      load_rows_async<HS, 64>(a(t), src_a + t0 * st_a, st_a, T - t0);
      load_rows_async<HS, 64>(b(t), src_b + t0 * st_b, st_b, T - t0);
    }
    __pipeline_commit();  // an empty group past the end keeps every thread's count the same
  }
  __device__ void start() const {
    if constexpr (kStages == 2) issue(0);
  }
  // Barrier (everyone is done with the stage about to be refilled), the copies of tile
  // t + kStages − 1, wait for tile t's own, barrier (everyone's have landed).
  __device__ void step(int t) const {
    __syncthreads();
    issue(t + kStages - 1);
    __pipeline_wait_prior(kStages - 1);
    __syncthreads();
  }
};

// Four floats from a 16-byte aligned address in shared memory.
__device__ inline float4 load4(const float* p) { return *reinterpret_cast<const float4*>(p); }

// acc[i][j] += Σ_d A[ty·4 + i][d] · B[tx + 16·j][d]: the thread's 4 × 4 tile of A·Bᵀ, for
// S = Q·Kᵀ and dP = dO·Vᵀ. A and B are (64, HS) tiles in shared memory, row stride kLd<HS>.
// Per 4 columns d: 8 float4 loads (A's are broadcasts: one ty per quarter-warp) for 64 FMAs.
template <int HS>
__device__ inline void mma_abt(float (&acc)[4][4], const float* A, const float* B, int ty, int tx) {
#pragma unroll 4
  for (int d = 0; d < HS; d += 4) {
    float4 a[4], b[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) a[i] = load4(A + (ty * 4 + i) * kLd<HS> + d);
#pragma unroll
    for (int j = 0; j < 4; ++j) b[j] = load4(B + (tx + 16 * j) * kLd<HS> + d);
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int j = 0; j < 4; ++j) {
        acc[i][j] = fmaf(a[i].x, b[j].x, acc[i][j]);
        acc[i][j] = fmaf(a[i].y, b[j].y, acc[i][j]);
        acc[i][j] = fmaf(a[i].z, b[j].z, acc[i][j]);
        acc[i][j] = fmaf(a[i].w, b[j].w, acc[i][j]);
      }
  }
}

// o[i][u] += Σ_c P[ty·4 + i][c] · X[c][col(u)]: the thread's rows of P·X, for O += P·V and
// dQ += dS·K. P is (64, kBc) with row stride kLdP, X is (kBc, HS) with row stride kLd<HS>.
template <int HS>
__device__ inline void mma_ab(float (&o)[4][Cols<HS>::kN], const float* P, const float* X, int ty,
                              int tx) {
  constexpr int kN = Cols<HS>::kN;
#pragma unroll 2
  for (int c = 0; c < kBc; c += 4) {
    float4 p[4];
#pragma unroll
    for (int i = 0; i < 4; ++i) p[i] = load4(P + (ty * 4 + i) * kLdP + c);
#pragma unroll
    for (int cc = 0; cc < 4; ++cc) {
      float x[kN];
      Cols<HS>::load(x, X + (c + cc) * kLd<HS>, tx);
#pragma unroll
      for (int i = 0; i < 4; ++i) {
        const float pi = cc == 0 ? p[i].x : cc == 1 ? p[i].y : cc == 2 ? p[i].z : p[i].w;
#pragma unroll
        for (int u = 0; u < kN; ++u) o[i][u] = fmaf(pi, x[u], o[i][u]);
      }
    }
  }
}

// o[i][u] += Σ_r P[r][ty·4 + i] · X[r][col(u)]: the thread's rows of Pᵀ·X, for dV += Pᵀ·dO and
// dK += dSᵀ·Q (the key-side products of the backward). P is (kBr, kBc) with row stride kLdP,
// X is (kBr, HS) with row stride kLd<HS>.
template <int HS>
__device__ inline void mma_atb(float (&o)[4][Cols<HS>::kN], const float* P, const float* X, int ty,
                               int tx) {
  constexpr int kN = Cols<HS>::kN;
#pragma unroll 4
  for (int r = 0; r < kBr; ++r) {
    const float4 p = load4(P + r * kLdP + ty * 4);
    float x[kN];
    Cols<HS>::load(x, X + r * kLd<HS>, tx);
    const float pi[4] = {p.x, p.y, p.z, p.w};
#pragma unroll
    for (int i = 0; i < 4; ++i)
#pragma unroll
      for (int u = 0; u < kN; ++u) o[i][u] = fmaf(pi[i], x[u], o[i][u]);
  }
}

// The thread's 4 × 4 scores (rows ty·4 + i, columns tx + 16·j) from or to a (64, 64) tile in
// shared memory, row stride kLdP. The 32 lanes of a warp touch 32 different banks.
__device__ inline void grid_load(float (&s)[4][4], const float* S, int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) s[i][j] = S[(ty * 4 + i) * kLdP + tx + 16 * j];
}
__device__ inline void grid_store(float* S, const float (&s)[4][4], int ty, int tx) {
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) S[(ty * 4 + i) * kLdP + tx + 16 * j] = s[i][j];
}

// Reductions over the 16 threads that share a ty (lanes l and l ^ 8, ^ 4, ^ 2, ^ 1 of a warp).
__device__ inline float max16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, o));
  return v;
}
__device__ inline float sum16(float v) {
#pragma unroll
  for (int o = 8; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// The dropout decisions of a 64 × 64 tile of probabilities, as bytes in shared memory:
// keep[r·kLdZ + c] = 1 if probability (b, h, i0 + r, j0 + c) is kept. It is kept iff Philox
// word e = rows((b·NH + h)·Tq + i)·Tk + j of (drop.seed, dropout_offset(drop)) passes dropout_keep
// (rows = drop.rows: the identity unless graph/passes/narrow_cls.h mapped the query rows) — the
// very word and test the CPU uses (runtime/philox.h, runtime/kernels/dropout.h), so both
// devices drop the same entries. One Philox call (10 rounds) gives 4 consecutive words, so
// the block shares the calls out: a row's 64 keys need 17 at most, where drawing each word in
// the thread that uses it would take 64. Entries past Tq or Tk are left unset (never read).
// Rows are kLdZ = 68 bytes apart: the two rows a warp reads fall in different banks.
constexpr int kLdZ = 68;
constexpr size_t kKeepBytes = 64 * kLdZ;

__device__ inline void fill_dropout_tile(uint8_t* keep, const DropoutMask& drop, int64_t bh,
                                         int Tq, int Tk, int i0, int j0) {
  // drop.offset, plus the base a captured training step keeps on the device and moves on at
  // each replay (DropoutMask::offset_base, runtime/random.h); null outside CUDA graphs
  const uint64_t offset = dropout_offset(drop);
  for (int w = threadIdx.x; w < 64 * 17; w += kThreads) {
    const int r = w / 17, k = w % 17;  // row of the tile, Philox call of the row
    if (i0 + r >= Tq) continue;
    const uint64_t row = uint64_t(drop.rows(bh * Tq + i0 + r));             // its stream row
    const uint64_t first = row * uint64_t(Tk) + j0;                          // word of key j0
    const uint64_t block = first / 4 + k;
    const std::array<uint32_t, 4> words = philox4x32(offset + block, drop.seed);
#pragma unroll
    for (int q = 0; q < 4; ++q) {
      const int64_t c = int64_t(block * 4 + q) - int64_t(first);  // key − j0 of word q
      if (c >= 0 && c < 64 && j0 + c < Tk)
        keep[r * kLdZ + c] = dropout_keep(words[q], drop.threshold) ? 1 : 0;
    }
  }
}

// The thread's dropout factor for row ty·4 + i, key tx + 16·j of the tile.
__device__ inline float keep_factor(const uint8_t* keep, float scale, int ty, int i, int tx,
                                    int j) {
  return keep[(ty * 4 + i) * kLdZ + tx + 16 * j] ? scale : 0.f;
}

// Mask value (b, h, i, j), or 0 without a mask.
__device__ inline float mask_at(const MaskView<float>& m, int64_t b, int64_t h, int64_t i,
                                int64_t j) {
  return m.data ? m.data[b * m.sb + h * m.sh + i * m.si + j * m.sj] : 0.f;
}

// Shared memory bytes of `tiles` (64, HS) tiles and `ptiles` (64, 64) tiles, and after them
// the dropout tile (fill_dropout_tile).
template <int HS>
constexpr size_t smem_bytes(int tiles, int ptiles) {
  return sizeof(float) * (size_t(tiles) * kBr * kLd<HS> + size_t(ptiles) * kBr * kLdP) +
         kKeepBytes;
}
// Where the dropout tile starts in a kernel's shared memory that holds `tiles` and `ptiles`.
template <int HS>
__device__ inline uint8_t* keep_tile(float* smem, int tiles, int ptiles) {
  return reinterpret_cast<uint8_t*>(smem + size_t(tiles) * kBr * kLd<HS> +
                                    size_t(ptiles) * kBr * kLdP);
}

// The most dynamic shared memory a block may opt in to on sm_90 (227 KB).
constexpr size_t kMaxSmem = 227 * 1024;

// Stages of a TileWalk for a kernel that also keeps `fixed` (64, HS) tiles and `ptiles`
// (64, 64) tiles: double buffering when the two stages (4 tiles) fit, else one.
template <int HS>
constexpr int walk_stages(int fixed, int ptiles) {
  return smem_bytes<HS>(fixed + 4, ptiles) <= kMaxSmem ? 2 : 1;
}

}  // namespace mase::cuda::sdpa_tile
