#!/usr/bin/env bash
# scripts/gpu/compile_train.sh — issue 20's GPU training target (compiled ≥ 1.2× eager for
# bert-small training) through mase-train, ON the device machine from the repo root (by
# scripts/gpu_run.sh, or by hand with BIN, OUT, LOGS, DATA as scripts/gpu/env.sh sets them).
# The compiled plan alone is not captured in training (a graph launch does not record the
# autograd tape); --compile --cuda-graphs captures the whole step around it (forward through
# the plan, backward, clip, AdamW: train/graph_step.h). Four runs of the same 200 steps of
# bert-small at B 8, T 128 (launch-bound: where graphs pay), same seed: eager, --cuda-graphs,
# --compile, --compile --cuda-graphs; each row is mase-train's "done" line (its tok/s is the
# training throughput of the run, warm-up, compile and captures included) and the loss of
# the last logged step. Every run pads its batches to a multiple of 16 tokens (--pad-multiple
# 16, --compile's default since bca55d0): the same batches for all four, and at most 8 lengths
# up to 128 — the 8 shapes --cuda-graphs captures (exact lengths would leave most steps
# uncaptured and make the --cuda-graphs rows measure the fallback). Timeouts add up to 4 × 100 s.
# Not yet run on a GPU (written 2026-11-26 late, when --compile --cuda-graphs stopped being
# refused).
set -uo pipefail
source "$(dirname "$0")/env.sh"
timeout 60 "$BIN/test_graph" -tc='*compiled training plan inside*' > "$LOGS/compile_train_test.log" 2>&1
row "test_graph: a compiled training plan inside the captured step" "exit $?; $(grep -E '^\[doctest\] test cases' "$LOGS/compile_train_test.log" | tail -1); $(grep -c MASE_SKIPPED "$LOGS/compile_train_test.log") skipped"
for flags in "" "--cuda-graphs" "--compile" "--compile --cuda-graphs"; do
  name="compile-train-$(echo "${flags:-eager}" | tr -d ' -')"
  rm -rf "/tmp/$name"
  # shellcheck disable=SC2086  # $flags: zero, one or two flags
  timeout 100 "$BIN/mase-train" --model bert-small --data imdb --data-dir "$DATA" --device cuda \
    --batch-size 8 --max-len 128 --max-steps 200 --train-subset 1600 --test-subset 64 \
    --log-every 50 --seed 1 --pad-multiple 16 --cache-dir /tmp/mase-cache --out "/tmp/$name" \
    $flags \
    > "$LOGS/$name.log" 2>&1
  row "mase-train bert-small B 8 T 128 (padded to 16), 200 steps, ${flags:-eager}" \
      "exit $?; $(grep -E '^done' "$LOGS/$name.log" | head -1 | cut -c1-120); last logged step: $(grep -E '^step' "$LOGS/$name.log" | tail -1 | grep -oE ' loss [0-9.]+')"
done
