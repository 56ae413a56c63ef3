// tests/quant/test_mxint8.cpp — MXINT8 packed storage: layout by hand, both dequantization
// methods over every (scale, element) pair, pack/unpack == fake quantization (whose own oracle
// is in test_block.cpp), the bytes arithmetic, counting zero codes, CPU == CUDA, and errors.
#include <doctest/doctest.h>

#include <bit>
#include <cmath>
#include <cstring>

#include "helpers.h"
#include "oracle.h"
#include "runtime/kernels/quant_block.h"
#include "runtime/kernels/mxint8.h"
#include "quant/mxint8.h"
#include "quant/quantize.h"

using namespace mase;
using namespace mase::quant;

namespace {

// Same bits, except that all NaNs are equal.
bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::bit_cast<uint32_t>(a[i]) != std::bit_cast<uint32_t>(b[i]))
      return false;
  return true;
}

// Rows with every kind of block: random magnitudes, zeros, NaN, inf, subnormals, maxima at
// the top of a binade, and a partial last block (K = 100 = 3·32 + 4).
Tensor tricky(int64_t rows, int64_t K, uint64_t seed) {
  Generator g(seed);
  Tensor x = Tensor::empty({rows, K});
  normal_(x, 0, 1, g);
  float* p = x.data<float>();
  for (int64_t r = 0; r < rows; ++r) {
    float scale = std::exp2(float(int(r * 37 % 120) - 60));
    for (int64_t j = 0; j < K; ++j) p[r * K + j] *= scale;
  }
  for (int64_t j = 0; j < 32; ++j) p[0 * K + j] = 0.f;                     // zero block
  p[1 * K + 5] = NAN;                                                       // NaN block
  p[2 * K + 40] = -INFINITY;                                                // inf block
  for (int64_t j = 0; j < 32; ++j) p[3 * K + j] = float(j - 16) * 0x1p-140f;  // subnormals: s = 0
  p[4 * K + 0] = 1.999f;                                                    // rounds to 128: clamp
  p[4 * K + 1] = -1.999f;
  return x;
}

}  // namespace

TEST_CASE("mxint8 pack: layout and values by hand") {
  // row 0: block 0 has max 3.0 -> s = 1 + 127 = 128, step 2^1/64 = 1/32: 3.0 -> q = 96,
  //        −0.5 -> −16; block 1 (4 elements, partial) max 0.1 -> floor(log2 0.1) = −4 -> s = 123,
  //        step 2^−4/64 = 2^−10: 0.1·1024 = 102.4 -> 102
  std::vector<float> v(36, 0.f);
  v[0] = 3.f, v[1] = -0.5f, v[32] = 0.1f, v[35] = -0.05f;
  MxInt8Tensor p = mxint8_pack(Tensor::from(v, {1, 36}));
  CHECK(p.elements.shape() == Shape{1, 36});
  CHECK(p.scales.shape() == Shape{1, 2});
  CHECK(p.scales.to_vector<uint8_t>() == std::vector<uint8_t>{128, 123});
  std::vector<int8_t> q = p.elements.to_vector<int8_t>();
  CHECK((q[0] == 96 && q[1] == -16 && q[2] == 0 && q[32] == 102 && q[35] == -51));  // −51.2 -> −51
  CHECK(p.nbytes() == 36 + 2);
}

TEST_CASE("mxint8 dequantize: multiply and bf16 trick agree on every scale and element") {
  // all 256 scale bytes × all 255 element values against 2^(s−127)·q/64 in f64
  const int64_t K = 255;
  std::vector<int8_t> q(256 * K);
  std::vector<uint8_t> s(256 * 8);
  for (int64_t r = 0; r < 256; ++r) {
    for (int64_t j = 0; j < K; ++j) q[r * K + j] = int8_t(j - 127);
    for (int b = 0; b < 8; ++b) s[r * 8 + b] = uint8_t(r);
  }
  std::vector<float> a(q.size()), b(q.size());
  cpu::mxint8_dequantize(a.data(), q.data(), s.data(), 256, K);
  cpu::mxint8_dequantize_bf16(b.data(), q.data(), s.data(), 256, K);
  CHECK(same_bits(a, b));
  int bad = 0;
  for (int64_t r = 0; r < 256; ++r)
    for (int64_t j = 0; j < K; ++j) {
      double want = r == 255 ? NAN : std::ldexp(double(j - 127), int(r) - 127 - 6);
      if (!test::same(a[r * K + j], want, /*signed_zero=*/true)) ++bad;
    }
  CHECK(bad == 0);
}

TEST_CASE("mxint8 unpack(pack(x)) equals fake quantization with both methods") {
  for (int64_t K : {100, 32, 1, 64}) {
    Tensor x = tricky(8, K, uint64_t(K));
    std::vector<float> fake = quantize(x, make_format("mxint8")).to_vector<float>();
    // the f32 fast path of quantize() against the reference block kernel (test_block's oracle)
    std::vector<float> ref(fake.size());
    cpu::block_forward<float>(ref.data(), x.data<float>(), 8, K, make_format("mxint8"));
    CHECK(same_bits(fake, ref));
    MxInt8Tensor p = mxint8_pack(x);
    CHECK(same_bits(mxint8_unpack(p, Dequant::multiply).to_vector<float>(), fake));
    CHECK(same_bits(mxint8_unpack(p, Dequant::bf16).to_vector<float>(), fake));
  }
  // 3-D input, non-contiguous view: blocks run along the last dim of the logical tensor
  Tensor x3 = tricky(12, 40, 9).as_strided({3, 40, 4}, {160, 1, 40}, 0);
  MxInt8Tensor p3 = mxint8_pack(x3);
  CHECK(p3.scales.shape() == Shape{3, 40, 1});
  CHECK(same_bits(mxint8_unpack(p3).to_vector<float>(),
                  quantize(x3, make_format("mxint8")).to_vector<float>()));
}

TEST_CASE("mxint8 pack equals the reference block kernel for every shared exponent") {
  // One block of 32 per biased exponent e = 0..254 (row e): values up to 1.75·2^(e−127), with
  // subnormals for e = 0, so the kernel's power 2^(133−e) is built at every exponent it can be.
  const int64_t rows = 255, K = 32;
  Generator g(17);
  Tensor x = Tensor::empty({rows, K});
  uniform_(x, -1, 1, g);
  float* p = x.data<float>();
  for (int64_t e = 0; e < rows; ++e)
    for (int64_t j = 0; j < K; ++j) {
      p[e * K + j] = e == 0 ? p[e * K + j] * 0x1p-127f : std::ldexp(p[e * K + j], int(e) - 127);
      if (j == 0 && e > 0) p[e * K] = std::ldexp(1.75f, int(e) - 127);  // the block's max: exponent e
    }
  std::vector<float> ref(size_t(rows * K));
  cpu::block_forward<float>(ref.data(), p, rows, K, make_format("mxint8"));
  MxInt8Tensor packed = mxint8_pack(x);
  const uint8_t* sc = packed.scales.data<uint8_t>();
  for (int64_t e = 1; e < rows; ++e) CHECK(int(sc[e]) == int(e));
  CHECK(same_bits(mxint8_unpack(packed, Dequant::multiply).to_vector<float>(), ref));
}

TEST_CASE("mxint8 bytes report: 8.25 bits per element and what partial blocks cost") {
  BytesReport r;
  r.add({768, 3072});  // 96 blocks per row
  CHECK(r.fp32_bytes() == 768 * 3072 * 4);
  CHECK(r.packed_bytes() == 768 * 3072 + 768 * 96);
  CHECK(r.bits_per_element() == 8.25);
  CHECK(std::abs(r.saving() - (32 - 8.25) / 32) < 1e-12);
  CHECK(r.str().find("74.22%") != std::string::npos);
  BytesReport partial;
  partial.add({10, 100});  // 4 blocks per 100 elements: 8 + 8·4/100 = 8.32 bits
  CHECK(std::abs(partial.bits_per_element() - 8.32) < 1e-12);
  partial.add({768, 3072});
  CHECK(partial.tensors == 2);
  CHECK(partial.elements == 1000 + 768 * 3072);
}

TEST_CASE("mxint8 zeros: counted on the codes, not in NaN blocks, partial blocks included") {
  // K = 70: blocks [0, 32), [32, 64) and a partial [64, 70). 0.75 everywhere except:
  // row 0: every k % 4 == 0 is 0 (18 of them: 0, 4, …, 68), and k = 1 is 1e-6, which rounds
  //        to code 0 (block max 0.75: s = −1, step 2^−1/64 = 2^−7, 1e-6·128 ≈ 0.0001) -> 19
  // row 1: the same zeros, but k = 5 is NaN: block 0 is all NaN (scale 0xFF), its 8 zero codes
  //        are not zeros; blocks 1 and 2 keep theirs (32, 36, …, 68) -> 10
  // row 2: all zeros (scale byte 0, every code 0) -> 70
  const int64_t K = 70;
  std::vector<float> v(3 * K, 0.75f);
  for (int64_t r = 0; r < 2; ++r)
    for (int64_t k = 0; k < K; k += 4) v[r * K + k] = 0.f;
  v[1] = 1e-6f;
  v[K + 5] = NAN;
  std::fill(v.begin() + 2 * K, v.end(), 0.f);
  MxInt8Tensor p = mxint8_pack(Tensor::from(v, {3, K}));
  CHECK(p.scales.to_vector<uint8_t>()[3] == 0xFF);
  CHECK(mxint8_zeros(p) == 19 + 10 + 70);
  // the oracle: the dequantized values that are zero (NaN is not)
  int64_t zeros = 0;
  for (float y : mxint8_unpack(p).to_vector<float>()) zeros += y == 0.f;
  CHECK(zeros == 99);
  MxInt8Tensor bad = p;
  bad.scales = Tensor::zeros({3, 2}, DType::u8);
  CHECK(test::error_message([&] { mxint8_zeros(bad); }) ==
        "[mxint8_zeros] expected 9 scales for elements (3, 70), got (3, 2)");
  if (test::gpu_present())  // the bytes of a CUDA tensor are counted on the host
    CHECK(mxint8_zeros({p.elements.to(Device::cuda()), p.scales.to(Device::cuda())}) == 99);
}

TEST_CASE("mxint8 errors") {
  CHECK_THROWS_AS(mxint8_pack(Tensor::zeros({4, 32}, DType::f64)), DTypeError);
  CHECK_THROWS_AS(mxint8_pack(Tensor::scalar(1.0)), ShapeError);
  MxInt8Tensor p = mxint8_pack(Tensor::zeros({2, 64}));
  p.scales = Tensor::zeros({2, 1}, DType::u8);
  CHECK(test::error_message([&] { mxint8_unpack(p); }) ==
        "[mxint8_unpack] expected scales of shape (2, 2) for elements (2, 64), got (2, 1)");
}

TEST_CASE("mxint8 CPU == CUDA") {
  if (!test::have_gpu()) return;
  for (int64_t K : {100, 256, 1000, 31}) {
    Tensor x = tricky(37, K, uint64_t(K) + 1);
    MxInt8Tensor c = mxint8_pack(x), g = mxint8_pack(x.detach().to(Device::cuda()));
    CHECK(g.elements.to_vector<int8_t>() == c.elements.to_vector<int8_t>());
    CHECK(g.scales.to_vector<uint8_t>() == c.scales.to_vector<uint8_t>());
    for (Dequant how : {Dequant::multiply, Dequant::bf16})
      CHECK(same_bits(mxint8_unpack(g, how).to_vector<float>(), mxint8_unpack(c, how).to_vector<float>()));
  }
}
