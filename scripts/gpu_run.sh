#!/usr/bin/env bash
# scripts/gpu_run.sh — everything one lent GPU call does, ON the device machine, from the repo
# root (prepared here by scripts/gpu_pack.sh, which builds the binaries into .dev/ — carried by
# the device tool's `carry: [".dev"]`).
#
#   bash scripts/gpu_run.sh                 # core, then every scripts/gpu/*.sh
#   bash scripts/gpu_run.sh core attn       # only these parts
#
# Parts:
#   core    the GPU's facts; every "CPU == CUDA" test case of every test binary (they are
#           reported skipped on a machine without a GPU); the gpu-base suite (copy bandwidth,
#           cuBLAS sgemm); mase-train --device cuda on bert-tiny, 40 steps of a small IMDb
#   memcheck  compute-sanitizer's memcheck over the CPU == CUDA cases of test_autograd and
#           test_quant (out-of-bounds and misaligned accesses, uninitialised reads of device
#           memory that a wrong answer would not show); not in the default list, name it
#   <name>  scripts/gpu/<name>.sh, one per piece of GPU work (attn: softmax and attention,
#           quant: number formats and MXINT8, step: the training step and its profile, ...),
#           each run with BIN (the binaries), DATA (a small IMDb), OUT and LOGS set, each
#           appending `| what | result |` rows to $OUT/summary.md.
# The device tool stops a command after 600 s and the lease is 15 minutes in all: every step
# has its own timeout, and the summary and logs are written as each part ends, so a part cut
# short still leaves what ran. Results: $OUT/summary.md, $OUT/logs.tar.gz.
set -uo pipefail
cd "$(dirname "$0")/.."
export OUT="${OUT:-/tmp/mase-gpu-out}" LOGS=/tmp/mase-logs BIN="$PWD/.dev/bin" DATA="$PWD/.dev/data"
mkdir -p "$OUT" "$LOGS"
parts=("$@")
if ((${#parts[@]} == 0)); then
  parts=(core)
  for s in scripts/gpu/*.sh; do [ -f "$s" ] && parts+=("$(basename "$s" .sh)"); done
fi
# test fixtures are found by the absolute path compiled in (the checkout gpu_pack.sh built)
src=$(cat .dev/srcdir 2>/dev/null || echo /work/main)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
unpack() {  # unxz, or Python's lzma where xz-utils is missing
  if command -v unxz >/dev/null; then unxz -f "$1"
  else python3 -c 'import lzma, os, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read()); os.remove(sys.argv[1])' "$1"; fi
}
for x in .dev/lib/*.xz .dev/bin/*.xz; do [ -f "$x" ] && unpack "$x"; done  # gpu_pack.sh packed them
chmod +x .dev/bin/* 2>/dev/null
cublas=$(ldconfig -p | awk '/libcublas\.so/ { print $NF; exit }')
export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}:${LD_LIBRARY_PATH:-}"
export PYTHONUNBUFFERED=1
sum="$OUT/summary.md"
row() { echo "| $1 | $2 |" >> "$sum"; }
# `step NAME SECONDS CMD...`: runs CMD under a timeout, its output in $LOGS/NAME.log; prints
# "exit N, M s" for the summary row (124 = timed out).
step() {
  local name=$1 secs=$2 t0=$SECONDS rc
  shift 2
  timeout "$secs" "$@" > "$LOGS/$name.log" 2>&1
  rc=$?
  echo "exit $rc, $((SECONDS - t0)) s"
}
export -f row step
save_logs() { tar -czf "$OUT/logs.tar.gz" -C "$LOGS" . 2>/dev/null; }
{
  echo "# GPU run $(date -u +%Y-%m-%dT%H:%MZ), commit $(git rev-parse --short HEAD 2>/dev/null || cat .dev/commit 2>/dev/null || echo ?)"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader | sed 's/^/GPU: /'
  python3 -c "import torch; print('PyTorch', torch.__version__, 'CUDA', torch.version.cuda)" 2>/dev/null
  echo "CPU: $(lscpu | sed -n 's/^Model name: *//p'), $(nproc) cores"
  echo
  echo "| what | result |"
  echo "|---|---|"
} > "$sum"

core() {
  local tests=(test_runtime test_autograd test_models test_train test_quant test_graph)
  for t in "${tests[@]}"; do
    [ -x "$BIN/$t" ] || continue
    r=$(step "$t-cuda" 120 "$BIN/$t" -tc='*CUDA*,*GPU*,*cuda*,graph step*')
    row "$t, CPU == CUDA cases" "$r; $(grep -E '^\[doctest\] test cases' "$LOGS/$t-cuda.log" | tail -1); $(grep -c MASE_SKIPPED "$LOGS/$t-cuda.log") skipped"
  done
  r=$(step gpu-base 90 "$BIN/mase-bench" --suite gpu-base --benchmark_min_time=0.2)
  row "mase-bench --suite gpu-base" "$r"
  { echo; echo '```'; grep -E '^gpu-base|gpu' "$LOGS/gpu-base.log" | head -8; echo '```'; echo; } >> "$sum"
  r=$(step train-tiny 150 "$BIN/mase-train" --model bert-tiny --data imdb --data-dir "$DATA" \
      --device cuda --max-steps 40 --cache-dir /tmp/mase-cache --out /tmp/run-tiny)
  row "mase-train bert-tiny --device cuda --max-steps 40" "$r; $(grep -E '^done' "$LOGS/train-tiny.log" | head -1)"
}

memcheck() {
  local cs; cs=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null)
  [ -n "$cs" ] || { row "memcheck" "no compute-sanitizer on this machine"; return; }
  # the hand-written kernels' cases (big-shape cases excluded: memcheck runs ~50x slower)
  local -A filter=([test_autograd]='sdpa CUDA*,softmax CUDA*,matmul batched*'
                   [test_quant]='*CUDA*' [test_train]='gpu step*')
  for t in test_autograd test_quant test_train; do
    r=$(step "memcheck-$t" 70 "$cs" --tool memcheck --error-exitcode 99 "$BIN/$t" \
        -tc="${filter[$t]}" -tce='*peak memory*,*small BERT*')
    row "compute-sanitizer memcheck, $t: ${filter[$t]}" "$r; $(grep -E 'ERROR SUMMARY' "$LOGS/memcheck-$t.log" | tail -1)"
  done
}

for p in "${parts[@]}"; do
  t0=$SECONDS
  if [ "$p" = core ]; then core
  elif [ "$p" = memcheck ]; then memcheck
  elif [ -f "scripts/gpu/$p.sh" ]; then
    bash "scripts/gpu/$p.sh" > "$LOGS/part-$p.log" 2>&1 || row "scripts/gpu/$p.sh" "exit $?"
  else row "$p" "no such part (core or scripts/gpu/<name>.sh)"
  fi
  echo "part $p: $((SECONDS - t0)) s" >&2
  save_logs
done
cat "$sum"
