#!/usr/bin/env bash
# scripts/gpu/search_scale.sh — issue 24's scaling target on the device machine's CPU (16
# cores; the GPU is not used): a 16-trial Lab 2 study with 1 worker, then with 4 workers, each
# worker with its own 2 cores (--threads 2), the same sampler and seed so that both runs train
# the same 16 architectures. The developers' machines have 2 cores, where 4 CPU-bound workers
# cannot show the ≥ 3.5× of the issue (docs/scaling.md, "Speed-up of 4 workers"). Run ON the
# device machine from the repo root by scripts/gpu_run.sh (scripts/gpu_pack.sh packs
# mase-search), or by hand with BIN, OUT, LOGS, DATA as scripts/gpu/env.sh sets them.
# Timeouts add up to 540 s (the device tool stops a call at 600); expected 2-4 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # BIN OUT LOGS DATA, row, the libraries
[ -x "$BIN/mase-search" ] || { row "search scaling" "skipped: no mase-search in $BIN (GPU_PACK_EXTRA)"; exit 0; }
TRIALS="${TRIALS:-16}"
# (--trials and --max-steps are given per run: CLI11 refuses an option given twice)
common=(--sampler random --seed 3 --train-subset 256
        --test-subset 128 --batch-size 16 --max-len 64 --threads 2 --data-dir "$DATA"
        --cache-dir /tmp/mase-cache)
# warm-up: the tokenizer and the token cache are built once (in --cache-dir), outside the timing
rm -rf /tmp/search-scale-warm
timeout 60 "$BIN/mase-search" "${common[@]}" --trials 1 --max-steps 1 --study warm \
  --dir /tmp/search-scale-warm > "$LOGS/search-scale-warm.log" 2>&1 ||
  row "search scaling warm-up" "exit $? (see $LOGS/search-scale-warm.log)"
declare -A wall
for w in 1 4; do
  dir="/tmp/search-scale-w$w"
  rm -rf "$dir"
  t0=$(date +%s.%N)
  timeout 240 "$BIN/mase-search" "${common[@]}" --trials "$TRIALS" --max-steps 8 --workers "$w" \
    --study "scale-w$w" --dir "$dir" \
    > "$LOGS/search-scale-w$w.log" 2>&1
  rc=$?
  wall[$w]=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
  row "mase-search $TRIALS trials, --workers $w --threads 2 ($(nproc) cores)" \
      "exit $rc; ${wall[$w]} s; $(tail -n 2 "$LOGS/search-scale-w$w.log" | tr '\n' ' ' | cut -c1-160)"
done
row "4 workers vs 1 ($TRIALS trials, each worker 2 cores)" \
    "speed-up $(awk -v a="${wall[1]}" -v b="${wall[4]}" 'BEGIN { printf "%.2f", a / b }')x (target >= 3.5x)"
