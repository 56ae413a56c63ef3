// runtime/cpu_features.cpp — CPUID and XGETBV, read once (see cpu_features.h).
#include "runtime/cpu_features.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace mase {
namespace {

bool bit(unsigned reg, int i) { return (reg >> i) & 1u; }

// XCR0: which register states the OS saves (bit 1 SSE, 2 AVX, 5-7 AVX-512, 17-18 AMX tiles).
uint64_t xcr0() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !bit(c, 27)) return 0;  // OSXSAVE: XGETBV allowed
  uint32_t lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (uint64_t(hi) << 32) | lo;
}

// Linux gives a process the AMX tile data state only when asked (kernel 5.16+).
bool request_amx_permission() {
#if defined(__linux__) && defined(SYS_arch_prctl)
  constexpr int kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
#else
  return false;
#endif
}

std::string brand_string() {
  unsigned regs[12] = {};
  unsigned max_ext = __get_cpuid_max(0x80000000u, nullptr);
  if (max_ext < 0x80000004u) return "unknown x86-64 CPU";
  for (unsigned i = 0; i < 3; ++i)
    __get_cpuid(0x80000002u + i, &regs[4 * i], &regs[4 * i + 1], &regs[4 * i + 2], &regs[4 * i + 3]);
  char text[49] = {};
  std::memcpy(text, regs, 48);
  std::string s(text);
  const size_t first = s.find_first_not_of(' '), last = s.find_last_not_of(' ');
  return first == std::string::npos ? "unknown x86-64 CPU" : s.substr(first, last - first + 1);
}

CpuFeatures detect() {
  CpuFeatures f;
  f.brand = brand_string();
  unsigned a, b, c, d;
  const uint64_t xcr = xcr0();
  const bool os_avx = (xcr & 0x6) == 0x6, os_avx512 = os_avx && (xcr & 0xe0) == 0xe0;
  const bool os_amx = (xcr & 0x60000) == 0x60000;
  if (__get_cpuid(1, &a, &b, &c, &d)) {
    f.fma = os_avx && bit(c, 12);
    f.f16c = os_avx && bit(c, 29);
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = os_avx && bit(b, 5);
    f.avx512f = os_avx512 && bit(b, 16);
    f.avx512dq = os_avx512 && bit(b, 17);
    f.avx512bw = os_avx512 && bit(b, 30);
    f.avx512vl = os_avx512 && bit(b, 31);
    f.avx512_vnni = os_avx512 && bit(c, 11);
    const bool amx = os_amx && bit(d, 24);
    f.amx_tile = amx && request_amx_permission();
    f.amx_bf16 = f.amx_tile && bit(d, 22);
    f.amx_int8 = f.amx_tile && bit(d, 25);
  }
  if (__get_cpuid_count(7, 1, &a, &b, &c, &d)) {
    f.avx_vnni = os_avx && bit(a, 4);
    f.avx512_bf16 = os_avx512 && bit(a, 5);
  }
  return f;
}

// MASE_MAX_CPU_ISA (cpu_features.h): clear every flag above the level asked for.
void cap(CpuFeatures& f, const char* level) {
  const std::string l = level;
  if (l != "avx2" && l != "avx512") {
    f.capped = "ignored: MASE_MAX_CPU_ISA=" + l + " (expected avx2 or avx512)";
    return;
  }
  f.capped = l;
  f.amx_tile = f.amx_bf16 = f.amx_int8 = false;
  f.avx512_bf16 = f.avx_vnni = false;
  if (l == "avx2") f.avx512f = f.avx512bw = f.avx512dq = f.avx512vl = f.avx512_vnni = false;
}

}  // namespace

const CpuFeatures& cpu_features() {
  static const CpuFeatures f = [] {  // C++ guarantees one thread-safe initialisation
    CpuFeatures d = detect();
    if (const char* level = std::getenv("MASE_MAX_CPU_ISA"); level && *level) cap(d, level);
    return d;
  }();
  return f;
}

std::string isa_summary() {
  const CpuFeatures& f = cpu_features();
  std::vector<std::pair<const char*, bool>> named = {
      {"AVX2", f.avx2},           {"FMA", f.fma},           {"F16C", f.f16c},
      {"AVX-512", f.avx512()},    {"AVX512-BF16", f.avx512_bf16},
      {"AVX512-VNNI", f.avx512_vnni}, {"AVX-VNNI", f.avx_vnni}, {"AMX-BF16", f.amx_bf16},
      {"AMX-INT8", f.amx_int8}};
  std::string have, lack;  // "AVX2 FMA F16C" and "AVX-512, AMX-BF16"
  for (const auto& [name, on] : named) {
    std::string& list = on ? have : lack;
    list += (list.empty() ? "" : on ? " " : ", ") + std::string(name);
  }
  std::string s = f.brand + ": " + (have.empty() ? "none of the extensions below" : have);
  if (!lack.empty()) s += " (no " + lack + ")";
  if (!f.capped.empty())
    s += f.capped.rfind("ignored", 0) == 0 ? " [" + f.capped + "]"
                                           : " [capped at " + f.capped + " by MASE_MAX_CPU_ISA]";
  return s;
}

}  // namespace mase
