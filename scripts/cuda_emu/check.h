// scripts/cuda_emu/check.h — the failure counter and tolerance check shared by the emulator's
// check programs (attn_check.cpp, cols_check.cpp, rows_check.cpp): a mismatch prints its first
// 30 lines and counts; each part reports the count and main's exit status says whether any was
// found.
#pragma once
#include <cmath>
#include <cstdio>
#include <string>

namespace {

int failures = 0;

// |got − want| ≤ atol + rtol·|want|; an infinite want must be matched exactly.
void expect_close(const std::string& what, double got, double want, double atol, double rtol,
                  long idx) {
  const bool ok =
      std::isinf(want) ? got == want : std::abs(got - want) <= atol + rtol * std::abs(want);
  if (ok) return;
  if (failures < 30)
    std::printf("FAIL %s [%ld]: got %.9g, want %.9g\n", what.c_str(), idx, got, want);
  ++failures;
}

}  // namespace
