// runtime/cpu/tile_rows.h — a microkernel's row count, from run time to compile time.
//
// A register tile is a fixed-size array of accumulators (MR × 2 vectors), and it stays in
// registers only if MR is a compile-time constant. The last rows of A come in a smaller tile,
// so the kernels are templates over MR and this picks the instance: with_rows<12>(mr, f) calls
// f(std::integral_constant<int, mr>{}) for 1 ≤ mr ≤ 12. Header-only and free of functions with
// external linkage, so the ISA-specific files may include it (runtime/cpu/int8_tile.h).
#pragma once
#include <type_traits>

namespace mase::cpu {

template <int MaxMR, class F>
inline void with_rows(int mr, F&& f) {
  if constexpr (MaxMR > 1) {
    if (mr < MaxMR) return with_rows<MaxMR - 1>(mr, static_cast<F&&>(f));
  }
  f(std::integral_constant<int, MaxMR>{});
}

}  // namespace mase::cpu
