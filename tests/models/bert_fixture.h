// tests/models/bert_fixture.h — reads tests/fixtures/bert_tiny_ref.bin, the reference numbers
// written by tests/fixtures/gen_bert.py with HF transformers (format in that script).
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <string>

#include "runtime/tensor.h"

namespace mase::test {

struct BertFixture {
  std::string config_json;             // HF's BertConfig.to_json_string()
  std::map<std::string, Tensor> tensors;  // "param/<key>", "grad/<key>", "logits", ...
  const Tensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw IoError("[bert fixture] no record " + name);
    return it->second;
  }
  // The records under "<prefix>/" with the prefix removed (e.g. "param" -> HF key -> weight).
  std::map<std::string, Tensor> group(const std::string& prefix) const {
    std::map<std::string, Tensor> out;
    for (const auto& [k, t] : tensors)
      if (k.rfind(prefix + "/", 0) == 0) out[k.substr(prefix.size() + 1)] = t;
    return out;
  }
};

inline BertFixture load_bert_fixture(const std::string& path = MASE_FIXTURES_DIR "/bert_tiny_ref.bin") {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("[bert fixture] cannot open " + path + " (run tests/fixtures/gen_bert.py)");
  auto rd = [&](void* p, size_t n) {
    in.read(static_cast<char*>(p), static_cast<std::streamsize>(n));
    if (!in) throw IoError("[bert fixture] " + path + " is truncated");
  };
  char magic[8];
  uint32_t version = 0, count = 0;
  rd(magic, 8);
  rd(&version, 4);
  rd(&count, 4);
  if (std::memcmp(magic, "MASEBERT", 8) != 0 || version != 1)
    throw IoError("[bert fixture] " + path + ": expected magic MASEBERT version 1");
  BertFixture fx;
  for (uint32_t r = 0; r < count; ++r) {
    uint32_t len = 0, ndim = 0;
    uint8_t kind = 0;
    rd(&len, 4);
    std::string name(len, '\0');
    rd(name.data(), len);
    rd(&kind, 1);
    rd(&ndim, 4);
    Shape shape(ndim);
    for (auto& d : shape) rd(&d, 8);
    if (kind == 2) {  // text: one dim, its byte count
      std::string text(static_cast<size_t>(shape.at(0)), '\0');
      rd(text.data(), text.size());
      if (name == "config.json") fx.config_json = text;
      continue;
    }
    Tensor t = Tensor::empty(shape, kind == 0 ? DType::f32 : DType::i32);
    rd(t.raw_data(), t.nbytes());
    fx.tensors[name] = t;
  }
  return fx;
}

}  // namespace mase::test
