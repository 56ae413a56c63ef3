// models/safetensors.h — read and write the safetensors format (HuggingFace's checkpoint file).
//
// Layout (https://github.com/huggingface/safetensors, "Format"):
//   [8 bytes]  N, unsigned little-endian: the header's length in bytes
//   [N bytes]  a JSON object (UTF-8), padded with spaces:
//                {"__metadata__": {"format": "pt"},          (optional; string -> string)
//                 "bert.pooler.dense.bias": {"dtype": "F32", "shape": [128],
//                                            "data_offsets": [0, 512]}, ...}
//   [rest]     the data section: every tensor's bytes, little-endian, row-major; offsets are
//              relative to the section's start and [begin, end) spans tile it exactly.
//
// A file is untrusted input: every header is checked before any byte of data is used — header
// longer than the file, not JSON, duplicate keys, unknown dtype, shape × dtype ≠ span, offsets
// out of range, overlapping, or leaving gaps — and each problem is an IoError naming the file
// and the key. Then each tensor's bytes are read straight into a fresh tensor.
//
// dtypes: F32, F64, I32, I8, U8 load as such; I64 loads as i32 (values must fit), BOOL as u8,
// BF16 and F16 widen exactly to f32. Writing: f32/f64/i32/i8/u8, tensors ordered by element
// size then name (so every tensor is aligned to its element size), the header padded so the
// data section starts at a multiple of 8, written to a temporary file then renamed.
// Read next: models/checkpoint.h (model directories: config.json + model.safetensors).
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "runtime/tensor.h"

namespace mase::nn {

// One header entry, as validated.
struct SafetensorsEntry {
  std::string name;
  std::string dtype;  // as written in the file: "F32", "I64", ...
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range in the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in data order (sorted by begin)
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // 8 + N
};

struct SafetensorsFile {
  std::map<std::string, Tensor> tensors;  // CPU tensors
  std::map<std::string, std::string> metadata;
};

// Checks the header of the file at `path` (all the rules above) without reading tensor data.
SafetensorsHeader read_safetensors_header(const std::string& path);
// Reads every tensor. IoError for a missing, truncated or hostile file.
SafetensorsFile load_safetensors(const std::string& path);
// Writes `tensors` (any device, any strides; copied to the host) with `metadata` in the header.
// HF's loader requires metadata {"format": "pt"}, which is the default.
void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata = {{"format", "pt"}});

}  // namespace mase::nn
