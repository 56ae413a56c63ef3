#!/usr/bin/env bash
# scripts/gpu/compile.sh — graph::compile on the GPU (issue 20, docs/lab4.md "CUDA graphs"), run
# ON the device machine from the repo root by scripts/gpu_run.sh (or by hand: BIN, OUT, LOGS as
# scripts/gpu/env.sh sets them). Run on an H100 on 2026-11-26: at 5d40734 the capture case
# failed and mase-graph segfaulted (both fixed in 1e98b0d); rerun with the fixes, all passed
# (figures in docs/lab4.md; its duration is not in the run's summary). The timeouts add up to
# 570 s at worst:
#   1. test_graph's CUDA-graph and compile cases with the GPU present
#   2. mase-graph compile --device cuda, bert-small eval at B 1 and B 8 (T 128): eager, compiled
#      (the plan captured as one CUDA graph) and "compiled without cuda_graph", in one process
#   3. the same for a training step (not captured: autograd), B 8
set -uo pipefail
source "$(dirname "$0")/env.sh"
cases() { grep -E '^\[doctest\] test cases' "$1" | tail -1 | sed -e 's/^\[doctest\] //' -e 's/ *| */, /g'; }
timeout 120 "$BIN/test_graph" -tc='*cuda_graph*,compile*' > "$LOGS/compile_tests.log" 2>&1
row "test_graph cuda_graph + compile cases" "exit $?; $(cases "$LOGS/compile_tests.log"); $(grep -c MASE_SKIPPED "$LOGS/compile_tests.log") skipped"
for shape in "--batch 1 --seq 128 --repeat 50" "--batch 8 --seq 128 --repeat 30"; do
  name="compile-small-eval-b$(echo "$shape" | cut -d' ' -f2)"
  timeout 150 "$BIN/mase-graph" compile --model bert-small $shape --device cuda > "$LOGS/$name.txt" 2>&1
  row "mase-graph compile --model bert-small $shape --device cuda" "exit $?; $(grep -E '^  compiled  ' "$LOGS/$name.txt" | tr '|' ' '); $(grep -E 'cuda_graph:' "$LOGS/$name.txt" | cut -c1-90); $(grep -E '^first step' "$LOGS/$name.txt" | cut -c1-70 | tr '\n' ';')"
  { echo; echo '```'; cat "$LOGS/$name.txt"; echo '```'; } >> "$sum"
done
plot=()  # Lab 4.1's figure on the GPU (issue 20's training target), where there is gnuplot
command -v gnuplot > /dev/null && plot=(--plot "$OUT/lab41-gpu-compile-train.svg")
timeout 150 "$BIN/mase-graph" compile --model bert-small --batch 8 --seq 128 --mode train --device cuda --repeat 10 "${plot[@]}" > "$LOGS/compile-small-train.txt" 2>&1
row "mase-graph compile --model bert-small --batch 8 --seq 128 --mode train --device cuda" "exit $?; $(grep -E '^  compiled  ' "$LOGS/compile-small-train.txt" | tr '|' ' '); $(grep -E '^first step' "$LOGS/compile-small-train.txt" | cut -c1-70 | tr '\n' ';')"
{ echo; echo '```'; cat "$LOGS/compile-small-train.txt"; echo '```'; } >> "$sum"
