// scripts/cuda_emu/cols_check.cpp — the CUDA column sums (cuda/column_sums.cuh: the bias
// gradients through cuda/reduce.cu's sum, LayerNorm's dweight and dbias) and the embedding
// backward (cuda/embedding.cu), run on the CPU through emu.h (see run.sh), against references
// computed on the host. Part `cols`:
//   sum       (outer, rows, cols) summed over rows: one chunk, a partial last chunk, several
//             outer slices, one row, zero rows; each against a double sum (and run twice:
//             the same bits)
//   layernorm dweight and dbias of 300 rows (3 chunks) against double sums
//   embedding runs of one id (token types), alternating ids, ids outside the table, several
//             vocabulary ranges; exactly the CPU's sums (float, in row order, onto the
//             existing gradient)
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "emu.h"

// what cuda/cublas.h gives the column sums: a grow-only scratch buffer
namespace mase::cuda {
enum ScratchSlot : int { kScratchColumnSums = 3 };
inline void* device_scratch(int, size_t bytes) {
  static std::vector<char> buf;
  if (buf.size() < bytes) buf.assign(bytes, char(0x7F));  // garbage, as on a GPU
  return buf.data();
}
}  // namespace mase::cuda
using std::max;
using std::min;
inline float rsqrtf(float x) { return 1.f / std::sqrt(x); }

// the kernels themselves, as prep.py rewrote them
#include "cuda/embedding.cu"
#include "cuda/layer_norm.cu"
#include "cuda/reduce.cu"

using namespace mase;

namespace {

std::vector<float> random_floats(size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1, 1);
  std::vector<float> v(n);
  for (float& x : v) x = U(rng);
  return v;
}

void check_sum(int64_t outer, int64_t rows, int64_t cols) {
  const int before = failures;
  const std::vector<float> x = random_floats(size_t(outer * rows * cols), unsigned(rows + cols));
  std::vector<float> out(size_t(outer * cols), 777.f), again(out.size(), 555.f);
  cuda::sum_forward(out.data(), x.data(), outer, rows, cols);
  cuda::sum_forward(again.data(), x.data(), outer, rows, cols);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < cols; ++c) {
      double want = 0;
      for (int64_t r = 0; r < rows; ++r) want += x[size_t((o * rows + r) * cols + c)];
      const size_t j = size_t(o * cols + c);
      expect_close("sum", out[j], want, 1e-6, 1e-6, long(j));
      if (out[j] != again[j]) expect_close("sum twice", again[j], out[j], 0, 0, long(j));
    }
  std::printf("sum (%ld, %ld, %ld) over rows: %d mismatches\n", long(outer), long(rows),
              long(cols), failures - before);
}

void check_layer_norm(int64_t rows, int64_t cols) {
  const int before = failures;
  const std::vector<float> x = random_floats(size_t(rows * cols), 7), dy = random_floats(x.size(), 8);
  const size_t R = size_t(rows), C = size_t(cols);
  std::vector<float> w(C, 1.f), b(C, 0.f), y(x.size()), mean(R), rstd(R), dx(x.size()),
      dw(C, 777.f), db(C, 777.f);
  cuda::layer_norm_forward(y.data(), mean.data(), rstd.data(), x.data(), w.data(), b.data(), rows,
                           cols, 1e-5);
  cuda::layer_norm_backward(dx.data(), dw.data(), db.data(), dy.data(), x.data(), w.data(),
                            mean.data(), rstd.data(), rows, cols);
  for (int64_t c = 0; c < cols; ++c) {
    double sw = 0, sb = 0;
    for (int64_t r = 0; r < rows; ++r) {
      const size_t i = size_t(r * cols + c);
      sw += double(dy[i]) * (double(x[i]) - mean[size_t(r)]) * rstd[size_t(r)];
      sb += dy[i];
    }
    expect_close("layer_norm dweight", dw[size_t(c)], sw, 1e-4, 1e-4, long(c));
    expect_close("layer_norm dbias", db[size_t(c)], sb, 1e-4, 1e-4, long(c));
  }
  std::printf("layer_norm (%ld, %ld): dweight, dbias: %d mismatches\n", long(rows), long(cols),
              failures - before);
}

void check_embedding(const std::string& name, const std::vector<int32_t>& ids, int64_t C,
                     int64_t V) {
  const int before = failures;
  const int64_t N = int64_t(ids.size());
  const std::vector<float> dout = random_floats(size_t(N * C), 11);
  std::vector<float> dw = random_floats(size_t(V * C), 12), want = dw;  // onto an existing grad
  for (int64_t n = 0; n < N; ++n)
    if (ids[size_t(n)] >= 0 && ids[size_t(n)] < V)
      for (int64_t c = 0; c < C; ++c) want[size_t(ids[size_t(n)] * C + c)] += dout[size_t(n * C + c)];
  cuda::embedding_backward(dw.data(), dout.data(), ids.data(), N, C, V);
  for (size_t i = 0; i < dw.size(); ++i)
    if (dw[i] != want[i]) expect_close("embedding " + name, dw[i], want[i], 0, 0, long(i));
  std::printf("embedding backward, %s (N %ld, C %ld, V %ld): %d mismatches (exact)\n",
              name.c_str(), long(N), long(C), long(V), failures - before);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "cols";
  if (part != "cols") {
    std::printf("cols_check: unknown part %s\n", part.c_str());
    return 2;
  }
  check_sum(1, 300, 45);   // 3 chunks, the last partial; 2 column tiles, the last partial
  check_sum(1, 128, 33);   // exactly one chunk
  check_sum(3, 129, 20);   // outer slices (grid z), a last chunk of one row
  check_sum(1, 1, 40);
  check_sum(2, 0, 5);      // no rows: zeros
  check_layer_norm(300, 33);
  std::vector<int32_t> ids(2100, 0);
  check_embedding("one id everywhere", ids, 20, 2);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i / 7) % 3);  // runs across groups
  check_embedding("runs of 7", ids, 20, 3);
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = int32_t((i * 7919) % 50) - (i % 97 == 0 ? 60 : 0);
  check_embedding("scattered, some out of range", ids, 150, 50);  // 2 column tiles, 50 ranges
  std::printf("cols: %d mismatches in all\n", failures);
  return failures ? 1 : 0;
}
