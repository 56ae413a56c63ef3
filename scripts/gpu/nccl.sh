#!/usr/bin/env bash
# scripts/gpu/nccl.sh — issue 24's GPU check (docs/scaling.md, "NCCL"), ON the device machine
# from the repo root (run by scripts/gpu_run.sh, or by hand with BIN, OUT, LOGS, DATA as
# scripts/gpu/env.sh sets them). Run on an H100 on 2026-11-26 (5d40734): all passed, losses
# identical (docs/scaling.md; its duration is not in the run's summary). Timeouts add up to
# 300 s at worst:
#   1. test_train's data-parallel cases with the GPU present (NCCL at world size 1)
#   2. mase-train bert-tiny --device cuda, 30 steps, --dist none and --dist nccl: the losses
#      must be identical (an average over one rank is the value itself), and the all-reduce
#      seconds of the nccl run
set -uo pipefail
source "$(dirname "$0")/env.sh"
cases() { grep -E '^\[doctest\] test cases' "$1" | tail -1 | sed -e 's/^\[doctest\] //' -e 's/ *| */, /g'; }
libdir=$(dirname "$(ldconfig -p 2>/dev/null | awk '/libcublas\.so/ { print $NF; exit }')")
row "libnccl.so next to cuBLAS ($libdir)" "$(ls "$libdir"/libnccl.so* 2>/dev/null | head -1 || echo missing)"
timeout 60 "$BIN/test_train" -tc='data parallel*' > "$LOGS/nccl_tests.log" 2>&1
row "test_train data parallel cases (NCCL at world size 1)" "exit $?; $(cases "$LOGS/nccl_tests.log"); $(grep -c MASE_SKIPPED "$LOGS/nccl_tests.log") skipped"
for d in none nccl; do
  rm -rf "/tmp/nccl-$d"
  timeout 120 "$BIN/mase-train" --model bert-tiny --data imdb --data-dir "$DATA" --device cuda \
    --dist "$d" --cache-dir /tmp/mase-cache --max-steps 30 --log-every 1 --out "/tmp/nccl-$d" \
    > "$LOGS/nccl-train-$d.log" 2>&1
  row "mase-train bert-tiny --device cuda --dist $d, 30 steps" "exit $?; $(grep -E '^done' "$LOGS/nccl-train-$d.log" | head -1)"
done
# (two failed runs log no loss at all: empty is not "identical")
l_none=$(grep -o '"loss":[^,]*' /tmp/nccl-none/train_log.jsonl 2>/dev/null)
l_nccl=$(grep -o '"loss":[^,]*' /tmp/nccl-nccl/train_log.jsonl 2>/dev/null)
if [ -z "$l_none" ] || [ -z "$l_nccl" ]; then
  row "--dist nccl (world 1) vs none: 30 losses" "n/a: a run logged no loss (see logs)"
elif [ "$l_none" = "$l_nccl" ]; then
  row "--dist nccl (world 1) vs none: 30 losses" "identical ($(grep -c . <<< "$l_none") logged)"
else
  row "--dist nccl (world 1) vs none: 30 losses" "DIFFER"
fi
row "all-reduce seconds over 30 steps (final.json)" "$(grep -o '"allreduce_s":[^,}]*' /tmp/nccl-nccl/final.json 2>/dev/null || echo n/a)"
