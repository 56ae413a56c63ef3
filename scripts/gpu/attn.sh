#!/usr/bin/env bash
# scripts/gpu/attn.sh — the GPU checks of the CUDA softmax and flash attention (issue 22 items
# 1, 2, 5, 6), run ON the device machine from the repo root, by scripts/gpu_run.sh or by hand:
#
#   BIN=.dev/bin OUT=/tmp/out LOGS=/tmp/logs bash scripts/gpu/attn.sh
#
#   1. the CPU == CUDA test cases of test_autograd for softmax and sdpa (doctest -tc filters:
#      tests/autograd/test_softmax_cuda.cpp, test_sdpa_cuda.cpp and the older CUDA cases) ~30 s
#   2. mase-bench --suite gpu-base,gpu-softmax,gpu-sdpa with a short min time:
#      copy bandwidth and cuBLAS, softmax vs the D2D copy, flash SDPA vs the naive
#      composition, the kernel ladder; console table + JSON                           ~60 s
#   3. python3 bench/torch_gpu.py: PyTorch's softmax, SDPA backends and torch.compile at the
#      same shapes, on the same GPU                                                    ~60 s
# Each step runs under `timeout`, appends one row `| what | result |` to $OUT/summary.md and
# writes its full output to $LOGS. About 2-3 minutes; at most 9 (the timeouts: 120 + 240 + 180 s).
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${BIN:-.dev/bin}"
OUT="${OUT:-/tmp/mase-gpu-out}"
LOGS="${LOGS:-/tmp/mase-logs}"
mkdir -p "$OUT" "$LOGS"
sum="$OUT/summary.md"
row() { echo "| $1 | $2 |" >> "$sum"; }
# the shared libraries scripts/gpu_pack.sh carried, and cuBLAS, when not already on the path
if [ -d .dev/lib ] && [[ ":${LD_LIBRARY_PATH:-}:" != *":$PWD/.dev/lib:"* ]]; then
  for x in .dev/lib/*.xz; do [ -f "$x" ] && unxz -f "$x"; done
  cublas=$(ldconfig -p | awk '/libcublas\.so/ { print $NF; exit }')
  export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
fi

# 1. CPU == CUDA cases (each skips visibly, MASE_SKIPPED, if the GPU is not usable)
t0=$SECONDS
cases='softmax CUDA*,sdpa CUDA*,softmax: CPU == CUDA,sdpa: CPU == CUDA'
log="$LOGS/attn_tests.log"
timeout 120 "$BIN/test_autograd" -tc="$cases" > "$log" 2>&1
rc=$?
counts=$(grep -E '^\[doctest\] (test cases|assertions)' "$log" | tr -s ' ' | tr '|\n' '; ')
row "attn: CPU == CUDA cases (softmax, sdpa) of test_autograd" \
  "exit $rc; ${counts}$(grep -c MASE_SKIPPED "$log") skipped; $((SECONDS - t0)) s"

# 2. the GPU suites (those this build has: mase-bench --help lists them)
t0=$SECONDS
suites=$("$BIN/mase-bench" --help 2>/dev/null |
  awk '$1 ~ /^gpu-(base|softmax|sdpa)$/ { print $1 }' | paste -sd, -)
txt="$LOGS/attn_bench.txt"
plot=()  # Lab 4.2's figure on the GPU, where the machine has gnuplot (the JSON has it all anyway)
command -v gnuplot > /dev/null && plot=(--plot "$OUT/lab42-gpu-attention.svg")
timeout 240 stdbuf -oL "$BIN/mase-bench" --suite "${suites:-gpu-base}" --benchmark_min_time=0.05 \
  --benchmark_out="$LOGS/attn_bench.json" --benchmark_out_format=json "${plot[@]}" > "$txt" \
  2> "$LOGS/attn_bench.err"
rc=$?
row "attn: mase-bench --suite $suites" \
  "exit $rc; $(grep -c '^gpu-' "$txt") benchmarks, $(grep -ci 'error' "$txt") with errors; \
$((SECONDS - t0)) s"
{ echo; echo '```'; grep -E '^(gpu-|Benchmark|---)' "$txt" | cut -c1-220; echo '```'; } >> "$sum"

# 3. PyTorch at the same shapes
t0=$SECONDS
timeout 180 python3 -u bench/torch_gpu.py --only softmax,sdpa > "$LOGS/torch_gpu.txt" 2>&1
rc=$?
row "attn: PyTorch softmax / SDPA backends / torch.compile (bench/torch_gpu.py)" \
  "exit $rc; $((SECONDS - t0)) s"
{ echo; echo '```'; tail -n 80 "$LOGS/torch_gpu.txt"; echo '```'; } >> "$sum"
