#!/bin/sh
# tests/tools/mase_train_e2e.sh MASE_TRAIN [MASE_GRAPH] — the mase-train executable end to end on
# a made-up IMDb (written here with the shell): train, predict, eval-only, QAT whose saved model
# mase-graph traces, exports and reloads (when MASE_GRAPH is given), then a real SIGINT in the
# middle of a run (exit 130, a checkpoint, the resume hint) and --resume to the end.
# Prints "e2e: ok" when every check passed (ctest matches it).
set -u
bin=$1
graph=${2:-}
dir=$(mktemp -d "${TMPDIR:-/tmp}/mase-train-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "e2e: FAILED: $*"; exit 1; }
# wait_for PATTERN FILE PID: until FILE has a line matching PATTERN (at most 60 s)
wait_for() {
  n=0
  until grep -q "$1" "$2" 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 600 ] && { kill "$3"; fail "never printed '$1': $(tail -n 3 "$2")"; }
    sleep 0.1
  done
}

. "$(dirname "$0")/made_up_imdb.sh"
made_up_imdb "$dir"
printf '{"vocab_size": 25, "hidden_size": 16, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 64}' > "$dir/tiny.json"
# (no --tokenizer: a vocab.txt given to --vocab is WordPiece's, the file decides)
common="--model $dir/tiny.json --data-dir $dir/data --cache-dir $dir/cache --vocab $dir/vocab.txt --max-len 16 --batch-size 8 --lr 1e-2 --warmup 2"

# 1. train: exit 0, the summary and the result
"$bin" $common --epochs 8 --out "$dir/run" > "$dir/train.log" 2>&1 || fail "training exited $?: $(tail -n 3 "$dir/train.log")"
grep -q "^trainable parameters" "$dir/train.log" || fail "no parameter summary"
grep -q "^done *test_accuracy" "$dir/train.log" || fail "no result line"
for f in final.json metrics.csv train_log.jsonl config.json model.safetensors vocab.txt train_config.json; do
  [ -f "$dir/run/$f" ] || fail "run folder lacks $f"
done
echo "trained: $(grep '^done' "$dir/train.log")"

# 2. predict: a label and a probability per text
"$bin" predict "$dir/run" "great, i loved it" "awful, i hated it" > "$dir/predict.log" 2>&1 || fail "predict exited $?"
cat "$dir/predict.log"
head -n 1 "$dir/predict.log" | grep -Eq '^positive 0\.[5-9][0-9]*|^positive 1\.0' || fail "first text not positive"
tail -n 1 "$dir/predict.log" | grep -Eq '^negative 0\.[5-9][0-9]*|^negative 1\.0' || fail "second text not negative"
# 2b. --file and --logits: the same texts from a file, with both logits at full precision, and
# the probability they imply (softmax) is the one printed
printf 'great, i loved it\n\nawful, i hated it\n' > "$dir/texts.txt"
"$bin" predict "$dir/run" --logits --file "$dir/texts.txt" > "$dir/logits.log" 2>&1 || fail "predict --file exited $?"
cat "$dir/logits.log"
[ "$(wc -l < "$dir/logits.log")" -eq 2 ] || fail "expected 2 lines from --file (the empty line skipped)"
awk '{ if ($3 != "logits") exit 1; d = $5 - $4; p = 1 / (1 + exp(($1 == "positive" ? -d : d)));
       if (p - $2 > 0.0001 || $2 - p > 0.0001) exit 1 }' "$dir/logits.log" || fail "logits do not give the printed probability"

# 3. --eval-only prints the test accuracy that final.json holds
"$bin" --init "$dir/run" --eval-only --data-dir "$dir/data" --cache-dir "$dir/cache" > "$dir/eval.log" 2>&1 || fail "eval-only exited $?"
acc=$(sed -n 's/.*"test_accuracy": \([0-9.e-]*\).*/\1/p' "$dir/run/final.json")
grep -q "test_accuracy $(printf '%.6f' "$acc")" "$dir/eval.log" || fail "eval-only: $(cat "$dir/eval.log") vs final.json $acc"
# 3a. --eval-only --compile: the plans freeze the weights (packed once for oneDNN where the build
#     has it): the same accuracy within fp32 rounding of the logits (at most one review flips)
"$bin" --init "$dir/run" --eval-only --compile --data-dir "$dir/data" --cache-dir "$dir/cache" > "$dir/evalc.log" 2>&1 || fail "eval-only --compile exited $?: $(tail -n 3 "$dir/evalc.log")"
grep -q "^compile: " "$dir/evalc.log" || fail "eval-only --compile printed no compile summary"
accc=$(sed -n 's/.*test_accuracy \([0-9.]*\).*/\1/p' "$dir/evalc.log" | tail -n 1)
awk -v a="$acc" -v b="$accc" 'BEGIN { d = a - b; if (d < 0) d = -d; exit !(b != "" && d <= 0.01) }' \
  || fail "eval-only --compile: accuracy $accc vs $acc"

# 3b. QAT in int8 saves a compressed model; mase-graph reads it back quantized, its graph
#     computes what the eager model does, and the exported graph reloads and runs
if [ -n "$graph" ]; then
  printf 'by = "type"\n[default.config]\nname = "integer"\ndata_in_width = 8\ndata_in_frac_width = 4\nweight_width = 8\nweight_frac_width = 4\nbias_width = 8\nbias_frac_width = 4\n' > "$dir/int8.toml"
  "$bin" $common --epochs 1 --quant "$dir/int8.toml" --out "$dir/qrun" > "$dir/qat.log" 2>&1 || fail "QAT exited $?: $(tail -n 3 "$dir/qat.log")"
  [ -f "$dir/qrun/compression.json" ] || fail "QAT run saved no compression.json"
  "$graph" --init "$dir/qrun" --print --check --export "$dir/qgraph" > "$dir/graph.log" 2>&1 || fail "mase-graph --init exited $?: $(tail -n 3 "$dir/graph.log")"
  grep -q "call_module *quantized_linear" "$dir/graph.log" || fail "the traced graph has no quantized_linear module: $(head -n 20 "$dir/graph.log")"
  grep -q "max |difference| = 0$" "$dir/graph.log" || fail "graph != eager: $(grep check "$dir/graph.log")"
  "$graph" --reload "$dir/qgraph" --run > "$dir/reload.log" 2>&1 || fail "reload exited $?: $(tail -n 3 "$dir/reload.log")"
  # --pad beyond the graph's traced T: one line, not a silently smaller pad
  "$graph" --reload "$dir/qgraph" --pad 16 --run > "$dir/pad.log" 2>&1
  [ $? -eq 2 ] && [ "$(wc -l < "$dir/pad.log")" -eq 1 ] && grep -q "expected --pad below the graph's sequence length 16" "$dir/pad.log" ||
    fail "--reload --pad 16: $(cat "$dir/pad.log")"
  echo "quantized graph: $(grep check "$dir/graph.log")"
fi

# 4. SIGINT in the middle of a long run: exit 130, a checkpoint, how to resume
"$bin" $common --epochs 400 --log-every 1 --ckpt-every 0 --out "$dir/long" > "$dir/long.log" 2>&1 &
pid=$!
wait_for "^step 3/" "$dir/long.log" $pid
kill -INT $pid
wait $pid
code=$?
[ $code -eq 130 ] || fail "interrupted run exited $code, expected 130"
grep -q "continue with: mase-train --resume $dir/long" "$dir/long.log" || fail "no resume hint: $(tail -n 2 "$dir/long.log")"
ls "$dir/long/checkpoints" | grep -q '^step-' || fail "no checkpoint after SIGINT"
echo "interrupted: $(tail -n 1 "$dir/long.log")"

# 5. --resume continues from that checkpoint; SIGTERM stops it the same way
"$bin" --resume "$dir/long" --log-every 1000 > "$dir/resume.log" 2>&1 &
pid=$!
wait_for "^resume" "$dir/resume.log" $pid
sleep 0.5
kill -TERM $pid
wait $pid
code=$?
[ $code -eq 130 ] || fail "resumed run stopped with SIGTERM exited $code, expected 130"
grep -q "^resume .*at step [1-9]" "$dir/resume.log" || fail "resume did not start from the checkpoint: $(cat "$dir/resume.log")"
echo "resumed and stopped again: $(tail -n 1 "$dir/resume.log")"
echo "e2e: ok"
