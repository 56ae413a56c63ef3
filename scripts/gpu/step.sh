#!/usr/bin/env bash
# scripts/gpu/step.sh — issue 23's GPU check, ON the GPU machine, from the repo root (run by the
# lead's scripts/gpu_run.sh): the CPU == CUDA cases of the training step's kernels, its
# memory-bound kernels one by one (gpu-fused) beside PyTorch's (torch_gpu.py --only fused), the
# gpu-step profile of bert-tiny/small/base (variants before | fp32 | tf32 | bf16, graphs on and
# off) and PyTorch's same steps (fp32, tf32, bf16 autocast) on the same GPU, and two
# mase-train --cuda-graphs --deterministic runs. Each step under `timeout` (their sum is ~8
# minutes, the worst case); run on an H100 on 2026-11-26 (5d40734): 72 s, every step passed
# (figures in docs/performance.md, "the training step profiled").
#
#   BIN=.dev/bin OUT=/tmp/out LOGS=/tmp/logs bash scripts/gpu/step.sh
# env: BIN   folder with test_runtime, test_autograd, test_train, mase-bench (required)
#      OUT   where summary.md gets one "| what | result |" row per step, and gpu-step.md the
#            profile tables (created if missing)
#      LOGS  where every step's full output goes
#      DATA  a small IMDb (as .dev/data) for the two mase-train runs; skipped without it
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # BIN OUT LOGS DATA, row, the libraries
t_start=$SECONDS

# 1. CPU == CUDA: the new kernels and the step (they skip, visibly, only without a GPU)
cases() {  # name binary filter
  local t0=$SECONDS
  timeout 90 "$BIN/$2" -tc="$3" > "$LOGS/step-$1.log" 2>&1
  local rc=$?
  row "step tests: $1 ($2)" "exit $rc; $(grep -E '^\[doctest\] test cases' "$LOGS/step-$1.log" | tail -1 | tr '|' '/'); $(grep -c MASE_SKIPPED "$LOGS/step-$1.log") skipped; $((SECONDS - t0)) s"
}
cases plans test_runtime 'profiler*,batch_grid*,plan_multi_tensor*'
cases matmul test_autograd 'matmul batched*,cross_entropy: CPU == CUDA,profiler hooks*,matmul*CUDA*'
cases train test_train 'gpu step*,graph step*,train_step*,AdamW: CPU == CUDA,clip_grad_norm: CPU == CUDA'

# 1b. the step's memory-bound kernels one by one against the copy (bench/bench_gpu_fused.cpp):
#     LayerNorm, bias gradients, bias + GELU, embedding gradient, AdamW
t0=$SECONDS
plot=()
command -v gnuplot > /dev/null && plot=(--plot "$OUT/gpu-fused.svg")
timeout 120 "$BIN/mase-bench" --suite gpu-fused "${plot[@]}" > "$LOGS/gpu-fused.txt" 2>&1
row "mase-bench --suite gpu-fused" "exit $?; $((SECONDS - t0)) s; $(grep -E '^gpu-fused/' "$LOGS/gpu-fused.txt" | sed -E 's/ +/ /g' | awk '{for (i=1;i<=NF;i++) if ($i ~ /^vs_copy=/) v=$i; print $1, v}' | sed 's|/manual_time||' | tr '\n' ';')"
{ echo; echo '```'; grep -E '^gpu-fused/|Benchmark|---' "$LOGS/gpu-fused.txt" | cut -c1-200; echo '```'; } >> "$sum"
# ... and PyTorch's eager kernels at the same shapes (bench/torch_gpu.py --only fused): each
# row's vs_copy beside mase's says which of the step's kernels loses to PyTorch's, and by how much
t0=$SECONDS
timeout 90 python3 -u bench/torch_gpu.py --only fused > "$LOGS/torch_gpu_fused.txt" 2>&1
row "PyTorch's LayerNorm, bias + GELU, bias and embedding grads, AdamW (torch_gpu.py)" \
  "exit $?; $((SECONDS - t0)) s"
{ echo; echo '```'; tail -n 24 "$LOGS/torch_gpu_fused.txt"; echo '```'; } >> "$sum"

# 2. the gpu-step profile: per model, variants before | fp32 | tf32 | bf16, tf32 and bf16 with
#    the attention on the CUDA cores (*-fma-attn: what the tensor-core attention of --precision
#    tf32/bf16 buys), and three with CUDA graphs (bench/bench_gpu_step.cpp)
prof="$OUT/gpu-step.md"
echo "# gpu-step profile, $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || echo ?)" > "$prof"
bench() {  # label filter timeout
  local t0=$SECONDS
  MASE_PROFILE_OUT="$prof" timeout "$3" "$BIN/mase-bench" --suite gpu-step \
    --benchmark_filter="$2" --benchmark_format=json > "$LOGS/gpu-step-$1.json" 2> "$LOGS/gpu-step-$1.err"
  local rc=$?
  python3 - "$LOGS/gpu-step-$1.json" "$sum" 2>> "$LOGS/gpu-step-$1.err" <<'PY' || row "gpu-step $1" "exit $rc; no JSON (see $LOGS/gpu-step-$1.err)"
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
                  f"host {g('host_ms'):.2f} ms, {g('syncs'):.0f} syncs, {g('os_allocs'):.0f} cudaMalloc/step"
                  + (f", {g('kernels'):.0f} kernels" if 'kernels' in b else "")
                  + (f", captured step {g('capture_ms'):.0f} ms" if 'capture_ms' in b else "") + " |\n")
PY
  echo "<!-- gpu-step $1: exit $rc, $((SECONDS - t0)) s -->" >> "$prof"
}
bench small 'gpu-step/bert-(tiny|small)/' 120
bench base 'gpu-step/bert-base/(fp32|tf32|bf16|bf16-fma-attn|bf16-graphs)/' 100
# the bf16 experiment (cuda/matmul_bf16.cu): cuBLAS rounds the fp32 inputs itself, no
# conversion kernels; its test first, then the same bf16 steps
MASE_BF16_GEMM=fast timeout 60 "$BIN/test_autograd" -tc='matmul batched: bf16*' > "$LOGS/step-bf16-fast.log" 2>&1
row "MASE_BF16_GEMM=fast: bf16 GEMMs on CUDA == CPU (test_autograd)" "exit $?; $(grep -E '^\[doctest\] test cases' "$LOGS/step-bf16-fast.log" | tail -1 | tr '|' '/')"
row "MASE_BF16_GEMM=fast: the next rows" "bf16 steps with cuBLAS's own rounding (CUBLAS_COMPUTE_32F_FAST_16BF)"
MASE_BF16_GEMM=fast bench bf16-fast 'gpu-step/bert-(small|base)/bf16/' 60

# 3. PyTorch's same steps on the same GPU (HF BertForSequenceClassification, B 32, T 256)
for p in fp32 tf32 bf16; do  # bf16: torch.autocast(cuda, bfloat16)
  t0=$SECONDS
  models="bert-tiny bert-small bert-base"
  [ "$p" = bf16 ] && models="bert-small bert-base"
  timeout 100 python3 bench/torch_e2e.py --device cuda --precision "$p" --train-only \
    --models $models --steps 5 > "$LOGS/torch-$p.txt" 2>&1
  rc=$?
  row "PyTorch $p (bench/torch_e2e.py --device cuda)" "exit $rc; $(grep -E '/train' "$LOGS/torch-$p.txt" | awk '{printf "%s %s ms; ", $1, $2}') $((SECONDS - t0)) s"
done
# 3b. issue 23's other bf16 bar: torch.compile of the same autocast step (first call reported
#     apart by torch_e2e.py); compiling takes a minute or two, so only with 200 s of the call left
left=$(( ${MASE_RUN_DEADLINE:-$(( $(date +%s) + 600 ))} - $(date +%s) ))
if ((left > 200)); then
  t0=$SECONDS
  timeout 150 python3 bench/torch_e2e.py --device cuda --precision bf16 --train-only --compile \
    --models bert-small bert-base --steps 5 > "$LOGS/torch-bf16-compile.txt" 2>&1
  row "PyTorch bf16 + torch.compile (bench/torch_e2e.py --device cuda --compile)" \
      "exit $?; $(grep -E '/train|first' "$LOGS/torch-bf16-compile.txt" | tr '\n' ';' |
                  cut -c1-300) $((SECONDS - t0)) s"
else
  row "PyTorch bf16 + torch.compile" "skipped: $left s of the call left (needs 200)"
fi
# 4. mase-train end to end with --cuda-graphs (needs DATA; the token cache of gpu_run.sh's
#    train stage makes it quick), twice with --deterministic: the two loss logs must be equal
if [ -n "${DATA:-}" ] && [ -d "$DATA" ]; then
  for r in 1 2; do
    t0=$SECONDS
    rm -rf "/tmp/run-graphs-$r"
    prof_flag=""
    [ "$r" = 1 ] && prof_flag="--profile 5"  # stamps change no number: the runs stay comparable
    timeout 60 "$BIN/mase-train" --model bert-tiny --data imdb --data-dir "$DATA" --device cuda \
      --cuda-graphs --deterministic --bucketing off --max-steps 30 --log-every 1 --test-subset 200 \
      $prof_flag --cache-dir /tmp/mase-cache --out "/tmp/run-graphs-$r" > "$LOGS/train-graphs-$r.log" 2>&1
    row "mase-train bert-tiny --cuda-graphs --deterministic, run $r (30 steps)" "exit $?; $(grep -E '^done' "$LOGS/train-graphs-$r.log" | head -1) $((SECONDS - t0)) s"
  done
  l1=$(grep -o '"loss":[^,]*' /tmp/run-graphs-1/train_log.jsonl 2>/dev/null)
  l2=$(grep -o '"loss":[^,]*' /tmp/run-graphs-2/train_log.jsonl 2>/dev/null)
  if [ -z "$l1" ] || [ -z "$l2" ]; then verdict="n/a: a run logged no loss (see logs)"  # not "identical"
  elif [ "$l1" = "$l2" ]; then verdict="identical ($(grep -c . <<< "$l1") losses)"
  else verdict="DIFFER"; fi
  row "two --deterministic runs: loss logs" "$verdict ($(md5sum <<< "$l1" | cut -c1-8) / $(md5sum <<< "$l2" | cut -c1-8))"
  { echo; echo "## mase-train --profile 5 (bert-tiny, CUDA graphs, real batches)"; echo;
    cat /tmp/run-graphs-1/profile.md 2>/dev/null || echo "(no profile.md)"; } >> "$prof"
fi
row "scripts/gpu/step.sh" "done in $((SECONDS - t_start)) s; profile tables in gpu-step.md"
