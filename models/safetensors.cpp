// models/safetensors.cpp — see safetensors.h for the format and the rules checked here.
#include "models/safetensors.h"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <limits>
#include <set>

#include "models/json_io.h"
#include "runtime/atomic_file.h"

namespace mase::nn {
namespace {

static_assert(std::endian::native == std::endian::little,
              "safetensors data is little-endian; this reader assumes a little-endian host");

using nlohmann::json;
constexpr uint64_t kMaxHeaderBytes = 100'000'000;  // the reference implementation's limit

// Element size of a dtype string of the file, 0 when unsupported.
size_t file_itemsize(const std::string& d) {
  if (d == "F64" || d == "I64") return 8;
  if (d == "F32" || d == "I32") return 4;
  if (d == "F16" || d == "BF16") return 2;
  if (d == "I8" || d == "U8" || d == "BOOL") return 1;
  return 0;
}

// The tensor dtype a file dtype loads as.
DType load_dtype(const std::string& d) {
  if (d == "F64") return DType::f64;
  if (d == "I32" || d == "I64") return DType::i32;
  if (d == "I8") return DType::i8;
  if (d == "U8" || d == "BOOL") return DType::u8;
  return DType::f32;  // F32, F16, BF16
}

std::string file_dtype(DType t) {
  switch (t) {
    case DType::f32: return "F32";
    case DType::f64: return "F64";
    case DType::i32: return "I32";
    case DType::i8: return "I8";
    case DType::u8: return "U8";
  }
  return "?";
}

// IEEE half -> float, exactly (every half is a float).
float half_to_float(uint16_t h) {
  const int sign = (h >> 15) ? -1 : 1, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 31) return mant ? std::numeric_limits<float>::quiet_NaN() : sign * INFINITY;
  if (exp == 0) return sign * std::ldexp(static_cast<float>(mant), -24);      // subnormal
  return sign * std::ldexp(static_cast<float>(mant | 0x400), exp - 25);       // 1.m · 2^(e−15)
}

// Parse the JSON header, rejecting a key repeated within one object (nlohmann would keep the
// last one silently; a hostile file could then show one tensor to a checker and another here).
json parse_json(const std::string& text, const std::string& path) {
  std::vector<std::set<std::string>> keys;  // one set per open object
  auto cb = [&](int, json::parse_event_t ev, json& parsed) {
    if (ev == json::parse_event_t::object_start) keys.emplace_back();
    else if (ev == json::parse_event_t::object_end) keys.pop_back();
    else if (ev == json::parse_event_t::key && !keys.back().insert(parsed.get<std::string>()).second)
      throw IoError(cat("[safetensors] ", path, ": duplicate key '", parsed.get<std::string>(),
                        "' in the header"));
    return true;
  };
  MASE_CHECK(json_depth(text) <= kMaxJsonDepth, IoError, "[safetensors] ", path,
             ": expected a header nested at most ", kMaxJsonDepth,
             " levels deep, got more (a corrupt or hostile file?)");
  try {
    return json::parse(text, cb);
  } catch (const json::exception& e) {
    throw IoError(cat("[safetensors] ", path, ": header is not valid JSON (", e.what(), ")"));
  }
}

uint64_t as_u64(const json& v, const std::string& path, const std::string& key, const char* field) {
  MASE_CHECK(v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0), IoError,
             "[safetensors] ", path, ": tensor '", key, "': expected ", field,
             " to hold non-negative integers, got ", brief(v));
  return v.get<uint64_t>();
}

// All the checks on one entry except those involving other entries.
SafetensorsEntry parse_entry(const std::string& key, const json& v, uint64_t data_size,
                             const std::string& path) {
  const std::string where = cat("[safetensors] ", path, ": tensor '", key, "': ");
  MASE_CHECK(v.is_object() && v.size() == 3 && v.contains("dtype") && v.contains("shape") &&
                 v.contains("data_offsets"),
             IoError, where, "expected {\"dtype\", \"shape\", \"data_offsets\"}, got ", brief(v));
  SafetensorsEntry e;
  e.name = key;
  MASE_CHECK(v["dtype"].is_string(), IoError, where, "expected dtype to be a string, got ",
             brief(v["dtype"]));
  e.dtype = v["dtype"].get<std::string>();
  const size_t item = file_itemsize(e.dtype);
  MASE_CHECK(item > 0, IoError, where, "unsupported dtype ", brief(v["dtype"]),
             " (supported: F32, F64, F16, BF16, I64, I32, I8, U8, BOOL)");
  MASE_CHECK(v["shape"].is_array(), IoError, where, "expected shape to be an array, got ",
             brief(v["shape"]));
  uint64_t nbytes = item;
  for (const json& d : v["shape"]) {
    uint64_t n = as_u64(d, path, key, "shape");
    MASE_CHECK(n <= static_cast<uint64_t>(std::numeric_limits<int64_t>::max()) &&
                   !__builtin_mul_overflow(nbytes, n, &nbytes),
               IoError, where, "shape ", brief(v["shape"]), " is too large");
    e.shape.push_back(static_cast<int64_t>(n));
  }
  const json& off = v["data_offsets"];
  MASE_CHECK(off.is_array() && off.size() == 2, IoError, where,
             "expected data_offsets [begin, end], got ", brief(off));
  e.begin = as_u64(off[0], path, key, "data_offsets");
  e.end = as_u64(off[1], path, key, "data_offsets");
  MASE_CHECK(e.begin <= e.end && e.end <= data_size, IoError, where, "data_offsets [", e.begin, ", ",
             e.end, "] out of range (the data section has ", data_size, " bytes; truncated file?)");
  MASE_CHECK(e.end - e.begin == nbytes, IoError, where, "shape ", e.shape, " of ", e.dtype, " is ",
             nbytes, " bytes but data_offsets [", e.begin, ", ", e.end, "] span ", e.end - e.begin);
  return e;
}

SafetensorsHeader parse_header(uint64_t n, const std::string& text, uint64_t file_size,
                               const std::string& path) {
  json j = parse_json(text, path);
  MASE_CHECK(j.is_object(), IoError, "[safetensors] ", path, ": expected the header to be a JSON object, got ",
             j.type_name());
  SafetensorsHeader h;
  h.data_start = 8 + n;
  const uint64_t data_size = file_size - h.data_start;
  for (auto it = j.begin(); it != j.end(); ++it) {
    if (it.key() == "__metadata__") {
      MASE_CHECK(it->is_object(), IoError, "[safetensors] ", path,
                 ": expected __metadata__ to be an object of strings, got ", brief(*it));
      for (auto m = it->begin(); m != it->end(); ++m) {
        MASE_CHECK(m->is_string(), IoError, "[safetensors] ", path, ": __metadata__ value of '",
                   m.key(), "' is not a string: ", brief(*m));
        h.metadata[m.key()] = m->get<std::string>();
      }
      continue;
    }
    h.entries.push_back(parse_entry(it.key(), *it, data_size, path));
  }
  // The spans must tile [0, data_size): sorted by begin, each starts where the previous ended.
  std::sort(h.entries.begin(), h.entries.end(), [](const auto& a, const auto& b) {
    return a.begin != b.begin ? a.begin < b.begin : a.end < b.end;
  });
  uint64_t pos = 0;
  const SafetensorsEntry* prev = nullptr;
  for (const auto& e : h.entries) {
    MASE_CHECK(e.begin >= pos, IoError, "[safetensors] ", path, ": tensor '", e.name,
               "': data_offsets [", e.begin, ", ", e.end, "] overlap tensor '", prev ? prev->name : "",
               "' [", prev ? prev->begin : 0, ", ", pos, ")");
    MASE_CHECK(e.begin == pos, IoError, "[safetensors] ", path, ": tensor '", e.name,
               "': data_offsets [", e.begin, ", ", e.end, "] leave a gap of ", e.begin - pos,
               " bytes before it (tensors must tile the data section)");
    pos = e.end;
    prev = &e;
  }
  MASE_CHECK(pos == data_size, IoError, "[safetensors] ", path, ": the tensors cover ", pos,
             " bytes but the data section has ", data_size, " (trailing bytes)");
  return h;
}

// Opens `path`, checks the length prefix, returns the header text and the sizes.
SafetensorsHeader read_header(const std::string& path, std::ifstream& in) {
  std::error_code ec;
  const uint64_t file_size = std::filesystem::file_size(path, ec);
  MASE_CHECK(!ec, IoError, "[safetensors] cannot read ", path, ": ", ec.message());
  in.open(path, std::ios::binary);
  MASE_CHECK(in.good(), IoError, "[safetensors] cannot open ", path);
  MASE_CHECK(file_size >= 8, IoError, "[safetensors] ", path, ": file is ", file_size,
             " bytes, too short for the 8-byte header length (truncated?)");
  unsigned char len[8];
  in.read(reinterpret_cast<char*>(len), 8);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | len[i];  // little-endian
  MASE_CHECK(n <= file_size - 8, IoError, "[safetensors] ", path, ": header length ", n,
             " is larger than the file (", file_size, " bytes; truncated or not safetensors)");
  MASE_CHECK(n <= kMaxHeaderBytes, IoError, "[safetensors] ", path, ": header length ", n,
             " exceeds the ", kMaxHeaderBytes, "-byte limit");
  std::string text(n, '\0');
  in.read(text.data(), static_cast<std::streamsize>(n));
  MASE_CHECK(in.good(), IoError, "[safetensors] ", path, ": cannot read the ", n, "-byte header");
  return parse_header(n, text, file_size, path);
}

}  // namespace

SafetensorsHeader read_safetensors_header(const std::string& path) {
  std::ifstream in;
  return read_header(path, in);
}

SafetensorsFile load_safetensors(const std::string& path) {
  std::ifstream in;
  SafetensorsHeader h = read_header(path, in);
  SafetensorsFile out;
  out.metadata = h.metadata;
  std::vector<char> buf;
  for (const auto& e : h.entries) {
    Tensor t = Tensor::empty(e.shape, load_dtype(e.dtype));
    const uint64_t nbytes = e.end - e.begin;
    const bool native = file_itemsize(e.dtype) == itemsize(t.dtype());
    char* dst = native ? static_cast<char*>(t.raw_data()) : (buf.resize(nbytes), buf.data());
    in.seekg(static_cast<std::streamoff>(h.data_start + e.begin));
    in.read(dst, static_cast<std::streamsize>(nbytes));
    MASE_CHECK(in.good(), IoError, "[safetensors] ", path, ": tensor '", e.name,
               "': cannot read its ", nbytes, " bytes (file changed while reading?)");
    const int64_t n = t.numel();
    if (e.dtype == "I64") {
      int32_t* o = t.data<int32_t>();
      for (int64_t i = 0; i < n; ++i) {
        int64_t v;
        std::memcpy(&v, dst + 8 * i, 8);
        MASE_CHECK(v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max(),
                   IoError, "[safetensors] ", path, ": tensor '", e.name, "' (I64) holds ", v,
                   " at element ", i, ", which does not fit in i32");
        o[i] = static_cast<int32_t>(v);
      }
    } else if (e.dtype == "BF16" || e.dtype == "F16") {
      float* o = t.data<float>();
      for (int64_t i = 0; i < n; ++i) {
        uint16_t b;
        std::memcpy(&b, dst + 2 * i, 2);
        // bf16 is the top half of an f32: shift it back into place
        o[i] = e.dtype == "BF16" ? std::bit_cast<float>(static_cast<uint32_t>(b) << 16) : half_to_float(b);
      }
    }
    out.tensors[e.name] = t;
  }
  return out;
}

void save_safetensors(const std::string& path, const std::map<std::string, Tensor>& tensors,
                      const std::map<std::string, std::string>& metadata) {
  // Order: larger elements first, then by name, so each tensor's offset is a multiple of its
  // element size (the data section itself starts at a multiple of 8).
  std::vector<std::pair<std::string, Tensor>> items;
  for (const auto& [name, t] : tensors) {
    MASE_CHECK(t.defined(), IoError, "[safetensors] ", path, ": tensor '", name, "' is undefined");
    MASE_CHECK(!name.empty() && name != "__metadata__", IoError, "[safetensors] ", path,
               ": invalid tensor name '", name, "'");
    items.push_back({name, t.detach().to(Device::cpu()).contiguous()});
  }
  std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) {
    return itemsize(a.second.dtype()) > itemsize(b.second.dtype());
  });
  json header = json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  uint64_t pos = 0;
  for (const auto& [name, t] : items) {
    header[name] = {{"dtype", file_dtype(t.dtype())},
                    {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {pos, pos + t.nbytes()}}};
    pos += t.nbytes();
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // 8 + N ≡ 0 (mod 8): aligned data section
  unsigned char len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(static_cast<uint64_t>(text.size()) >> (8 * i));
  AtomicFile f(path);
  f.write(len, 8);
  f.write(text);
  for (const auto& [name, t] : items) f.write(t.raw_data(), t.nbytes());
  f.commit();
}

}  // namespace mase::nn
