#!/usr/bin/env bash
# scripts/gpu/step.sh — issue 23's GPU check, ON the GPU machine, from the repo root (run by the
# lead's scripts/gpu_run.sh): the CPU == CUDA cases of the training step's kernels, the
# gpu-step profile of bert-tiny/small/base (variants before | fp32 | tf32) and PyTorch's same
# steps (fp32, tf32) on the same GPU. Each step under `timeout`; the whole script ~3 minutes.
#
#   BIN=.dev/bin OUT=/tmp/out LOGS=/tmp/logs bash scripts/gpu/step.sh
# env: BIN   folder with test_runtime, test_autograd, test_train, mase-bench (required)
#      OUT   where summary.md gets one "| what | result |" row per step, and gpu-step.md the
#            profile tables (created if missing)
#      LOGS  where every step's full output goes
#      DATA  (unused here: the step benchmark makes its own batch)
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN="${BIN:-.dev/bin}"
OUT="${OUT:-/tmp/mase-gpu-out}"
LOGS="${LOGS:-$OUT/logs}"
mkdir -p "$OUT" "$LOGS"
sum="$OUT/summary.md"
[ -f "$sum" ] || { echo "| what | result |"; echo "|---|---|"; } > "$sum"
row() { echo "| $1 | $2 |" >> "$sum"; }
# as scripts/gpu_run.sh: fixtures by their compiled-in path; the libraries the pack carried
[ -e /work/main ] || { mkdir -p /work && ln -s "$PWD" /work/main; }
cublas=$(ldconfig -p 2>/dev/null | awk '/libcublas\.so/ { print $NF; exit }')
export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
t_start=$SECONDS

# 1. CPU == CUDA: the new kernels and the step (they skip, visibly, only without a GPU)
cases() {  # name binary filter
  local t0=$SECONDS
  timeout 90 "$BIN/$2" -tc="$3" > "$LOGS/step-$1.log" 2>&1
  local rc=$?
  row "step tests: $1 ($2)" "exit $rc; $(grep -E '^\[doctest\] test cases' "$LOGS/step-$1.log" | tail -1); $(grep -c MASE_SKIPPED "$LOGS/step-$1.log") skipped; $((SECONDS - t0)) s"
}
cases plans test_runtime 'profiler*,batch_grid*,plan_multi_tensor*'
cases matmul test_autograd 'matmul batched*,cross_entropy: CPU == CUDA,profiler hooks*,matmul*CUDA*'
cases train test_train 'gpu step*,graph step*,train_step*,AdamW: CPU == CUDA,clip_grad_norm: CPU == CUDA'

# 2. the gpu-step profile: per model, variants before | fp32 | tf32 | fp32-graphs | tf32-graphs
#    (bench/bench_gpu_step.cpp)
prof="$OUT/gpu-step.md"
echo "# gpu-step profile, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)" > "$prof"
bench() {  # label filter timeout
  local t0=$SECONDS
  MASE_PROFILE_OUT="$prof" timeout "$3" "$BIN/mase-bench" --suite gpu-step \
    --benchmark_filter="$2" --benchmark_format=json > "$LOGS/gpu-step-$1.json" 2> "$LOGS/gpu-step-$1.err"
  local rc=$?
  python3 - "$LOGS/gpu-step-$1.json" "$sum" <<'PY' || row "gpu-step $1" "exit $rc; no JSON (see $LOGS/gpu-step-$1.err)"
import json, sys
runs = json.load(open(sys.argv[1]))["benchmarks"]
with open(sys.argv[2], "a") as out:
    for b in runs:
        if b.get("error_occurred"):
            out.write(f"| {b['name']} | ERROR {b.get('error_message', '')} |\n")
            continue
        g = lambda k: b.get(k, float("nan"))
        out.write(f"| {b['name']} | {g('real_time'):.2f} ms/step, {g('tokens_per_s'):.0f} tokens/s, "
                  f"{g('flops') / 1e12:.2f} TFLOP/s; GPU busy {g('busy_ms'):.2f} ms, idle {g('idle_ms'):.2f} ms, "
                  f"host {g('host_ms'):.2f} ms, {g('syncs'):.0f} syncs, {g('os_allocs'):.0f} cudaMalloc/step |\n")
PY
  echo "<!-- gpu-step $1: exit $rc, $((SECONDS - t0)) s -->" >> "$prof"
}
bench small 'gpu-step/bert-(tiny|small)/' 100
bench base 'gpu-step/bert-base/' 80

# 3. PyTorch's same steps on the same GPU (HF BertForSequenceClassification, B 32, T 256)
for p in fp32 tf32; do
  t0=$SECONDS
  timeout 100 python3 bench/torch_e2e.py --device cuda --precision "$p" --train-only \
    --models bert-tiny bert-small bert-base --steps 5 > "$LOGS/torch-$p.txt" 2>&1
  rc=$?
  row "PyTorch $p (bench/torch_e2e.py --device cuda)" "exit $rc; $(grep -E '/train' "$LOGS/torch-$p.txt" | awk '{printf "%s %s ms; ", $1, $2}') $((SECONDS - t0)) s"
done
# 4. mase-train end to end with --cuda-graphs (needs DATA; the token cache of gpu_run.sh's
#    train stage makes it quick), twice with --deterministic: the two loss logs must be equal
if [ -n "${DATA:-}" ] && [ -d "$DATA" ]; then
  for r in 1 2; do
    t0=$SECONDS
    rm -rf "/tmp/run-graphs-$r"
    timeout 60 "$BIN/mase-train" --model bert-tiny --data imdb --data-dir "$DATA" --device cuda \
      --cuda-graphs --deterministic --bucketing off --max-steps 30 --log-every 1 --test-subset 200 \
      --cache-dir /tmp/mase-cache --out "/tmp/run-graphs-$r" > "$LOGS/train-graphs-$r.log" 2>&1
    row "mase-train bert-tiny --cuda-graphs --deterministic, run $r (30 steps)" "exit $?; $(grep -E '^done' "$LOGS/train-graphs-$r.log" | head -1) $((SECONDS - t0)) s"
  done
  l1=$(grep -o '"loss":[^,]*' /tmp/run-graphs-1/train_log.jsonl 2>/dev/null | md5sum | cut -c1-8)
  l2=$(grep -o '"loss":[^,]*' /tmp/run-graphs-2/train_log.jsonl 2>/dev/null | md5sum | cut -c1-8)
  row "two --deterministic runs: loss logs" "$([ "$l1" = "$l2" ] && echo identical || echo DIFFER) ($l1 / $l2)"
fi
row "scripts/gpu/step.sh" "done in $((SECONDS - t_start)) s; profile tables in gpu-step.md"
