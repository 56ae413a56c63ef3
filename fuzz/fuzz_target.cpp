// fuzz/fuzz_target.cpp — one libFuzzer target per entry of fuzz/targets.h: compiled once per
// target with -DMASE_FUZZ_TARGET="<name>" (fuzz/CMakeLists.txt makes build-san/bin/fuzz_<name>).
// A mase::Error is the expected answer to a bad file; anything else is a crash. Run them with
// scripts/fuzz.sh.
#include "fuzz/targets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  (void)mase::fuzz::run(MASE_FUZZ_TARGET, std::string_view(reinterpret_cast<const char*>(data), size));
  return 0;
}
