// bench/common.cpp — registration, baselines and validation helpers (see common.h).
#include "bench/common.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "runtime/parallel.h"
#include "runtime/random.h"

namespace mase::bench {
namespace {
std::map<std::string, Relation>& relations() {
  static std::map<std::string, Relation> r;
  return r;
}
}  // namespace

benchmark::internal::Benchmark* add(const std::string& name, Body body) {
  return benchmark::RegisterBenchmark(name.c_str(), std::move(body))
      ->UseRealTime()
      ->Unit(benchmark::kMillisecond);
}

void relative_to(const std::string& name, const std::string& baseline, const std::string& counter) {
  relations()[name] = Relation{baseline, counter};
}

const Relation* relation_of(const std::string& name) {
  auto it = relations().find(name);
  return it == relations().end() ? nullptr : &it->second;
}

std::string memcpy_baseline(const std::string& suite, int64_t bytes) {
  static std::set<std::string> registered;
  // whole MiB, so that kernels whose traffic differs by a few output bytes (sum over rows or
  // over columns) share one yardstick; 1 MiB is under 5% of the tensors compared to it
  const int64_t mib = std::max<int64_t>(1, (bytes + (1 << 19)) >> 20);
  std::string name = cat(suite, "/memcpy/", mib, "MiB");
  if (!registered.insert(name).second) return name;
  // memcpy reads n bytes and writes n: 2n bytes of traffic, the same as the kernel's
  const int64_t n = (mib << 20) / 2;
  add(name, [n, name](benchmark::State& st) {
    Tensor src = Tensor::full({n}, 7, DType::u8);  // written, so no page is a shared zero page
    Tensor dst = Tensor::zeros({n}, DType::u8);
    const auto* s = static_cast<const char*>(src.raw_data());
    auto* d = static_cast<char*>(dst.raw_data());
    // the same thread pool and chunking as the kernels: a fair yardstick for N threads
    const int64_t grain = kGrainElems * 4;  // bytes, = kGrainElems floats
    auto copy = [&] {
      parallel_for(0, n, grain,
                   [&](int64_t lo, int64_t hi) { std::memcpy(d + lo, s + lo, hi - lo); });
    };
    copy();
    if (!validate_once(st, name, [&] {
          return std::memcmp(d, s, n) == 0 ? "" : std::string("the copy differs from its source");
        }))
      return;
    for (auto _ : st) {
      copy();
      benchmark::ClobberMemory();
    }
    set_bytes(st, 2.0 * static_cast<double>(n));
  });
  return name;
}

bool validate_once(benchmark::State& st, const std::string& name,
                   const std::function<std::string()>& check) {
  static std::mutex mu;
  static std::map<std::string, std::string> verdicts;  // name -> "" (ok) or the error
  std::lock_guard lock(mu);
  auto it = verdicts.find(name);
  if (it == verdicts.end()) it = verdicts.emplace(name, check()).first;
  if (it->second.empty()) return true;
  st.SkipWithError(("validation failed: " + it->second).c_str());
  return false;
}

std::string compare(const Tensor& got, const std::vector<double>& want, double atol, double rtol) {
  std::vector<double> g = got.to_vector<double>();
  if (g.size() != want.size()) {
    std::ostringstream os;
    os << "expected " << want.size() << " elements, got " << g.size() << " " << got.shape();
    return os.str();
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (!(std::abs(g[i] - want[i]) <= atol + rtol * std::abs(want[i]))) {  // NaN fails too
      std::ostringstream os;
      os.precision(9);
      os << "element " << i << " of " << got.shape() << " is " << g[i] << ", expected " << want[i];
      return os.str();
    }
  }
  return "";
}

Tensor uniform_tensor(const Shape& shape, uint64_t seed, double lo, double hi) {
  Tensor t = Tensor::empty(shape);
  Generator gen(seed);
  uniform_(t, lo, hi, gen);
  return t;
}

Tensor normal_tensor(const Shape& shape, uint64_t seed) {
  Tensor t = Tensor::empty(shape);
  Generator gen(seed);
  normal_(t, 0.0, 1.0, gen);
  return t;
}

std::string shape_name(const Shape& shape) {
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

}  // namespace mase::bench
