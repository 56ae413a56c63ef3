// tests/runtime/test_cpu_features.cpp — runtime/cpu_features.h against the kernel's own view
// (/proc/cpuinfo's flags), and the AMX permission where the CPU has AMX.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "helpers.h"
#include "runtime/cpu/blas.h"
#include "runtime/cpu_features.h"
#include "runtime/kernels/bf16.h"
#include "runtime/kernels/int8_gemm.h"
#include "runtime/kernels/matmul.h"
#include "runtime/kernels/sgemm_packed.h"

using namespace mase;

namespace {

// The "flags" line of the first processor in /proc/cpuinfo (empty when there is none).
std::set<std::string> proc_flags() {
  std::ifstream in("/proc/cpuinfo");
  for (std::string line; std::getline(in, line);) {
    if (line.rfind("flags", 0) != 0) continue;
    std::istringstream words(line.substr(line.find(':') + 1));
    std::set<std::string> out;
    for (std::string w; words >> w;) out.insert(w);
    return out;
  }
  return {};
}

}  // namespace

TEST_CASE("cpu features: CPUID agrees with the kernel's /proc/cpuinfo") {
  const std::set<std::string> flags = proc_flags();
  if (flags.empty()) return test::skip("/proc/cpuinfo has no flags line");
  const CpuFeatures& f = cpu_features();
  if (f.capped == "avx2" || f.capped == "avx512")
    return test::skip("MASE_MAX_CPU_ISA=" + f.capped + " hides some of this CPU's flags");
  auto has = [&](const char* name) { return flags.count(name) > 0; };
  CHECK(f.avx2 == has("avx2"));
  CHECK(f.fma == has("fma"));
  CHECK(f.f16c == has("f16c"));
  CHECK(f.avx512f == has("avx512f"));
  CHECK(f.avx512bw == has("avx512bw"));
  CHECK(f.avx512_bf16 == has("avx512_bf16"));
  CHECK(f.avx512_vnni == has("avx512_vnni"));
  CHECK(f.avx_vnni == has("avx_vnni"));
  // the build's floor: x86-64-v3 code runs only where AVX2 and FMA are there
  CHECK(f.avx2);
  CHECK(f.fma);
  CHECK(!f.brand.empty());
  const std::string s = isa_summary();
  CHECK(s.rfind(f.brand + ": AVX2 FMA", 0) == 0);
  MESSAGE(s);
}

TEST_CASE("cpu features: AMX tiles are usable once Linux grants them") {
  const std::set<std::string> flags = proc_flags();
  if (!flags.count("amx_tile")) return test::skip("this CPU has no AMX (amx_tile)");
  const CpuFeatures& f = cpu_features();
  if (!f.capped.empty())  // the case below checks that a cap turns AMX off
    return test::skip("MASE_MAX_CPU_ISA caps this CPU (AMX off by request)");
  // an emulator (qemu-user -cpu EPYC-Milan in scripts/avx2_emu.sh) answers CPUID for the CPU
  // it pretends to be, while /proc/cpuinfo is still the host kernel's: nothing to compare
  if (f.avx512f != (flags.count("avx512f") > 0))
    return test::skip("CPUID is not the host's CPU (an emulator): /proc/cpuinfo does not apply");
  CHECK(f.amx_tile);  // the permission request succeeded
  CHECK(f.amx_bf16 == (flags.count("amx_bf16") > 0));
  CHECK(f.amx_int8 == (flags.count("amx_int8") > 0));
}

// Run twice by ctest: as every case (no variable: nothing is capped), and as "runtime:
// MASE_MAX_CPU_ISA=avx2 ..." with the variable set (tests/CMakeLists.txt), where an AVX-512
// machine must take an AVX2-only machine's paths in every library.
TEST_CASE("cpu features: MASE_MAX_CPU_ISA=avx2 gives an AVX2 machine's paths everywhere") {
  const char* level = std::getenv("MASE_MAX_CPU_ISA");
  const CpuFeatures& f = cpu_features();
  if (!level || std::string(level) != "avx2") {
    CHECK((level != nullptr || f.capped.empty()));  // no variable, no cap
    return;
  }
  CHECK(f.capped == "avx2");
  CHECK(f.avx2);
  CHECK_FALSE(f.avx512());
  CHECK_FALSE(f.avx512_vnni);
  CHECK_FALSE(f.avx512_bf16);
  CHECK_FALSE(f.avx_vnni);
  CHECK_FALSE(f.amx_tile);
  CHECK(isa_summary().find("[capped at avx2 by MASE_MAX_CPU_ISA]") != std::string::npos);
  CHECK(blas::corename() == "Haswell");               // OpenBLAS's AVX2 kernels
  CHECK(cpu::int8_isa_best() == cpu::Int8Isa::avx2);            // vpmaddubsw, not VNNI or oneDNN's
  CHECK(cpu::f32_isa_best() != cpu::F32Isa::avx512);  // the packed GEMM's AVX2 tile
  CHECK_FALSE(cpu::onednn_bf16_active());
  CHECK_FALSE(cpu::amx_bf16_active());  // our AMX tiles (bf16_amx.cpp) off too
}
