#!/bin/sh
# tests/tools/mase_search_sweeps.sh width|sparsity MASE_TRAIN MASE_SEARCH DATA_DIR — a Lab 1
# sweep end to end on the real IMDb sample (DATA_DIR/imdb, usually ../shared/data) at a tiny
# budget: train a one-layer BERT for 4 steps, run `mase-search sweep-width` (or
# `sweep-sparsity`), check the CSV's rows and that the SVG and PNG exist, run it again (every
# point skipped, CSV unchanged), then bad input: one line on stderr naming the flag, exit 2,
# studies.db byte for byte unchanged.
# Exit 77 with "SKIPPED: ..." when the data is missing (ctest reports the test as skipped).
set -u
sweep=$1 train=$2 search=$3 data=$4
if [ ! -f "$data/imdb/aclImdb_v1.tar.gz" ] && [ ! -d "$data/imdb/aclImdb" ]; then
  echo "SKIPPED: no IMDb in $data/imdb (see ../shared/data/README.md)"
  exit 77
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/mase-sweep-e2e-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "sweeps: FAILED: $*"; exit 1; }

# A one-layer BERT over bert-base-uncased's WordPiece vocabulary, trained 4 steps on 64 reviews.
printf '{"vocab_size": 30522, "hidden_size": 32, "num_hidden_layers": 1, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 128}' > "$dir/tiny.json"
"$train" --model "$dir/tiny.json" --tokenizer wordpiece --data-dir "$data" --cache-dir "$dir/cache" \
  --max-len 64 --train-subset 64 --test-subset 32 --max-steps 4 --batch-size 8 --ckpt-every 0 \
  --threads 1 --out "$dir/run" > "$dir/train.log" 2>&1 || fail "mase-train exited $?: $(tail -n 3 "$dir/train.log")"

model=$dir/run
common="--data-dir $data --cache-dir $dir/cache --test-subset 32 --train-subset 32 --batch-size 8 --threads 1 --dir $dir/s"
if [ "$sweep" = width ]; then
  list=4,8,16 steps=2
  run() { "$search" sweep-width --model-dir "$model" $common --widths "$list" --qat-steps "$steps" "$@"; }
  study=lab1-width rows=6
  header='curve,mode,width,accuracy,frac_width,test_loss,seconds,run,trial'
else
  list=0.25,0.75 steps=2
  run() { "$search" sweep-sparsity --model-dir "$model" $common --sparsities "$list" --finetune-steps "$steps" "$@"; }
  study=lab1-sparsity rows=8
  header='curve,method,scope,target,finetune,sparsity,accuracy,weight_sparsity,test_loss,seconds,run,trial'
fi

# 1. the sweep: a progress line per point, the CSV, both figures
run > "$dir/sweep.log" 2>&1 || fail "sweep exited $?: $(tail -n 5 "$dir/sweep.log")"
cat "$dir/sweep.log"
csv="$dir/s/$study.csv"
[ "$(head -n 1 "$csv")" = "$header" ] || fail "CSV header: $(head -n 1 "$csv")"
[ "$(tail -n +2 "$csv" | wc -l)" -eq $rows ] || fail "CSV has $(tail -n +2 "$csv" | wc -l) rows, expected $rows"
[ "$(grep -c '^point ' "$dir/sweep.log")" -eq $rows ] || fail "expected $rows progress lines"
# every accuracy in [0, 1]
tail -n +2 "$csv" | awk -F, '{ for (i = 1; i <= NF; ++i) if ($i ~ /^0\.[0-9]+$|^[01]$/) { ok = 1 } } END { exit !ok }' \
  || fail "no accuracy values in the CSV"
if [ "$sweep" = width ]; then
  [ "$(grep -c '^PTQ,ptq,' "$csv")" -eq 3 ] || fail "expected 3 PTQ rows"
  [ "$(grep -c '^"QAT, 2 steps",qat,' "$csv")" -eq 3 ] || fail "expected 3 QAT rows"
  grep -q '^PTQ,ptq,4,' "$csv" && grep -q '^PTQ,ptq,16,' "$csv" || fail "PTQ rows not by width"
else
  for c in 'random, not fine-tuned' 'random, fine-tuned 2 steps' 'l1-norm, not fine-tuned' 'l1-norm, fine-tuned 2 steps'; do
    [ "$(grep -c "^\"$c\"," "$csv")" -eq 2 ] || fail "expected 2 rows of curve '$c'"
  done
fi
head -c 200 "$dir/s/$study.svg" | grep -q '<svg' || fail "no SVG at $dir/s/$study.svg"
[ "$(head -c 4 "$dir/s/$study.png" | od -An -c | tr -d ' ')" = '211PNG' ] || fail "no PNG at $dir/s/$study.png"
grep -q 'title' "$dir/s/$study.svg.gp" || fail "the gnuplot script has no title"

# 2. the same command again: nothing to do, the CSV unchanged
cp "$csv" "$dir/before.csv"
run > "$dir/again.log" 2>&1 || fail "second run exited $?"
grep -q "$rows points, $rows done before" "$dir/again.log" || fail "second run: $(head -n 3 "$dir/again.log")"
! grep -q '^point ' "$dir/again.log" || fail "second run evaluated points again"
cmp -s "$csv" "$dir/before.csv" || fail "second run changed the CSV"

# 3. bad input: exit 2, one line naming the flag, studies.db unchanged
cp "$dir/s/studies.db" "$dir/before.db"
bad() {  # bad FLAG-IN-MESSAGE ARGS...
  want=$1; shift
  run "$@" > "$dir/bad.out" 2> "$dir/bad.err"
  code=$?
  [ $code -eq 2 ] || fail "'$*' exited $code, expected 2: $(cat "$dir/bad.err")"
  [ "$(wc -l < "$dir/bad.err")" -eq 1 ] || fail "'$*' printed $(wc -l < "$dir/bad.err") lines: $(cat "$dir/bad.err")"
  grep -q -- "$want" "$dir/bad.err" || fail "'$*': '$(cat "$dir/bad.err")' does not name $want"
  cmp -s "$dir/s/studies.db" "$dir/before.db" || fail "'$*' changed studies.db"
  echo "refused: $(cat "$dir/bad.err")"
}
bad '\[--plot\]' --plot "$dir/x.pdf"
model=$dir/nothing; bad '\[--model-dir\] expected a run folder'; model=$dir/run
if [ "$sweep" = width ]; then
  good=$list
  list=8,33; bad '\[--widths\] expected widths <= 32'
  list=3,8; bad '\[--frac-width\] expected frac width <= width'
  list=''; bad '\[--widths\] expected at least one value'
  list=4..x; bad '\[--widths\] expected an integer'
  list=4,8; bad 'was created with'
  list=$good
  bad '\[--curves\]' --curves ptq,pqt
  steps=3; bad 'qat_steps 2, not 3'
else
  good=$list
  list=0.5,1.5; bad '\[--sparsities\] expected sparsities in \[0, 1\]'
  list=-0.1; bad '\[--sparsities\] expected sparsities in \[0, 1\]'
  list=''; bad '\[--sparsities\] expected at least one value'
  list=0.25; bad 'was created with'
  list=$good
  bad '\[--methods\]' --methods random,magnitude
  bad '\[--scopes\]' --scopes locale
  bad '\[--targets\]' --targets weights
  steps=3; bad 'finetune_steps 2, not 3'

  # 4. from a quantized model (Lab 1.2 "from the best model of 1.1", a QAT run): prune works on
  #    its QuantizedLinears in place, and every point must start again from the unpruned model
  printf '{"by": "type", "default": {"config": {"name": "integer", "data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4}}}' > "$dir/int8.json"
  "$train" --init "$dir/run" --quant "$dir/int8.json" --data-dir "$data" --cache-dir "$dir/cache" \
    --max-len 64 --train-subset 32 --test-subset 32 --max-steps 2 --batch-size 8 --ckpt-every 0 \
    --threads 1 --out "$dir/qat" > "$dir/qat.log" 2>&1 || fail "QAT run exited $?: $(tail -n 3 "$dir/qat.log")"
  "$search" sweep-sparsity --model-dir "$dir/qat" $common --sparsities 0.25,0.75 --methods l1-norm \
    --scopes local --study from-qat > "$dir/qsweep.log" 2>&1 || fail "sweep of a QAT model exited $?: $(tail -n 3 "$dir/qsweep.log")"
  [ "$(tail -n +2 "$dir/s/from-qat.csv" | wc -l)" -eq 2 ] || fail "sweep of a QAT model: $(cat "$dir/s/from-qat.csv")"
  echo "from a QAT model: $(grep -c '^point ' "$dir/qsweep.log") points"
fi
echo "sweeps: ok"
