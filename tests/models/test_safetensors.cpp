// tests/models/test_safetensors.cpp — the safetensors reader/writer: round trips, files written
// by HF's library, dtype conversions, every kind of hostile header, atomic writes.
#include <cstring>
#include <fstream>
#include <limits>

#include "bert_fixture.h"
#include "helpers.h"
#include "autograd/ops.h"
#include "models/safetensors.h"
#include "temp_dir.h"

using namespace mase;
using namespace mase::nn;
using mase::test::check_close;

namespace test_safetensors {

namespace {

// A file with the given header text (its length written as the 8-byte prefix, or `n` when
// given) followed by `data`.
void write_raw(const std::string& path, const std::string& header, const std::string& data,
               uint64_t n = UINT64_MAX) {
  if (n == UINT64_MAX) n = header.size();
  std::ofstream f(path, std::ios::binary);
  for (int i = 0; i < 8; ++i) f.put(static_cast<char>(n >> (8 * i)));
  f << header << data;
}

std::string bytes(std::initializer_list<uint8_t> b) { return std::string(b.begin(), b.end()); }

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

}  // namespace

TEST_CASE("safetensors: every dtype round-trips with its metadata") {
  test::TempDir dir;
  std::map<std::string, Tensor> in = {
      {"f32", Tensor::from({1.5f, -2, 3, 4, 5, 6e-30f}, {2, 3})},
      {"f64", Tensor::from(std::vector<double>{1e300, -0.1, 3}, {3})},
      {"i32", Tensor::from(std::vector<int32_t>{-2147483647 - 1, -1, 0, 2147483647}, {2, 2})},
      {"i8", Tensor::from(std::vector<int8_t>{-128, -1, 0, 127}, {4})},
      {"u8", Tensor::from(std::vector<uint8_t>{0, 1, 255}, {3})},
      {"scalar", Tensor::scalar(7.25)},
      {"empty", Tensor::zeros({0, 4})},
      {"transposed", transpose(Tensor::from({1, 2, 3, 4, 5, 6}, {2, 3}), 0, 1)},  // a strided view
  };
  std::map<std::string, std::string> meta = {{"format", "pt"}, {"note", "hello"}};
  const std::string path = dir.file("t.safetensors");
  save_safetensors(path, in, meta);
  SafetensorsFile out = load_safetensors(path);
  CHECK(out.metadata == meta);
  REQUIRE(out.tensors.size() == in.size());
  for (const auto& [name, t] : in) {
    INFO(name);
    const Tensor& u = out.tensors.at(name);
    CHECK(u.dtype() == t.dtype());
    CHECK(u.shape() == t.shape());
    CHECK(u.to_vector<double>() == t.to_vector<double>());  // bit-exact
  }
  // the layout: data section 8-byte aligned, each tensor aligned to its element size, spans
  // tiling the section in order
  SafetensorsHeader h = read_safetensors_header(path);
  CHECK(h.data_start % 8 == 0);
  uint64_t pos = 0;
  for (const auto& e : h.entries) {
    INFO(e.name);
    CHECK(e.begin == pos);
    CHECK(e.begin % itemsize(out.tensors.at(e.name).dtype()) == 0);
    pos = e.end;
  }
  CHECK(h.entries.front().dtype == "F64");  // largest elements first
  CHECK(h.data_start + pos == std::filesystem::file_size(path));
  // the 8-byte prefix is the header length, little-endian
  std::ifstream f(path, std::ios::binary);
  unsigned char len[8];
  f.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];
  CHECK(n + 8 == h.data_start);
}

TEST_CASE("safetensors: a file written by HF's library loads with its values") {
  SafetensorsFile f = load_safetensors(MASE_FIXTURES_DIR "/hf_bert_tiny/model.safetensors");
  CHECK(f.metadata.at("format") == "pt");
  std::map<std::string, Tensor> ref = test::load_bert_fixture().group("param");
  REQUIRE(f.tensors.size() == ref.size());  // 41: parameters only, no buffers
  for (const auto& [name, t] : ref) {
    INFO(name);
    REQUIRE(f.tensors.count(name));
    CHECK(f.tensors.at(name).dtype() == DType::f32);
    check_close(f.tensors.at(name), t, 0, 0);
  }
}

TEST_CASE("safetensors: I64 BOOL F16 and BF16 are converted on load") {
  test::TempDir dir;
  const std::string path = dir.file("conv.safetensors");
  // a: I64 {5, -7, 2³¹−1} [0, 24)   b: BF16 {0x3F80 = 1, 0xC040 = −3} [24, 28)
  // c: F16 {0x3C00 = 1, 0x0001 = 2⁻²⁴ (smallest subnormal), 0xFBFF = −65504} [28, 34)
  // d: BOOL {1, 0} [34, 36)
  std::string data = bytes({5, 0, 0, 0, 0, 0, 0, 0, 0xF9, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF,
                            0xFF, 0xFF, 0xFF, 0x7F, 0, 0, 0, 0, 0x80, 0x3F, 0x40, 0xC0, 0x00, 0x3C,
                            0x01, 0x00, 0xFF, 0xFB, 1, 0});
  write_raw(path,
            R"({"a":{"dtype":"I64","shape":[3],"data_offsets":[0,24]},)"
            R"("b":{"dtype":"BF16","shape":[2],"data_offsets":[24,28]},)"
            R"("c":{"dtype":"F16","shape":[3],"data_offsets":[28,34]},)"
            R"("d":{"dtype":"BOOL","shape":[2],"data_offsets":[34,36]}})",
            data);
  SafetensorsFile f = load_safetensors(path);
  CHECK(f.tensors.at("a").dtype() == DType::i32);
  CHECK(f.tensors.at("a").to_vector<int32_t>() == std::vector<int32_t>{5, -7, 2147483647});
  check_close(f.tensors.at("b"), {1.0, -3.0}, 0, 0);
  check_close(f.tensors.at("c"), {1.0, std::ldexp(1.0, -24), -65504.0}, 0, 0);
  CHECK(f.tensors.at("d").dtype() == DType::u8);
  check_close(f.tensors.at("d"), {1, 0}, 0, 0);
  // an I64 that does not fit in i32 is refused, naming the key
  write_raw(path, R"({"big":{"dtype":"I64","shape":[1],"data_offsets":[0,8]}})",
            bytes({0, 0, 0, 0, 0, 1, 0, 0}));  // 2⁴⁰
  CHECK(test::error_message([&] { load_safetensors(path); }) ==
        "[safetensors] " + path + ": tensor 'big' (I64) holds 1099511627776 at element 0, which does not fit in i32");
}

TEST_CASE("safetensors: hostile headers are IoErrors naming the file and the key") {
  test::TempDir dir;
  const std::string path = dir.file("bad.safetensors");
  auto message = [&]() {
    std::string m;
    CHECK_THROWS_AS(
        [&] {
          try {
            load_safetensors(path);
          } catch (const IoError& e) {
            m = e.what();
            throw;
          }
        }(),
        IoError);
    CHECK(contains(m, path));  // every message names the file
    return m;
  };
  const std::string w = R"("w":{"dtype":"F32","shape":[2],"data_offsets":[0,8]})";
  const std::string eight(8, '\0');

  std::ofstream(path, std::ios::binary) << "abc";  // shorter than the length prefix
  CHECK(contains(message(), "file is 3 bytes, too short for the 8-byte header length"));
  write_raw(path, "{}", "", 1000);  // the prefix claims more than the file holds
  CHECK(contains(message(), "header length 1000 is larger than the file (10 bytes"));
  write_raw(path, "not json", "");
  CHECK(contains(message(), "header is not valid JSON"));
  write_raw(path, "[1, 2]", "");
  CHECK(contains(message(), "expected the header to be a JSON object, got array"));
  write_raw(path, "{" + w + "," + w + "}", eight);
  CHECK(contains(message(), "duplicate key 'w'"));
  write_raw(path, R"({"w":{"dtype":"F32","dtype":"I32","shape":[2],"data_offsets":[0,8]}})", eight);
  CHECK(contains(message(), "duplicate key 'dtype'"));
  write_raw(path, R"({"w":{"dtype":"Q8","shape":[2],"data_offsets":[0,8]}})", eight);
  CHECK(contains(message(), "tensor 'w': unsupported dtype \"Q8\""));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0,12]}})", std::string(12, '\0'));
  CHECK(contains(message(), "tensor 'w': shape (2) of F32 is 8 bytes but data_offsets [0, 12] span 12"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight);
  CHECK(contains(message(), "tensor 'w': data_offsets [0, 16] out of range (the data section has 8 bytes"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[8,4]}})", eight);
  CHECK(contains(message(), "tensor 'w': data_offsets [8, 4] out of range"));
  write_raw(path, R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                  R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0'));
  CHECK(contains(message(), "tensor 'b': data_offsets [4, 12] overlap tensor 'a' [0, 8)"));
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},)"
                  R"("b":{"dtype":"F32","shape":[1],"data_offsets":[8,12]}})", std::string(12, '\0'));
  CHECK(contains(message(), "tensor 'b': data_offsets [8, 12] leave a gap of 4 bytes"));
  write_raw(path, R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})", eight);
  CHECK(contains(message(), "the tensors cover 4 bytes but the data section has 8 (trailing bytes)"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", eight);
  CHECK(contains(message(), "tensor 'w': expected shape to hold non-negative integers, got -2"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[4611686018427387904,4],"data_offsets":[0,8]}})", eight);
  CHECK(contains(message(), "tensor 'w': shape [4611686018427387904,4] is too large"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2]}})", eight);
  CHECK(contains(message(), "tensor 'w': expected {\"dtype\", \"shape\", \"data_offsets\"}"));
  write_raw(path, R"({"w":{"dtype":"F32","shape":[2],"data_offsets":[0]}})", eight);
  CHECK(contains(message(), "tensor 'w': expected data_offsets [begin, end], got [0]"));
  write_raw(path, R"({"__metadata__":{"format":1},)" + w + "}", eight);
  CHECK(contains(message(), "__metadata__ value of 'format' is not a string"));
  // and the exact form of one message
  write_raw(path, R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", eight);
  CHECK(message() == "[safetensors] " + path + ": tensor 'w': data_offsets [0, 16] out of range (the data "
                     "section has 8 bytes; truncated file?)");
  CHECK_THROWS_AS(load_safetensors(dir.file("missing.safetensors")), IoError);
}

TEST_CASE("safetensors: a failed save leaves the previous file intact") {
  test::TempDir dir;
  const std::string path = dir.file("w.safetensors");
  save_safetensors(path, {{"w", Tensor::from({1, 2}, {2})}});
  // an undefined tensor is refused before anything is written
  CHECK_THROWS_AS(save_safetensors(path, {{"w", Tensor()}}), IoError);
  check_close(load_safetensors(path).tensors.at("w"), {1, 2}, 0, 0);
  // a directory that does not exist: IoError, nothing created
  CHECK_THROWS_AS(save_safetensors(dir.file("nope/w.safetensors"), {{"w", Tensor::zeros({1})}}), IoError);
  CHECK(!std::filesystem::exists(dir.file("nope")));
  // overwriting replaces the file whole and leaves no temporary file behind
  save_safetensors(path, {{"v", Tensor::from({3}, {1})}});
  SafetensorsFile f = load_safetensors(path);
  CHECK(f.tensors.size() == 1);
  CHECK(f.tensors.count("v") == 1);
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) files += e.is_regular_file();
  CHECK(files == 1);
}

}  // namespace test_safetensors
