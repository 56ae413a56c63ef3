#!/bin/sh
# tests/tools/mase_train_mpi.sh MASE_TRAIN — data-parallel training over MPI on localhost
# (train/data_parallel.h), on a made-up IMDb written here:
#   1. 2 ranks give the loss curve of 1 process with the same global batch and seed, step by
#      step within fp32 reassociation (relative 1e-4; dropout off: its masks are per rank),
#      and the same losses bit for bit whether gradients go as their rows in use or whole;
#   2. 2 ranks stopped with SIGTERM in the middle (exit 130, one checkpoint by rank 0) and
#      resumed by 2 ranks end with exactly the losses of an uninterrupted 2-rank run;
#   3. resuming that 2-rank checkpoint with 1 process, ranks started with different flags, and
#      a batch (or the epoch's last batch) that does not split are refused with one line.
# Prints "mpi: ok" when every check passed (ctest matches it), or MASE_SKIPPED when mpirun or
# an MPI build is missing (ctest reports the case skipped).
set -u
bin=$1
command -v mpirun >/dev/null || { echo "MASE_SKIPPED: mpirun not found (apt-get install openmpi-bin)"; exit 0; }
dir=$(mktemp -d "${TMPDIR:-/tmp}/mase-train-mpi-XXXXXX")
trap 'rm -rf "$dir"' EXIT
fail() { echo "mpi: FAILED: $*"; exit 1; }
wait_for() {  # wait_for PATTERN FILE PID: until FILE has a matching line (at most 60 s)
  n=0
  until grep -q "$1" "$2" 2>/dev/null; do
    n=$((n + 1)); [ $n -gt 600 ] && { kill "$3"; fail "never printed '$1': $(tail -n 3 "$2")"; }
    sleep 0.1
  done
}
# 2 ranks on this machine, one thread each, not pinned to one core; root must say it means it
mpi="mpirun -np 2 --oversubscribe --bind-to none"
[ "$(id -u)" -eq 0 ] && mpi="$mpi --allow-run-as-root"

. "$(dirname "$0")/made_up_imdb.sh"
made_up_imdb "$dir"
printf '{"vocab_size": 25, "hidden_size": 32, "num_hidden_layers": 2, "num_attention_heads": 2, "intermediate_size": 64, "max_position_embeddings": 64}' > "$dir/tiny.json"
common="--model $dir/tiny.json --data-dir $dir/data --cache-dir $dir/cache --tokenizer wordpiece --vocab $dir/vocab.txt --max-len 16 --batch-size 8 --lr 1e-2 --warmup 2 --dropout 0 --threads 1 --log-every 1"
# the token cache once, so that the ranks do not race to write it
"$bin" $common --max-steps 1 --out "$dir/warm" > "$dir/warm.log" 2>&1 || fail "warm-up run exited $?: $(tail -n 3 "$dir/warm.log")"
$mpi "$bin" --help > /dev/null 2>&1 || fail "mpirun cannot start mase-train: $($mpi "$bin" --help 2>&1 | tail -n 3)"

# 1. the loss curve: 1 process against 2 ranks
"$bin" $common --max-steps 12 --out "$dir/one" > "$dir/one.log" 2>&1 || fail "1 process exited $?: $(tail -n 3 "$dir/one.log")"
$mpi "$bin" $common --max-steps 12 --out "$dir/two" > "$dir/two.log" 2>&1 || fail "2 ranks exited $?: $(tail -n 5 "$dir/two.log")"
grep -q "^dist *mpi, 2 ranks, each 4 rows of the batch of 8" "$dir/two.log" || fail "no dist line: $(head -n 20 "$dir/two.log")"
[ "$(grep -c '^done' "$dir/two.log")" -eq 1 ] || fail "expected one result line (rank 0's), got $(grep -c '^done' "$dir/two.log")"
loss() { sed -n 's/.*"step":\([0-9]*\),.*"loss":\([-0-9.e]*\),.*/\1 \2/p' "$1"; }
loss "$dir/one/train_log.jsonl" > "$dir/one.loss"
loss "$dir/two/train_log.jsonl" > "$dir/two.loss"
[ "$(wc -l < "$dir/one.loss")" -eq 12 ] || fail "expected 12 logged steps, got $(wc -l < "$dir/one.loss")"
paste "$dir/one.loss" "$dir/two.loss" | awk '
  { d = $2 - $4; if (d < 0) d = -d; r = d / ($2 < 0 ? -$2 : $2); if (r > worst) worst = r
    if ($1 != $3 || r > 1e-4) { print "step " $1 ": " $2 " vs " $4; bad = 1 } }
  END { printf "loss curves: 12 steps, largest relative difference %.2e\n", worst; exit bad }' ||
  fail "2 ranks' losses differ from 1 process's beyond fp32 reassociation"

# 1b. gradients sent as rows in use (train/data_parallel.h, RowSparsity) or whole: with 2 ranks
#     each sum is a + b either way, so the losses must be identical, bit for bit, and the rows
#     must send fewer bytes (this model's position table: 64 rows, 16 in use)
for m in off on auto; do
  $mpi -x MASE_DP_SPARSE=$m "$bin" $common --max-steps 12 --out "$dir/rows-$m" > "$dir/rows-$m.log" 2>&1 ||
    fail "2 ranks with MASE_DP_SPARSE=$m exited $?: $(tail -n 5 "$dir/rows-$m.log")"
  loss "$dir/rows-$m/train_log.jsonl" > "$dir/rows-$m.loss"
done
cmp -s "$dir/rows-off.loss" "$dir/rows-on.loss" || fail "rows in use ('on') and whole gradients ('off') gave different losses: $(paste "$dir/rows-off.loss" "$dir/rows-on.loss" | head -n 3)"
cmp -s "$dir/rows-off.loss" "$dir/rows-auto.loss" || fail "MASE_DP_SPARSE=auto gave other losses than off"
bytes() { sed -n 's/.*"allreduce_bytes": *\([0-9]*\).*/\1/p' "$1/final.json"; }
b_off=$(bytes "$dir/rows-off"); b_on=$(bytes "$dir/rows-on"); b_auto=$(bytes "$dir/rows-auto")
[ -n "$b_off" ] && [ -n "$b_auto" ] && [ "$b_auto" -lt "$b_off" ] && [ "$b_on" -le "$b_auto" ] ||
  fail "expected fewer bytes sent as rows: off $b_off, auto $b_auto, on $b_on"
echo "rows: losses identical with MASE_DP_SPARSE=off/on/auto; bytes sent in 12 steps: $b_off / $b_on / $b_auto"

# 2. SIGTERM in the middle, resume with 2 ranks: the same losses as without the stop
$mpi "$bin" $common --max-steps 200 --out "$dir/full" > "$dir/full.log" 2>&1 || fail "full run exited $?: $(tail -n 5 "$dir/full.log")"
$mpi "$bin" $common --max-steps 200 --out "$dir/cut" > "$dir/cut.log" 2>&1 &
pid=$!
# (rank 0 draws a progress bar: mpirun gives it a pty, and the bar skips steps)
wait_for "step \([2-9][0-9]\|1[0-9][0-9]\)/" "$dir/cut.log" $pid
for r in $(pgrep -P $pid); do kill -TERM "$r"; done  # the ranks (mpirun's children), as Ctrl-C would
wait $pid
code=$?
[ $code -ne 0 ] || fail "the stopped run exited 0 (finished before the signal?)"
ls "$dir/cut/checkpoints" 2>/dev/null | grep -q '^step-' || fail "no checkpoint after SIGTERM: $(tail -n 5 "$dir/cut.log")"
grep -q "continue with: mpirun -np 2 mase-train --resume" "$dir/cut.log" || fail "no resume hint: $(tail -n 5 "$dir/cut.log")"
echo "stopped: $(grep 'stopped at step' "$dir/cut.log")"

"$bin" --resume "$dir/cut" > "$dir/wrong.log" 2>&1
code=$?
[ $code -eq 2 ] || fail "resuming 2 ranks' checkpoint with 1 process exited $code, expected 2"
grep -q "was written by a run of 2 rank(s), expected 1" "$dir/wrong.log" || fail "$(cat "$dir/wrong.log")"
echo "refused: $(cat "$dir/wrong.log")"

$mpi "$bin" --resume "$dir/cut" > "$dir/resume.log" 2>&1 || fail "resume exited $?: $(tail -n 5 "$dir/resume.log")"
loss "$dir/full/train_log.jsonl" > "$dir/full.loss"
loss "$dir/cut/train_log.jsonl" > "$dir/cut.loss"
[ "$(wc -l < "$dir/cut.loss")" -eq 200 ] || fail "the resumed log has $(wc -l < "$dir/cut.loss") steps, expected 200"
cmp -s "$dir/full.loss" "$dir/cut.loss" || fail "resumed losses differ from the uninterrupted run's: $(diff "$dir/full.loss" "$dir/cut.loss" | head -n 4)"
echo "resumed: 200 steps, losses identical to the uninterrupted 2-rank run"

# 3. ranks started with different flags: one line, exit 2
$mpi sh -c "exec \"$bin\" $common --max-steps 2 --seed \$OMPI_COMM_WORLD_RANK --out $dir/mixed" > "$dir/mixed.log" 2>&1
code=$?
[ $code -ne 0 ] || fail "ranks with different --seed were accepted"
[ "$(grep -c '\[dist\]' "$dir/mixed.log")" -eq 1 ] || fail "expected one [dist] line: $(cat "$dir/mixed.log")"
echo "refused: $(grep '\[dist\]' "$dir/mixed.log")"

# 4. a batch that does not split over the ranks: one line, exit 2, and nothing written (so the
#    corrected command works with the same --out)
odd=$(echo "$common" | sed 's/--batch-size 8/--batch-size 7/')
$mpi "$bin" $odd --max-steps 2 --out "$dir/odd" > "$dir/odd.log" 2>&1
code=$?
[ $code -ne 0 ] || fail "a batch of 7 on 2 ranks was accepted"
[ "$(grep -c 'divides by the 2 ranks' "$dir/odd.log")" -eq 1 ] || fail "expected one [dist] line: $(cat "$dir/odd.log")"
[ ! -e "$dir/odd" ] || fail "the refused run left $dir/odd behind: $(ls "$dir/odd")"
echo "refused: $(grep 'divides by' "$dir/odd.log")"
# 4b. the epoch's last, shorter batch must split too (21 reviews in batches of 8: 5 rows last):
#     refused before anything is written, not at the step that reaches it
$mpi "$bin" $common --train-subset 21 --max-steps 2 --out "$dir/lastodd" > "$dir/lastodd.log" 2>&1
[ $? -ne 0 ] || fail "a last batch of 5 rows on 2 ranks was accepted"
[ "$(grep -c 'expected every batch to split evenly' "$dir/lastodd.log")" -eq 1 ] || fail "expected one [dist] line: $(cat "$dir/lastodd.log")"
[ ! -e "$dir/lastodd" ] || fail "the refused run left $dir/lastodd behind: $(ls "$dir/lastodd")"
echo "refused: $(grep 'split evenly' "$dir/lastodd.log")"
# 5. an error every rank raises alike is one line, not one per rank (train/data_parallel.h,
#    quiet_rank): a bad flag, and a 2-rank checkpoint resumed by 3 ranks
$mpi "$bin" --no-such-flag > "$dir/flag.log" 2>&1
[ "$(grep -c '^mase-train:' "$dir/flag.log")" -eq 1 ] || fail "a bad flag under mpirun: expected one line, got: $(grep '^mase-train:' "$dir/flag.log")"
cp -r "$dir/cut" "$dir/np3" && rm -f "$dir/np3/final.json"  # its 2-rank checkpoint, unfinished
mpirun -np 3 --oversubscribe --bind-to none $([ "$(id -u)" -eq 0 ] && echo --allow-run-as-root) \
  "$bin" --resume "$dir/np3" > "$dir/np3.log" 2>&1
[ "$(grep -c '^mase-train:' "$dir/np3.log")" -eq 1 ] && grep -q 'written by a run of 2 rank(s), expected 3' "$dir/np3.log" ||
  fail "a 2-rank run resumed by 3 ranks: expected one line, got: $(grep '^mase-train:' "$dir/np3.log")"
echo "once: $(grep '^mase-train:' "$dir/np3.log")"
# 6. ranks reading different reviews through the environment (the flags are the same)
cp -r "$dir/data" "$dir/data1"
find "$dir/data1" -name '*.txt' | head -n 1 | while read -r f; do echo "other words entirely" > "$f"; done
$mpi sh -c "MASE_DATA_DIR=$dir/data\$(echo \$OMPI_COMM_WORLD_RANK | sed s/^0\$//) MASE_CACHE_DIR=$dir/cache\$OMPI_COMM_WORLD_RANK exec \"$bin\" $(echo "$common" | sed 's/--data-dir [^ ]*//; s/--cache-dir [^ ]*//') --max-steps 2 --out $dir/envdata" > "$dir/envdata.log" 2>&1
[ $? -ne 0 ] || fail "ranks with different data were accepted"
[ "$(grep -c 'expected every rank to have the same data' "$dir/envdata.log")" -eq 1 ] || fail "expected one [dist] line about the data: $(grep 'mase-train' "$dir/envdata.log")"
echo "refused: $(grep '\[dist\]' "$dir/envdata.log")"
echo "mpi: ok"
