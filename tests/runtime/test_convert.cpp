// tests/runtime/test_convert.cpp — the value of a dtype conversion (runtime/kernels/copy.h):
// floating -> integer truncates and saturates, NaN -> 0, with no undefined behaviour at the
// edges (±inf, NaN, max + 1, min - 1, values that truncate or round to a limit); integer ->
// integer wraps; fill and convert store the same values; the CUDA twins store the same bits.
#include <cmath>
#include <limits>

#include "helpers.h"
#include "runtime/kernels/copy.h"
#include "runtime/tensor.h"

using namespace mase;

namespace test_convert {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// An input and what the conversion must store.
template <class To>
struct Case {
  double x;
  To expected;
};

// cpu::convert from `From` and cpu::fill (from double) of each case, element by element.
template <class To, class From>
void check_cases(const std::vector<Case<To>>& cases) {
  std::vector<From> src;
  for (const auto& c : cases) src.push_back(static_cast<From>(c.x));
  std::vector<To> dst(cases.size());
  cpu::convert(dst.data(), dtype_of<To>(), src.data(), dtype_of<From>(),
               static_cast<int64_t>(src.size()));
  for (size_t i = 0; i < cases.size(); ++i) {
    INFO(dtype_of<From>() << " " << src[i] << " -> " << dtype_of<To>());
    CHECK(int64_t(dst[i]) == int64_t(cases[i].expected));
    To filled{};
    cpu::fill(&filled, dtype_of<To>(), static_cast<double>(src[i]), 1);
    CHECK(int64_t(filled) == int64_t(cases[i].expected));
  }
}

}  // namespace

TEST_CASE("convert: floating -> i8 truncates toward zero and saturates, NaN -> 0") {
  const std::vector<Case<int8_t>> cases = {
      {300, 127},    {-300, -128},  {128, 127},        // max + 1
      {-129, -128},                                    // min - 1
      {127.9, 127},  {-128.9, -128},                   // truncate to the limits, in range
      {127, 127},    {-128, -128},  {2.7, 2}, {-2.7, -2}, {-0.5, 0},
      {kInf, 127},   {-kInf, -128}, {kNaN, 0},         {1e20, 127}, {-1e20, -128}};
  check_cases<int8_t, float>(cases);
  check_cases<int8_t, double>(cases);
}

TEST_CASE("convert: floating -> u8 saturates at 0 and 255") {
  const std::vector<Case<uint8_t>> cases = {
      {256, 255},  {255.9, 255}, {255, 255}, {300, 255}, {-1, 0}, {-0.9, 0}, {-300, 0},
      {kInf, 255}, {-kInf, 0},   {kNaN, 0},  {0.5, 0},   {1.5, 1}};
  check_cases<uint8_t, float>(cases);
  check_cases<uint8_t, double>(cases);
}

TEST_CASE("convert: floating -> i32 at the limits, where f32 rounds them") {
  constexpr int32_t kMax = std::numeric_limits<int32_t>::max();
  constexpr int32_t kMin = std::numeric_limits<int32_t>::min();
  // f64 holds every i32 exactly: max + 1 and min - 1 are out of range, x.9 truncates inside
  check_cases<int32_t, double>({{2147483647.0, kMax}, {2147483647.9, kMax}, {2147483648.0, kMax},
                                {-2147483648.0, kMin}, {-2147483648.9, kMin},
                                {-2147483649.0, kMin}, {1e20, kMax}, {-1e20, kMin},
                                {kInf, kMax}, {-kInf, kMin}, {kNaN, 0}, {-7.99, -7}});
  // f32: float(INT32_MAX) rounds up to 2^31 = max + 1 (saturates to max); the largest float
  // below it is 2147483520; below min, the next float is -2^31 - 256
  CHECK(static_cast<double>(static_cast<float>(2147483647.0)) == 2147483648.0);
  check_cases<int32_t, float>({{2147483648.0, kMax}, {2147483520.0, 2147483520},
                               {-2147483648.0, kMin}, {-2147483904.0, kMin}, {1e20, kMax},
                               {kInf, kMax}, {-kInf, kMin}, {kNaN, 0}});
}

TEST_CASE("convert: convert_value is a constant expression with the same rule") {
  static_assert(convert_value<int8_t>(300.0f) == 127);
  static_assert(convert_value<int8_t>(-1e30) == -128);
  static_assert(convert_value<uint8_t>(-1.0f) == 0);
  static_assert(convert_value<int32_t>(std::numeric_limits<double>::infinity()) == 2147483647);
  static_assert(convert_value<float>(int32_t{3}) == 3.0f);
  CHECK(convert_value<int32_t>(std::nanf("")) == 0);
}

TEST_CASE("convert: integer -> integer wraps modulo 2^bits, -> floating is the nearest value") {
  const std::vector<int32_t> src = {300, -129, 255, 256, -1};
  std::vector<int8_t> i8(src.size());
  std::vector<uint8_t> u8(src.size());
  cpu::convert(i8.data(), DType::i8, src.data(), DType::i32, 5);
  cpu::convert(u8.data(), DType::u8, src.data(), DType::i32, 5);
  CHECK(i8 == std::vector<int8_t>{44, 127, -1, 0, -1});   // 300 - 256, -129 + 256, ...
  CHECK(u8 == std::vector<uint8_t>{44, 127, 255, 0, 255});
  const std::vector<uint8_t> bits = {200, 128};
  std::vector<int8_t> back(2);
  cpu::convert(back.data(), DType::i8, bits.data(), DType::u8, 2);
  CHECK(back == std::vector<int8_t>{-56, -128});  // the same bits
  const std::vector<double> big = {1e300, -1e300, kNaN};
  std::vector<float> f(3);
  cpu::convert(f.data(), DType::f32, big.data(), DType::f64, 3);
  CHECK(f[0] == std::numeric_limits<float>::infinity());
  CHECK(f[1] == -std::numeric_limits<float>::infinity());
  CHECK(std::isnan(f[2]));
}

TEST_CASE("convert: tensors — full, fill_ and to(dtype) saturate, on every element") {
  // more elements than one parallel chunk (kGrainElems): the parallel path stores the same
  CHECK(Tensor::full({70000}, 300.0, DType::i8).to_vector<int8_t>() ==
        std::vector<int8_t>(70000, 127));
  Tensor t = Tensor::zeros({4}, DType::i32);
  fill_(t, kNaN);
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>(4, 0));
  fill_(t.as_strided({2}, {2}, 0), -1e20);  // a strided view: through copy_
  CHECK(t.to_vector<int32_t>() == std::vector<int32_t>{INT32_MIN, 0, INT32_MIN, 0});
  Tensor x = Tensor::from({300.0f, -300.0f, std::nanf(""), 2.9f}, {4});
  CHECK(x.to(DType::i8).to_vector<int8_t>() == std::vector<int8_t>{127, -128, 0, 2});
  CHECK(x.to(DType::u8).to_vector<uint8_t>() == std::vector<uint8_t>{255, 0, 0, 2});
}

TEST_CASE("convert: the CUDA twins store the CPU's values") {
  if (!test::have_gpu()) return;
  const std::vector<float> edge = {300.0f, -300.0f, 127.9f, -128.9f, 256.0f, -1.0f,
                                   2147483648.0f, -2147483904.0f, 1e20f, -1e20f,
                                   std::numeric_limits<float>::infinity(),
                                   -std::numeric_limits<float>::infinity(), std::nanf(""), -0.5f};
  const Shape s{static_cast<int64_t>(edge.size())};
  Tensor cpu_x = Tensor::from(edge, s);
  Tensor gpu_x = cpu_x.to(Device::cuda(0));
  for (DType to : {DType::i8, DType::u8, DType::i32}) {
    INFO("f32 -> " << to);
    CHECK(gpu_x.to(to).to_vector<int32_t>() == cpu_x.to(to).to_vector<int32_t>());
    CHECK(gpu_x.to(DType::f64).to(to).to_vector<int32_t>() ==
          cpu_x.to(DType::f64).to(to).to_vector<int32_t>());
    for (float v : edge) {
      INFO("fill " << v);
      CHECK(Tensor::full({3}, v, to, Device::cuda(0)).to_vector<int32_t>() ==
            Tensor::full({3}, v, to).to_vector<int32_t>());
    }
  }
}

}  // namespace test_convert
