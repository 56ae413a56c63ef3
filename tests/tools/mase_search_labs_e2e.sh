#!/bin/sh
# tests/tools/mase_search_labs_e2e.sh MASE_SEARCH MASE_TRAIN LAB — one lab command of
# mase-search end to end on real IMDb at a tiny budget (3 steps of 8 reviews of 32 tokens, 32
# test reviews, 2 trials per study): exit 0, one CSV per study with 2 complete rows, the figure.
#   LAB: tutorial (2.1) | compress-aware (2.2) | precision-integer (3.1) | precision-all (3.2)
#        | precision-pareto (3.1 with two objectives, NSGA-II: 4 trials, generations of 2)
#        | tutorial-pareto (2.1 and 2.2 with two objectives, accuracy and parameters: random and
#          NSGA-II, 4 trials, generations of 2)
# IMDb comes from $MASE_DATA_DIR, else /work/shared/data; without it the test prints
# MASE_SKIPPED (ctest: skipped). Prints "e2e: ok" when every check passed.
set -u
search=$1
train=$2
lab=$3
data=${MASE_DATA_DIR:-/work/shared/data}
if [ ! -f "$data/imdb/aclImdb_v1.tar.gz" ] && [ ! -d "$data/imdb/aclImdb" ]; then
  echo "MASE_SKIPPED: no IMDb in $data (set MASE_DATA_DIR)"; exit 0
fi
dir=$(mktemp -d "${TMPDIR:-/tmp}/mase-search-labs-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "e2e: FAILED: $*"; exit 1; }
budget="--data-dir $data --batch-size 8 --train-subset 64 --test-subset 32 --max-len 32 --threads 2"
common="--trials 2 --dir $dir/s $budget"
ptq="$budget"  # the budget of a command that trains nothing (precision's PTQ trials)
budget="$budget --max-steps 3"
small="--num-layers 1,2 --hidden-sizes 64,128 --intermediate-sizes 128,256"

# check_csv STUDY: the CSV has a header and exactly 2 complete trials
check_csv() {
  f="$dir/s/$1.csv"
  [ -f "$f" ] || fail "no $f: $(tail -n 3 "$dir/log")"
  n=$(grep -c ',complete,' "$f")
  [ "$n" -eq 2 ] || fail "$f has $n complete rows, expected 2: $(cat "$f")"
}
# check_plot FILE: gnuplot wrote it (and its data and script beside it)
check_plot() {
  [ -s "$1" ] && [ -s "$1.dat" ] && [ -s "$1.gp" ] || fail "no figure $1"
  case "$1" in
    *.png) head -c 4 "$1" | grep -q PNG || fail "$1 is not a PNG" ;;
    *.svg) grep -q '<svg' "$1" || fail "$1 is not an SVG" ;;
  esac
}

case "$lab" in
  tutorial)
    "$search" tutorial $common $small --max-steps 3 --plot "$dir/t.png" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
    for s in random grid tpe; do check_csv "tutorial-$s"; done
    grep -q '^number,state,value,.*linear_layer' "$dir/s/tutorial-grid.csv" || fail "no linear_layer column"
    check_plot "$dir/t.png"
    # the same study with another budget is refused, and the study is left as it was
    "$search" tutorial $common $small --max-steps 4 --resume > "$dir/log2" 2>&1
    [ $? -eq 2 ] || fail "another budget: expected exit 2: $(cat "$dir/log2")"
    grep -q "key 'max_steps' was 3, now 4" "$dir/log2" || fail "message: $(cat "$dir/log2")"
    check_csv tutorial-grid
    # --workers 2: two processes share each study's trials; the parent writes every CSV and
    # the figure once both are done (a budget of 2 each: exactly 2 complete rows, none twice)
    "$search" tutorial $common $small --max-steps 3 --samplers random,grid --study wk \
      --workers 2 --plot "$dir/wk.svg" > "$dir/log4" 2>&1 || fail "--workers 2: exit $?: $(tail -n 3 "$dir/log4")"
    check_csv wk-random
    check_csv wk-grid
    check_plot "$dir/wk.svg"
    grep -q 'trials, 2 workers' "$dir/log4" || fail "--workers 2: no 'trials, 2 workers' line: $(head -n 5 "$dir/log4")"
    # --vocab: the trials' data through the shared WordPiece vocabulary (a study of its own:
    # the tokenizer is part of the objective)
    vocab="$data/bert-uncased-vocab/vocab.txt"
    if [ -f "$vocab" ]; then
      "$search" tutorial $common $small --max-steps 3 --samplers random --study wp --vocab "$vocab" > "$dir/log3" 2>&1 ||
        fail "--vocab: exit $?: $(tail -n 3 "$dir/log3")"
      check_csv wp-random
      ls "$dir"/s/wp-random/trial-*/vocab.txt > /dev/null 2>&1 || fail "--vocab: the trials' runs have no vocab.txt"
    fi
    ;;
  compress-aware)
    printf '%s' '{"quantize": {"by": "type", "default": {"config": {"name": "integer", "data_in_width": 8, "data_in_frac_width": 4, "weight_width": 8, "weight_frac_width": 4, "bias_width": 8, "bias_frac_width": 4}}}, "prune": {"weight": {"sparsity": 0.5}}}' > "$dir/c.json"
    "$search" compress-aware $common $small --max-steps 3 --compress "$dir/c.json" --post-steps 2 --plot "$dir/c.svg" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
    for s in plain compressed post-trained; do check_csv "compress-aware-$s"; done
    grep -q 'accuracy_post' "$dir/s/compress-aware-post-trained.csv" || fail "no accuracy_post column"
    check_plot "$dir/c.svg"
    ;;
  precision-integer|precision-all)
    "$train" --model bert-tiny $budget --out "$dir/run" > "$dir/train.log" 2>&1 || fail "training: $(tail -n 3 "$dir/train.log")"
    if [ "$lab" = precision-integer ]; then
      "$search" precision --init "$dir/run" $common --plot "$dir/p.svg" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
      check_csv precision-integer
      grep -q 'integer.frac_width' "$dir/s/precision-integer.csv" || fail "no frac_width column"
      # QAT trials pruned on their curves: PTQ at step 0, tests at QAT steps 2 and 4 (a study of
      # its own); every trial ends complete or pruned, and each study has its curves figure
      "$search" precision --init "$dir/run" --trials 3 --dir "$dir/s" $ptq --study pq \
        --qat-steps 4 --eval-every 2 --pruner median --prune-startup 1 --plot "$dir/q.svg" \
        > "$dir/logq" 2>&1 ||
        fail "QAT pruning: exit $?: $(tail -n 3 "$dir/logq")"
      n=$(grep -c -E ',(complete|pruned),' "$dir/s/pq-integer.csv")
      [ "$n" -eq 3 ] || fail "QAT pruning: $n finished rows, expected 3: $(cat "$dir/s/pq-integer.csv")"
      check_plot "$dir/s/pq-integer-curves.svg"
    else
      # 18 studies shared by 2 worker processes (--workers): the parent alone writes the CSVs,
      # the summary and both figures once the other is done
      "$search" precision --init "$dir/run" $common --formats all --mixed --workers 2 --plot "$dir/p.svg" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
      [ "$(grep -c '^fp32 ' "$dir/log")" -eq 1 ] || fail "expected one fp32 reference line (the parent's): $(grep '^fp32' "$dir/log")"
      for s in integer minifloat_ieee minifloat_denorm log binary binary_scaling binary_residual ternary block_fp block_minifloat block_log mxint8 mxfp8_e4m3 mxfp8_e5m2 mxfp6_e3m2 mxfp6_e2m3 mxfp4_e2m1 mixed; do
        check_csv "precision-$s"
      done
      # the one-row-per-format summary: header, and a row for each of the 18 studies
      sum="$dir/s/precision-summary.csv"
      [ "$(head -n 1 "$sum")" = "study,trials,best_accuracy,best_trial,avg_weight_bits_of_best,worst_accuracy,fewest_avg_weight_bits,accuracy_at_fewest" ] ||
        fail "summary header: $(head -n 1 "$sum" 2>&1)"
      [ "$(tail -n +2 "$sum" | wc -l)" -eq 18 ] || fail "summary rows: $(cat "$sum")"
      grep -q '^"each layer picks",' "$sum" || fail "no mixed row in the summary"
    fi
    check_plot "$dir/p.svg"
    check_plot "$dir/p-pareto.svg"
    ;;
  precision-pareto)
    "$train" --model bert-tiny $budget --out "$dir/run" > "$dir/train.log" 2>&1 || fail "training: $(tail -n 3 "$dir/train.log")"
    "$search" precision --init "$dir/run" --trials 4 --dir "$dir/s" $ptq --objectives accuracy,bits --sampler nsga2 --population 2 --plot "$dir/p.svg" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
    f="$dir/s/precision-integer.csv"
    head -n 1 "$f" | grep -q '^number,state,values_accuracy,values_avg_weight_bits,' || fail "CSV header: $(head -n 1 "$f")"
    [ "$(grep -c ',complete,' "$f")" -eq 4 ] || fail "$f: expected 4 complete rows: $(cat "$f")"
    grep -q 'sampler nsga2:2, 4 trials' "$dir/log" || fail "no nsga2:2 study line: $(grep '^study' "$dir/log")"
    grep -q '^front     precision-integer: hypervolume [0-9.]* (from accuracy 0.5, 32 bits): trial [0-9]' "$dir/log" || fail "no front line: $(tail -n 3 "$dir/log")"
    check_plot "$dir/p.svg"
    check_plot "$dir/p-pareto.svg"
    ;;
  tutorial-pareto)
    "$search" tutorial --trials 4 --dir "$dir/s" $budget $small --objectives accuracy,params --samplers random,nsga2 --population 2 --plot "$dir/t.svg" > "$dir/log" 2>&1 || fail "exit $?: $(tail -n 3 "$dir/log")"
    for s in random nsga2; do
      f="$dir/s/tutorial-$s.csv"
      head -n 1 "$f" | grep -q '^number,state,values_accuracy,values_parameters,' || fail "CSV header: $(head -n 1 "$f")"
      [ "$(grep -c ',complete,' "$f")" -eq 4 ] || fail "$f: expected 4 complete rows: $(cat "$f")"
    done
    grep -q 'sampler nsga2:2, 4 trials' "$dir/log" || fail "no nsga2:2 study line: $(grep '^study' "$dir/log")"
    # the largest model of L{1,2} H{64,128} I{128,256}: L2 H128 I256, every Linear kept
    ref='from accuracy 0.5, [0-9]* parameters: the space.s largest model'
    for s in random nsga2; do
      grep -q "^front     tutorial-$s: hypervolume [0-9.]* (accuracy x M parameters, $ref): trial [0-9]* (0[.0-9]*, [0-9]* parameters)" "$dir/log" || fail "no $s front line: $(tail -n 3 "$dir/log")"
    done
    check_plot "$dir/t.svg"
    check_plot "$dir/t-pareto.svg"
    # compress-aware: NSGA-II by default, one study per variant
    printf '%s' '{"prune": {"weight": {"sparsity": 0.5}}}' > "$dir/c.json"
    "$search" compress-aware --trials 2 --dir "$dir/s" $budget $small --compress "$dir/c.json" --variants plain,compressed --objectives accuracy,params --sampler nsga2 --population 2 --plot "$dir/c.svg" > "$dir/log2" 2>&1 || fail "compress-aware: exit $?: $(tail -n 3 "$dir/log2")"
    for s in plain compressed; do check_csv "compress-aware-$s"; done
    grep -q "^front     compress-aware-compressed: hypervolume [0-9.]* (accuracy x M parameters, $ref): trial" "$dir/log2" || fail "no compress-aware front line: $(tail -n 3 "$dir/log2")"
    check_plot "$dir/c-pareto.svg"
    ;;
  *) fail "unknown LAB $lab" ;;
esac
echo "e2e: ok"
