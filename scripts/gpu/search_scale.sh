#!/usr/bin/env bash
# scripts/gpu/search_scale.sh — issue 24's scaling target on the device machine's CPU (16
# cores; the GPU is not used): 16-trial studies with 1 worker, then with 4 workers, each worker
# with its own 2 cores (--threads 2), the same sampler and seed so that both runs train the
# same 16 models. Two studies:
#   uniform  Lab 2.1's space held to one size (4 layers, hidden 256, FFN 1024; the heads vary),
#            so every trial costs the same: what the workers and the shared storage cost
#   arch     Lab 2's whole space (1 to 13 s a trial on a Zen 4 at the same steps): the study
#            ends when its longest trials do
# Each 4-worker run prints its "workers" line (search/worker_usage.h: busy %, idle at the start
# and the end), copied into its row; the speed-up row adds how much longer each trial took
# beside the others (shared caches, memory bandwidth, clocks) and the speed-up the trials' own
# lengths allow (the 1-worker durations dealt in trial order to 4 workers): speed-up ≈
# 4 × busy ÷ that slowdown. The developers' machines have 2 cores, where 4 CPU-bound
# workers cannot show the ≥ 3.5× of the issue (docs/scaling.md, "Speed-up of 4 workers"; 2
# workers there: 1.96× on the uniform study, 1.78× on arch). Run ON the device machine from
# the repo root by scripts/gpu_run.sh (scripts/gpu_pack.sh packs mase-search), or by hand with
# BIN, OUT, LOGS, DATA as scripts/gpu/env.sh sets them (TRIALS, WORKERS, THREADS: the sizes;
# docs/scaling.md's 2-core figures: TRIALS=16 WORKERS=2 THREADS=1).
# Timeouts add up to 540 s (the device tool stops a call at 600); expected 2-3 minutes.
set -uo pipefail
cd "$(dirname "$0")/../.."
source scripts/gpu/env.sh  # BIN OUT LOGS DATA, row, the libraries
[ -x "$BIN/mase-search" ] || { row "search scaling" "skipped: no mase-search in $BIN (GPU_PACK_EXTRA)"; exit 0; }
TRIALS="${TRIALS:-16}" WORKERS="${WORKERS:-4}" THREADS="${THREADS:-2}"
# (--trials and --max-steps are given per run: CLI11 refuses an option given twice)
common=(--seed 3 --train-subset 256 --test-subset 128 --batch-size 16 --max-len 64
        --threads "$THREADS" --data-dir "$DATA" --cache-dir /tmp/mase-cache)
uniform=(tutorial --samplers random --num-layers 4 --hidden-sizes 256 --intermediate-sizes 1024
         --num-heads 2,4,8,16 --linear-choice none)
arch=(--sampler random)
# warm-up: the tokenizer and the token cache are built once (in --cache-dir), outside the timing
rm -rf /tmp/search-scale-warm
timeout 60 "$BIN/mase-search" "${arch[@]}" "${common[@]}" --trials 1 --max-steps 1 --study warm \
  --dir /tmp/search-scale-warm > "$LOGS/search-scale-warm.log" 2>&1 ||
  row "search scaling warm-up" "exit $? (see $LOGS/search-scale-warm.log)"

# The 1-worker run's trials, from its study (to the microsecond): their summed durations, and
# the speed-up $WORKERS workers could reach if every trial ran as fast as alone: the durations
# dealt in trial order to the first free worker, as the workers claim them. Prints "SUM BOUND".
alone() {
  python3 - "$1" "$WORKERS" <<'EOF' 2>/dev/null || echo "? ?"
import heapq, sqlite3, sys
from datetime import datetime
db, w = sys.argv[1], int(sys.argv[2])
rows = sqlite3.connect(db).execute(
    "SELECT datetime_start, datetime_complete FROM trials WHERE state = 'COMPLETE' ORDER BY number")
t = lambda s: datetime.fromisoformat(s).timestamp()
d = [t(b) - t(a) for a, b in rows]
free = [0.0] * w
for x in d:
    heapq.heappush(free, heapq.heappop(free) + x)
print(f"{sum(d):.1f} {sum(d) / max(free):.2f}")
EOF
}

for study in uniform arch; do
  declare -n args="$study"
  declare -A wall=()
  for w in 1 "$WORKERS"; do
    dir="/tmp/search-scale-$study-w$w"
    rm -rf "$dir"
    t0=$(date +%s.%N)
    timeout 120 "$BIN/mase-search" "${args[@]}" "${common[@]}" --trials "$TRIALS" --max-steps 8 \
      --workers "$w" --study "scale-w$w" --dir "$dir" > "$LOGS/search-scale-$study-w$w.log" 2>&1
    rc=$?
    wall[$w]=$(awk -v a="$(date +%s.%N)" -v b="$t0" 'BEGIN { printf "%.1f", a - b }')
    usage=$(grep -m1 '^workers ' "$LOGS/search-scale-$study-w$w.log" | cut -c11-)
    row "mase-search ($study) $TRIALS trials, --workers $w --threads $THREADS ($(nproc) cores)" \
        "exit $rc; ${wall[$w]} s${usage:+; $usage}"
  done
  read -r sum1 bound <<< "$(alone "$(ls /tmp/search-scale-$study-w1/*.db 2>/dev/null | head -1)")"
  sumw=$(grep -m1 '^workers ' "$LOGS/search-scale-$study-w$WORKERS.log" |
         sed -n 's/.*(\([0-9.]*\) s of trials).*/\1/p')
  target=""; [ "$WORKERS" = 4 ] && target=" (target >= 3.5x)"
  ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b + 0 > 0) printf "%.2f", a / b; else printf "?" }'; }
  row "$WORKERS workers vs 1 ($study, $TRIALS trials, each worker --threads $THREADS)" \
      "speed-up $(ratio "${wall[1]}" "${wall[$WORKERS]}")x$target; \
each trial $(ratio "${sumw:-0}" "$sum1")x as long as alone (${sumw:-?} s against $sum1 s); \
the trials' lengths allow ${bound}x"
  unset -n args
done
