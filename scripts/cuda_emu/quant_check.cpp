// scripts/cuda_emu/quant_check.cpp — the CUDA fake quantizers of the block formats
// (cuda/quant_block.cu: a group of lanes per block, max |x| by shuffles; one thread per block
// for other sizes) and of the scalar formats (cuda/quant_scalar.cu: a float4 map where the
// pointers are 16-byte aligned, the scalar map for the tail and for unaligned views), run on
// the CPU through emu.h (see run.sh), against the CPU's own block_quantize / element functions:
// the same bits are required, not closeness. Scalar: integer, MASE's integer, minifloat and log
// on n = 1,003 (a tail of 3) aligned, and one float off alignment. Part `quant`, for every block format
// (block_fp, block_minifloat, block_log, mxint8, mxfp8_e4m3, mxfp4_e2m1) at block sizes 32, 16,
// 8, 1 (the group kernel) and 12 (the thread kernel), on rows whose length is not a multiple of
// the block (a short last block) and that hold the edge values: an all-zero block, ±0, a NaN,
// an inf, f32 subnormals, values near f32's largest, ties of the element grid.
#include <cstdio>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "check.h"
#include "emu.h"

// the kernels themselves, as prep.py rewrote them
#include "cuda/quant_block.cu"
#include "cuda/quant_scalar.cu"

using namespace mase;
using quant::FormatParams;
using quant::Kind;

namespace {

// rows of `cols` values: random magnitudes over many binades, and the edge values planted
std::vector<float> inputs(int64_t rows, int64_t cols, int block, unsigned seed) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> U(-1, 1);
  std::uniform_int_distribution<int> E(-30, 30);
  std::vector<float> x(size_t(rows * cols));
  for (float& v : x) v = std::ldexp(U(rng), E(rng));
  auto at = [&](int64_t r, int64_t c) -> float& { return x[size_t(r * cols + c)]; };
  for (int64_t c = 0; c < std::min<int64_t>(block, cols); ++c) at(0, c) = c % 2 ? -0.f : 0.f;
  if (rows > 1) at(1, cols / 2) = std::numeric_limits<float>::quiet_NaN();
  if (rows > 2) at(2, 0) = -std::numeric_limits<float>::infinity();
  if (rows > 3)
    for (int64_t c = 0; c < cols; ++c) at(3, c) = std::ldexp(float(c + 1), -149 + int(c % 20));
  if (rows > 4)
    for (int64_t c = 0; c < cols; ++c) at(4, c) = (c % 2 ? -1 : 1) * std::ldexp(1.9f, 127 - int(c % 3));
  if (rows > 5)
    for (int64_t c = 0; c < cols; ++c) at(5, c) = 0.5f + float(c % 8) * 0.125f;  // grid ties
  return x;
}

// the CPU's answer: block_quantize on each block of each row
std::vector<float> reference(const std::vector<float>& x, int64_t rows, int64_t cols,
                             const FormatParams& f) {
  std::vector<float> y(x.size());
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t j = 0; j < cols; j += f.block_size) {
      const int64_t n = std::min<int64_t>(f.block_size, cols - j);
      quant::block_quantize(y.data() + r * cols + j, x.data() + r * cols + j, n, f);
    }
  return y;
}

// bitwise equal, NaN equal to NaN
void compare(const std::string& name, const std::vector<float>& got, const std::vector<float>& want) {
  for (size_t i = 0; i < got.size(); ++i) {
    uint32_t a, b;
    std::memcpy(&a, &got[i], 4);
    std::memcpy(&b, &want[i], 4);
    if (a != b && !(std::isnan(got[i]) && std::isnan(want[i])))
      expect_close(name, got[i], want[i], 0, 0, long(i));
  }
}

void check(const std::string& name, FormatParams f, int block, int64_t rows, int64_t cols) {
  f.block_size = block;
  const int before = failures;
  const std::vector<float> x = inputs(rows, cols, block, unsigned(block * 131 + cols));
  const std::vector<float> want = reference(x, rows, cols, f);
  std::vector<float> got(x.size(), 777.f);
  cuda::block_forward(got.data(), x.data(), rows, cols, f);
  compare(name, got, want);
  std::printf("%-16s block %2d, (%ld, %ld): %d mismatches (bitwise)\n", name.c_str(), block,
              long(rows), long(cols), failures - before);
}

// scalar_forward on n elements starting `offset` floats into a 16-byte aligned buffer, against
// the element function `one` on each
template <class One>
void check_scalar(const std::string& name, const FormatParams& f, int64_t n, int offset, One one) {
  const int before = failures;
  std::vector<float> src = inputs(1, n + 8, 8, unsigned(n + offset)), dst(size_t(n + 8), 777.f);
  float* in = src.data() + offset;  // std::vector's data is 16-byte aligned (operator new)
  float* out = dst.data() + offset;
  std::vector<float> want(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) want[size_t(i)] = one(in[i]);
  cuda::scalar_forward(out, in, n, f);
  compare(name, std::vector<float>(out, out + n), want);
  for (int k = 0; k < offset; ++k)  // nothing written before the view
    if (dst[size_t(k)] != 777.f) expect_close(name + " before", dst[size_t(k)], 777.f, 0, 0, k);
  std::printf("%-16s n %ld, %s: %d mismatches (bitwise)\n", name.c_str(), long(n),
              offset % 4 ? "unaligned" : "aligned", failures - before);
}

FormatParams format(Kind k, int width, int exponent_width = 0, int bias = 0, int bias_width = 0) {
  FormatParams f;
  f.kind = k;
  f.width = width;
  f.exponent_width = exponent_width;
  f.exponent_bias = bias;
  f.exponent_bias_width = bias_width;
  return f;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string part = argc > 1 ? argv[1] : "quant";
  if (part != "quant") {
    std::printf("quant_check: unknown part %s\n", part.c_str());
    return 2;
  }
  const std::vector<std::pair<std::string, FormatParams>> formats = {
      {"block_fp", format(Kind::block_fp, 8, 8, 127)},
      {"block_minifloat", format(Kind::block_minifloat, 8, 4, 0, 8)},
      {"block_log", format(Kind::block_log, 8, 0, 0, 8)},
  };
  for (const auto& [name, f] : formats)
    for (int block : {32, 16, 8, 1, 12}) check(name, f, block, 7, 70);
  check("mxint8", format(Kind::mxint8, 8), 32, 7, 70);
  check("mxfp8_e4m3", format(Kind::mxfp8_e4m3, 8, 4), 32, 7, 70);
  check("mxfp4_e2m1", format(Kind::mxfp4_e2m1, 4, 2), 32, 6, 96);
  check("block_fp", format(Kind::block_fp, 8, 8, 127), 16, 300, 48);  // the grid-stride loop
  for (int offset : {0, 1}) {
    FormatParams i8 = format(Kind::integer, 8);
    i8.frac_width = 4;
    const auto ip = quant::integer_params<float>(8, 4);
    check_scalar("integer", i8, 1003, offset, [&](float x) { return quant::integer_one(x, ip); });
    FormatParams m8 = i8;
    m8.mase_compat = true;
    check_scalar("integer (mase)", m8, 1003, offset,
                 [&](float x) { return quant::mase_integer_one(x, ip); });
    const FormatParams mf = format(Kind::minifloat_ieee, 8, 4, 7);
    const auto mp = quant::minifloat_params<float>(quant::minifloat_spec(mf));
    check_scalar("minifloat_ieee", mf, 1003, offset,
                 [&](float x) { return quant::minifloat_one(x, mp); });
    const FormatParams lg = format(Kind::log, 8, 0, 3);
    const auto lp = quant::log_params<float>(quant::log_spec(8, 3));
    check_scalar("log", lg, 1003, offset, [&](float x) { return quant::log_one(x, lp); });
  }
  std::printf("quant: %d mismatches in all\n", failures);
  return failures ? 1 : 0;
}
