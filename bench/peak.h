// bench/peak.h — the arithmetic ceilings of this CPU: one instruction on registers only,
// issued back to back on every thread, no memory. ladder/fma_peak (fp32 FMA, the GEMMs'
// ceiling) and int8/vnni_peak (vpdpbusd, the int8 GEMMs') time these.
//
// Why inline asm. Written with intrinsics over an array of accumulators, GCC 12 interchanged
// the loops (each accumulator through all iterations in turn: a dependent chain, latency-bound)
// or copied and stored the accumulators around every vpdpbusd: the "peak" came out a quarter
// to a half of what the instruction does, below what sgemm reached on the same machine. The
// loops in peak.cpp name the registers themselves: 24 independent accumulators, enough to
// hide a 4–5 cycle latency on two ports.
#pragma once
#include <cstdint>

#include <benchmark/benchmark.h>

namespace mase::bench {

enum class PeakOp { fma_avx512, fma_avx2, vnni_avx512 };

// Runs `iters` iterations of the op's loop on `threads` std::threads at once; returns the
// operations per second, counting a multiply-add as 2 (16 lanes per FMA zmm, 8 per ymm, 64
// per vpdpbusd zmm). The caller checks that the CPU has the instructions.
double peak_ops_per_s(PeakOp op, int threads, int64_t iters);

// The body of a peak benchmark (register with Timing::manual): each iteration runs the loop on
// num_threads() threads; the "flops" counter is the last iteration's rate.
void time_peak(benchmark::State& st, PeakOp op);

}  // namespace mase::bench
