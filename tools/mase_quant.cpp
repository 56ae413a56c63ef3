// tools/mase_quant.cpp — mase-quant: quantize numbers with any format and show value and code.
//
//   mase-quant --format minifloat_ieee --width 8 --exponent-width 4 0.7 1.97 1000 nan
//   echo 0.1 0.2 0.3 | mase-quant --format integer --width 8 --frac-width 4
//   mase-quant --format log --width 4 --table
//   mase-quant --format mxint8 --speed 16777216
//   mase-quant --format mxint8 --bytes 768x3072 3072x768
//
// The values are quantized as one row: block formats take them as one block unless
// --block-size cuts them (MX formats: blocks of 32), the sign formats' α is the row's. Each line shows the input (as the f32 it becomes), the output
// and the element code in hex and in bits split into fields (sign | exponent | mantissa).
// Everything here is a thin layer over quant/: quantize() for values, codes.h for codes,
// block_shared_param for the per-block exponent or bias. Bad flags: one line on stderr, exit 2.
#include <CLI/CLI.hpp>
#include <unistd.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "autograd/ops.h"
#include "quant/codes.h"
#include "quant/format.h"
#include "quant/mxint8.h"
#include "quant/quantize.h"
#include "runtime/parallel.h"
#include "runtime/random.h"
#include "tools/cli.h"

using namespace mase;
using namespace mase::quant;

namespace {

std::string num(double v) {  // shortest text that reads back as the same f32
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, static_cast<float>(v));
  return std::string(buf, r.ptr);
}

std::string hex(uint64_t code, int bits) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "0x%0*llx", (bits + 3) / 4, (unsigned long long)code);
  return buf;
}

float parse_value(const std::string& tok) {
  const char* s = tok.c_str();
  char* end = nullptr;
  const double v = std::strtod(s, &end);  // accepts nan, inf, -inf, 1e-3, 0x1.8p-9
  if (tok.empty() || *end != '\0') throw ConfigError("not a number: '" + tok + "'");
  return static_cast<float>(v);
}

// How to read the bits column.
const char* layout(const Format& f) {
  switch (f.kind) {
    case Kind::integer: return "two's complement";
    case Kind::log: case Kind::block_log: return "sign | exponent code (0 = zero)";
    case Kind::block_fp: return "sign | magnitude, times the block's step";
    case Kind::mxint8: return "int8 two's complement, times the block's 2^s/64";
    case Kind::binary: case Kind::binary_scaling: return "1 = +, 0 = - (or 0 when not bipolar)";
    case Kind::ternary: return "00 = 0, 01 = +, 11 = -";
    case Kind::binary_residual: return "one sign per level (codes not shown: they depend on mu)";
    default: return is_mx(f.kind) ? "sign | exponent | mantissa, times the block's 2^s"
                                  : "sign | exponent | mantissa";
  }
}

// "768x3072" -> (768, 3072)
Shape parse_shape(const std::string& text) {
  Shape s;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('x', pos);
    if (end == std::string::npos) end = text.size();
    const std::string part = text.substr(pos, end - pos);
    char* stop = nullptr;
    const long long v = std::strtoll(part.c_str(), &stop, 10);
    MASE_CHECK(!part.empty() && *stop == '\0' && v > 0, ConfigError,
               "[--bytes] expected a shape like 768x3072, got '", text, "'");
    s.push_back(v);
    pos = end + 1;
  }
  // bytes are counted in int64: cap the element count far below where x 4 B would overflow
  int64_t n = 1;
  for (int64_t d : s)
    MASE_CHECK(!__builtin_mul_overflow(n, d, &n) && n <= (int64_t(1) << 48), ConfigError,
               "[--bytes] expected a shape of at most 2^48 elements, got '", text, "'");
  return s;
}

// The block (or row) parameter line for formats that have one.
std::string shared_note(const Format& f, const float* x, int64_t n) {
  for (int64_t i = 0; i < n; ++i)
    if (!std::isfinite(x[i])) return "holds NaN or inf, so every output is NaN";
  const int p = quant::block_shared_param(x, n, f);
  switch (f.kind) {
    case Kind::block_fp: return cat("shared exponent e = ", p, ", step 2^", p + 1 - (f.width - 1));
    case Kind::block_minifloat: case Kind::block_log: return cat("shared bias b = ", p);
    default:
      return cat("scale byte ", hex(p, 8), " = 2^", p - 127);
  }
}

void print_values(const Format& f, const std::vector<float>& xs, uint64_t seed) {
  const int64_t n = int64_t(xs.size());
  Tensor x = Tensor::from(xs, {n});
  Quantizer q(f, Role::activation, seed);
  const std::vector<float> ys = q(x).to_vector<float>();
  const int bits = code_width(f);
  std::printf("%s: %d-bit codes, %s\n", f.str().c_str(), bits, layout(f));
  if (f.kind == Kind::binary_scaling || f.kind == Kind::ternary) {
    // the row statistic, recovered from the output: |y| is α wherever it is nonzero
    double alpha = 0;
    bool nan = false;
    for (float y : ys) {
      alpha = std::max(alpha, double(std::abs(y)));
      nan = nan || std::isnan(y);
    }
    if (nan) std::printf("alpha = nan (one row: it holds a NaN or an infinity)\n");
    else std::printf("alpha = %s (one row)\n", num(alpha).c_str());
  }
  const int64_t bs = is_block(f.kind) ? f.block_size : n;
  for (int64_t b0 = 0; b0 < n; b0 += std::max<int64_t>(bs, 1)) {
    const int64_t len = std::min(bs, n - b0);
    int shared = 0;
    if (is_block(f.kind)) {
      shared = quant::block_shared_param(xs.data() + b0, len, f);
      std::printf("block %lld (%lld values): %s\n", (long long)(b0 / bs), (long long)len,
                  shared_note(f, xs.data() + b0, len).c_str());
    }
    std::printf("  %-16s %-16s %-10s %s\n", "input", "output", "code", "bits");
    for (int64_t i = b0; i < b0 + len; ++i) {
      std::optional<uint64_t> c = encode(f, ys[i], shared);
      std::printf("  %-16s %-16s %-10s %s\n", num(xs[i]).c_str(), num(ys[i]).c_str(),
                  c ? hex(*c, bits).c_str() : "-", c ? code_bits(f, *c).c_str() : "-");
    }
  }
}

void print_table(const Format& f) {
  const int bits = code_width(f);
  const auto table = code_table(f);  // throws for formats without a fixed table
  std::printf("%s: every code, %s\n", f.str().c_str(), layout(f));
  std::printf("  %-10s %-14s %s\n", "code", "bits", "value");
  for (auto& [c, v] : table) {
    const std::string value = !v                 ? "(beyond f32: not part of the set)"
                              : std::isinf(*v) ? num(*v) + " (never produced: values saturate)"
                                               : num(*v);
    std::printf("  %-10s %-14s %s\n", hex(c, bits).c_str(), code_bits(f, c).c_str(), value.c_str());
  }
}

template <class F>
double best_ms(F f, int reps = 10) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

// Fake quantization of n random f32 values against a memcpy of them (both read n·4 bytes and
// write n·4 bytes); for mxint8 also the packed kernels, in bytes moved per second.
void print_speed(const Format& f, int64_t n) {
  Tensor x = randn({n / 1024, 1024});
  x = mul(x, 3.0);
  Tensor y = Tensor::empty_like(x);
  const float* xp = x.data<float>();
  float* yp = y.data<float>();
  const double t_copy = best_ms([&] {
    parallel_for(0, n, kGrainElems, [&](int64_t lo, int64_t hi) { std::memcpy(yp + lo, xp + lo, size_t(hi - lo) * 4); });
  });
  NoGradGuard no_grad;
  const double t_q = best_ms([&] { quantize(x, f); });
  std::printf("%lld f32 values, %d threads (best of 10)\n", (long long)n, num_threads());
  std::printf("  memcpy              %8.3f ms  %6.2f GB/s (read + write)\n", t_copy, 8.0 * n / t_copy / 1e6);
  std::printf("  quantize            %8.3f ms  %6.2f x memcpy (%s)\n", t_q, t_q / t_copy, f.str().c_str());
  if (f.kind == Kind::mxint8) {
    MxInt8Tensor p = mxint8_pack(x);
    const double bytes_dq = double(n) * 4 + double(p.nbytes());  // f32 out + int8 and scales in
    const double t_pack = best_ms([&] { mxint8_pack(x); });
    const double t_mul = best_ms([&] { mxint8_unpack(p, Dequant::multiply); });
    const double t_bf = best_ms([&] { mxint8_unpack(p, Dequant::bf16); });
    const double copy_bw = 8.0 * n / t_copy;
    std::printf("  mxint8 pack         %8.3f ms  %6.2f GB/s\n", t_pack, bytes_dq / t_pack / 1e6);
    std::printf("  unpack (multiply)   %8.3f ms  %6.2f GB/s = %3.0f%% of memcpy's bandwidth\n", t_mul,
                bytes_dq / t_mul / 1e6, 100 * (bytes_dq / t_mul) / copy_bw);
    std::printf("  unpack (bf16 trick) %8.3f ms  %6.2f GB/s = %3.0f%% of memcpy's bandwidth\n", t_bf,
                bytes_dq / t_bf / 1e6, 100 * (bytes_dq / t_bf) / copy_bw);
  }
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{"mase-quant: quantize numbers with a number format and show the values and codes"};
  app.name("mase-quant");  // parsed from a vector (below), CLI11 would not know argv[0]
  app.footer(
      "Examples:\n"
      "  mase-quant --format minifloat_ieee --width 8 --exponent-width 4 0.7 1.97 1000 nan\n"
      "  echo 0.1 0.2 0.3 | mase-quant --format integer --width 8 --frac-width 4\n"
      "  mase-quant --format block_fp --width 4 --exponent-width 8 --block-size 4 0.9 0.3 -0.06 0.01\n"
      "  mase-quant --format log --width 4 --table\n"
      "  mase-quant --format mxint8 --bytes 768x3072 10x100\n"
      "Formats: integer (fixed), minifloat_ieee, minifloat_denorm, log, binary, binary_scaling,\n"
      "binary_residual, ternary, block_fp, block_minifloat, block_log, mxint8, mxfp8_e4m3,\n"
      "mxfp8_e5m2, mxfp6_e3m2, mxfp6_e2m3, mxfp4_e2m1 (definitions: docs/formats.md).");
  std::string name;
  std::vector<std::string> values;
  nlohmann::json params = nlohmann::json::object();
  bool table = false;
  int64_t speed = 0;
  uint64_t seed = 0;
  int threads = 0;
  std::vector<std::string> shapes;
  app.add_option("--format,-f", name, "format name")->required();
  // each parameter flag fills the MASE key of the same name (dashes become underscores)
  for (const char* key : {"width", "frac-width", "exponent-width", "exponent-bias", "exponent-bias-width",
                          "block-size", "levels"}) {
    std::string k = key;
    std::replace(k.begin(), k.end(), '-', '_');
    app.add_option_function<int>(std::string("--") + key, [&params, k](int v) { params[k] = v; },
                                 "the format's " + k);
  }
  for (const char* key : {"stochastic", "bipolar", "scaling"})
    app.add_option_function<bool>(std::string("--") + key, [&params, k = std::string(key)](bool v) { params[k] = v; },
                                  std::string(key) + " (true or false)");
  app.add_option_function<std::string>(
      "--compat", [&params](const std::string& v) { params["compat"] = v; },
      "mase: MASE's own formulas (integer, minifloat, log), to match the course's numbers");
  app.add_flag("--table", table, "list every code and value of a scalar format");
  // rows of 1024 (print_speed): another N would leave a partial row the memcpy runs past
  app.add_option("--speed", speed, "time fake quantization of N random values against memcpy "
                 "(a multiple of 1024)")
      ->check(CLI::Range(int64_t(1024), int64_t(1) << 30))
      ->check(CLI::Validator(
          [](std::string& v) -> std::string {
            return std::strtoll(v.c_str(), nullptr, 10) % 1024 == 0
                       ? ""
                       : "expected a multiple of 1024 (rows of 1024 values), got " + v;
          },
          "N"));
  app.add_option("--bytes", shapes, "mxint8: fp32 vs packed bytes of tensors of these shapes, e.g. 768x3072")
      ->take_all();
  app.add_option("--seed", seed, "seed of the stochastic formats")->check(cli::seed_check());
  app.add_option("--threads", threads, "threads (0 = all cores)")->check(CLI::Range(0, 4096));
  app.add_option("values", values, "numbers to quantize (read from stdin when none are given)");
  // "-inf" and "-nan" look like flags to CLI11; a leading space (which strtod skips) makes
  // them positional values. Negative numbers with digits ("-0.5") are recognised already.
  std::vector<std::string> args(argv + 1, argv + argc);
  for (std::string& a : args) {
    std::string low = a;
    std::transform(low.begin(), low.end(), low.begin(), ::tolower);
    if (low == "-inf" || low == "-infinity" || low == "-nan") a = " " + a;
  }
  std::reverse(args.begin(), args.end());  // CLI11 takes a reversed vector
  if (auto status = cli::parse(app, "mase-quant", args)) return *status;
  return cli::run("mase-quant", [&]() -> int {
    set_num_threads(threads);
    const bool reads_values = !table && !speed && shapes.empty();
    // one mode: the others' flags, or values given to a mode that reads none, would be unused
    MASE_CHECK(int(table) + int(speed > 0) + int(!shapes.empty()) <= 1, ConfigError,
               "expected one of --table, --speed and --bytes, got more (run them one at a time)");
    MASE_CHECK(reads_values || values.empty(), ConfigError, "expected no values with ",
               table ? "--table" : "--speed", " (it quantizes none of them; drop them)");
    if (reads_values && values.empty()) {
      if (isatty(0))  // a student who forgot the numbers would otherwise see nothing happen
        std::fprintf(stderr, "mase-quant: reading values from the terminal (end with Ctrl-D; "
                     "or give them after the flags, or pipe them in)\n");
      for (std::string tok; std::cin >> tok;) values.push_back(tok);
    }
    const auto kind = kind_from_name(name);
    // a flag the format does not take is refused, as a config file's key is (quant/format.cpp):
    // --exponent-width on an integer format is a mistake, not a no-op
    if (kind) {
      const std::vector<std::string>& takes = Format::keys(*kind);
      for (const auto& [key, value] : params.items()) {
        if (key == "compat" || std::find(takes.begin(), takes.end(), key) != takes.end()) continue;
        std::string flag = key, list;
        std::replace(flag.begin(), flag.end(), '_', '-');
        for (const std::string& t : takes) list += (list.empty() ? "" : ", ") + t;
        throw ConfigError(cat("--", flag, " is not a parameter of ", name, " (it takes: ",
                              list.empty() ? "nothing" : list, ")"));
      }
    }
    // block formats without --block-size: the values given are one block
    if (kind && is_block(*kind) && !is_mx(*kind) && !params.contains("block_size") && !values.empty())
      params["block_size"] = int(values.size());
    const Format f = make_format(name, params, "--format " + name);
    if (table) {
      print_table(f);
      return 0;
    }
    if (!shapes.empty()) {
      MASE_CHECK(f.kind == Kind::mxint8, ConfigError, "--bytes reports MXINT8 storage (use --format mxint8)");
      BytesReport r;
      for (const std::string& sh : shapes) r.add(parse_shape(sh));
      std::fputs(r.str().c_str(), stdout);
      return 0;
    }
    if (speed) {
      print_speed(f, speed);
      return 0;
    }
    MASE_CHECK(!values.empty(), ConfigError, "no values given (on the command line or stdin)");
    std::vector<float> xs;
    for (const std::string& v : values) xs.push_back(parse_value(v));
    print_values(f, xs, seed);
    return 0;
  });
}
