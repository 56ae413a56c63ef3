#!/usr/bin/env bash
# scripts/gpu_run.sh — everything one lent GPU call should do, ON the device machine (prepared
# by scripts/gpu_pack.sh, carried in .dev/): every test binary with the GPU present (the CPU ==
# CUDA cases run instead of being skipped), mase-train --device cuda on a small IMDb, the e2e
# benchmark, and PyTorch's figures for the same steps on the same GPU, side by side; the table
# goes to $OUT/summary.md and the logs to $OUT/logs.tar.gz (the device tool brings $OUT back).
#
#   bash scripts/gpu_run.sh tests     # every test binary, the CPU == CUDA cases   (~3-5 min)
#   bash scripts/gpu_run.sh train     # mase-train --device cuda, bert-tiny and bert-small
#   bash scripts/gpu_run.sh bench     # mase-bench e2e + PyTorch's same steps on the GPU
#   bash scripts/gpu_run.sh compile   # graph::compile on the GPU: CUDA-graph capture, eager vs
#                                     # compiled for bert-small eval and train (~5-8 min)
#   bash scripts/gpu_run.sh all       # the three in one call, when the lease allows
# The device tool stops a command after 600 s, so each stage keeps under ~9 minutes (each
# step has its own timeout); a lease of 30 minutes fits one call per stage plus the start.
set -uo pipefail
stage="${1:-all}"
case "$stage" in tests | train | bench | compile | all) ;; *) echo "gpu_run: unknown stage '$stage' (tests|train|bench|compile|all)"; exit 2 ;; esac
want() { [ "$stage" = all ] || [ "$stage" = "$1" ]; }
cd "$(dirname "$0")/.."
OUT="${OUT:-/tmp/mase-gpu-out}"
mkdir -p "$OUT" /tmp/mase-logs
logs=/tmp/mase-logs
# test fixtures are found by the absolute path compiled in: /work/main/tests/fixtures
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
for x in .dev/lib/*.xz; do [ -f "$x" ] && unxz -f "$x"; done
cublas=$(ldconfig -p | awk '/libcublas\.so/ { print $NF; exit }')
export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
sum="$OUT/summary.md"
{
  echo "# GPU run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
  python3 -c "import torch; print('PyTorch', torch.__version__)" 2>/dev/null
  echo
  echo "| what | result |"
  echo "|---|---|"
} > "$sum"
row() { echo "| $1 | $2 |" >> "$sum"; }
if want tests; then
for t in test_runtime test_autograd test_models test_train test_quant test_graph; do
  timeout 120 ".dev/bin/$t" > "$logs/$t.log" 2>&1
  row "$t (doctest)" "exit $?; $(grep -E '^\[doctest\] test cases' "$logs/$t.log" | tail -1)"
done
timeout 60 .dev/bin/test_autograd -tc='*CUDA*' > "$logs/cpu_cuda.log" 2>&1
row "CPU == CUDA cases of test_autograd" "exit $?; $(grep -c MASE_SKIPPED "$logs/cpu_cuda.log") skipped"
fi
if want train; then
for m in bert-tiny bert-small; do
  timeout 240 .dev/bin/mase-train --model "$m" --data imdb --data-dir .dev/data --device cuda \
    --cache-dir /tmp/mase-cache --out "/tmp/run-$m" > "$logs/train-$m.log" 2>&1
  row "mase-train $m --device cuda (2,000 reviews, 1 epoch)" "exit $?; $(grep -E '^done' "$logs/train-$m.log" | head -1)"
done
fi
if want bench; then
timeout 240 .dev/bin/mase-bench --e2e --benchmark_format=json > "$logs/e2e.json" 2> "$logs/e2e.err"
row "mase-bench --e2e (CPU steps; no CUDA suite yet)" "exit $?"
timeout 240 python3 bench/torch_e2e.py --device cuda --models bert-tiny bert-small --steps 10 \
  > "$logs/torch_cuda.txt" 2>&1
row "PyTorch, same steps on the GPU (bench/torch_e2e.py --device cuda)" "exit $?; see logs"
{ echo; echo '```'; cat "$logs/torch_cuda.txt"; echo '```'; } >> "$sum"
fi
if want compile; then  # graph::compile on the GPU: CUDA-graph capture (docs/lab4.md)
timeout 120 .dev/bin/test_graph -tc='*cuda_graph*,compile*' > "$logs/compile_tests.log" 2>&1
row "test_graph cuda_graph + compile cases" "exit $?; $(grep -E '^\[doctest\] test cases' "$logs/compile_tests.log" | tail -1); $(grep -c MASE_SKIPPED "$logs/compile_tests.log") skipped"
for shape in "--batch 1 --seq 128 --repeat 50" "--batch 8 --seq 128 --repeat 30"; do
  name="compile-small-eval-$(echo $shape | cut -d' ' -f2)"
  timeout 150 .dev/bin/mase-graph compile --model bert-small $shape --device cuda > "$logs/$name.txt" 2>&1
  row "mase-graph compile --model bert-small $shape --device cuda" "exit $?; $(grep -E '^  compiled  ' "$logs/$name.txt"); $(grep -E 'cuda_graph:' "$logs/$name.txt" | cut -c1-90)"
  { echo; echo '```'; cat "$logs/$name.txt"; echo '```'; } >> "$sum"
done
timeout 150 .dev/bin/mase-graph compile --model bert-small --batch 8 --seq 128 --mode train --device cuda --repeat 10 > "$logs/compile-small-train.txt" 2>&1
row "mase-graph compile --model bert-small --batch 8 --seq 128 --mode train --device cuda" "exit $?; $(grep -E '^  compiled  ' "$logs/compile-small-train.txt")"
{ echo; echo '```'; cat "$logs/compile-small-train.txt"; echo '```'; } >> "$sum"
fi
tar -czf "$OUT/logs.tar.gz" -C "$logs" .
cat "$sum"
