// runtime/cpu_features.h — what this CPU can run, asked of the CPU itself (CPUID) and of the OS.
//
// The build targets x86-64-v3 (AVX2 + FMA: CMakeLists.txt); anything beyond it is chosen at
// run time from these flags, and every such path has a portable fallback. A feature counts
// only when the OS saves its registers on a context switch (XGETBV: the AVX and AVX-512 state
// bits of XCR0) and, for AMX, when Linux has granted this process the tile data state
// (arch_prctl ARCH_REQ_XCOMP_PERM, which cpu_features() asks for once): a CPUID bit alone does
// not make an instruction safe to execute.
//
//   cpu_features().avx512_bf16     // use the bf16 dot product instructions?
//   isa_summary()  // "AMD EPYC 7B13 64-Core Processor: AVX2 FMA F16C (no AVX-512,
//                  //  AVX512-BF16, AVX512-VNNI, AVX-VNNI, AMX-BF16, AMX-INT8)"
//
// mase-train and mase-bench print the summary, so every figure names the CPU it came from.
// Read next: runtime/cpu/blas.h (which OpenBLAS kernels the CPU gets).
#pragma once
#include <string>

namespace mase {

struct CpuFeatures {
  std::string brand;  // the processor brand string, e.g. "AMD EPYC 7B13 64-Core Processor"
  bool avx2 = false, fma = false, f16c = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false;  // "AVX-512"
  bool avx512_bf16 = false;  // vdpbf16ps: bf16 pairs dotted into fp32
  bool avx512_vnni = false;  // vpdpbusd on 512-bit registers: u8·s8 dotted into int32
  bool avx_vnni = false;     // the same on 256-bit registers (VEX encoded)
  bool amx_tile = false, amx_bf16 = false, amx_int8 = false;  // tiles, with the OS's permission
  // MASE_MAX_CPU_ISA (below): the level the flags were capped at, "" when not capped
  std::string capped;
  bool avx512() const { return avx512f && avx512bw && avx512dq && avx512vl; }
};

// Detected once (thread-safe), then cached. The environment variable MASE_MAX_CPU_ISA caps
// what is reported, as oneDNN's ONEDNN_MAX_CPU_ISA does, so that one machine can run (and
// measure) the paths of a smaller one:
//   MASE_MAX_CPU_ISA=avx2     x86-64-v3 only (AVX2, FMA, F16C): an AMD Zen 3's paths
//   MASE_MAX_CPU_ISA=avx512   also AVX-512 and AVX512-VNNI, nothing newer: a Cascade Lake's
// Our kernels, OpenBLAS's core type (runtime/cpu/blas.cpp) and oneDNN's ISA
// (runtime/cpu/onednn_gemm.cpp) all follow the capped flags. Other values are ignored (the
// summary says so). Caches, core count and clock stay the big machine's, so a capped run
// shows which code an AVX2 machine runs, not how fast that machine runs it.

const CpuFeatures& cpu_features();
// One line: the brand, the extensions present beyond x86-64, and the notable ones absent.
std::string isa_summary();

}  // namespace mase
