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
# GPU_RUN_BUDGET (default 560 s) caps the whole script: each part, and each step of core and
# memcheck, gets at most what is left of it, and a part with under 15 s left is skipped with
# a row, so the summary and logs.tar.gz are written before the device tool's 600 s are up
# (lower it when the call's timeout_s is lower).
set -uo pipefail
cd "$(dirname "$0")/.."
export MASE_RUN_DEADLINE=$(( $(date +%s) + ${GPU_RUN_BUDGET:-560} ))
export OUT="${OUT:-/tmp/mase-gpu-out}" LOGS=/tmp/mase-logs BIN="$PWD/.dev/bin" DATA="$PWD/.dev/data"
mkdir -p "$OUT" "$LOGS"
left() { echo $(( MASE_RUN_DEADLINE - $(date +%s) )); }
parts=("$@")
if ((${#parts[@]} == 0)); then
  parts=(core)
  for s in scripts/gpu/*.sh; do [ -f "$s" ] && parts+=("$(basename "$s" .sh)"); done
fi
# test fixtures are found by the absolute path compiled in (the checkout gpu_pack.sh built)
src=$(cat .dev/srcdir 2>/dev/null || echo /work/main)
[ -e "$src" ] || { mkdir -p "$(dirname "$src")" && ln -s "$PWD" "$src"; }
# gpu_pack.sh packed bin/ and lib/ into one .dev/pack.tar.xz (older packs: one .xz a file)
if [ -f .dev/pack.tar.xz ]; then
  if command -v xz >/dev/null; then tar -C .dev -xJf .dev/pack.tar.xz
  else python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(".dev")' .dev/pack.tar.xz; fi &&
    rm -f .dev/pack.tar.xz || echo "gpu_run: could not unpack .dev/pack.tar.xz" >&2
fi
unpack() {  # unxz, or Python's lzma where xz-utils is missing
  if command -v unxz >/dev/null; then unxz -f "$1"
  else python3 -c 'import lzma, os, sys; open(sys.argv[1][:-3], "wb").write(lzma.open(sys.argv[1]).read()); os.remove(sys.argv[1])' "$1"; fi
}
for x in .dev/lib/*.xz .dev/bin/*.xz; do [ -f "$x" ] && unpack "$x"; done
chmod +x .dev/bin/* 2>/dev/null
# python3 (PyTorch) runs with the library path it came with, not our Debian libraries (libz,
# libssl, libffi, ... of another distribution, ahead of its own): a wrapper first on PATH
py=$(command -v python3)
if [ -n "$py" ]; then
  mkdir -p /tmp/mase-py
  if [ -n "${LD_LIBRARY_PATH+set}" ]; then
    printf '#!/bin/bash\nexport LD_LIBRARY_PATH=%q\nexec %q "$@"\n' "$LD_LIBRARY_PATH" "$py"
  else printf '#!/bin/bash\nunset LD_LIBRARY_PATH\nexec %q "$@"\n' "$py"; fi > /tmp/mase-py/python3
  chmod +x /tmp/mase-py/python3
  export PATH="/tmp/mase-py:$PATH"
fi
ldcache=$(ldconfig -p 2>/dev/null)
cublas=$(awk '/libcublas\.so/ { print $NF; exit }' <<< "$ldcache")
[ -n "$cublas" ] || cublas=$(ls /usr/local/cuda/lib64/libcublas.so* 2>/dev/null | head -1)
# NCCL is opened with dlopen (cuda/allreduce.cu); where the system has none, PyTorch's wheel does
nccl_dir=""
grep -q 'libnccl\.so' <<< "$ldcache" ||
  nccl_dir=$(python3 -c 'import importlib.util as u, os; s = u.find_spec("nvidia.nccl"); print(next(os.path.join(p, "lib") for p in s.submodule_search_locations))' 2>/dev/null)
export LD_LIBRARY_PATH="$PWD/.dev/lib${cublas:+:$(dirname "$cublas")}${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}${nccl_dir:+:$nccl_dir}"
export PYTHONUNBUFFERED=1
sum="$OUT/summary.md"
row() { echo "| $1 | $2 |" >> "$sum"; }
# `step NAME SECONDS CMD...`: runs CMD under a timeout, its output in $LOGS/NAME.log; prints
# "exit N, M s" for the summary row (124 = timed out).
# The timeout is cut to what is left of GPU_RUN_BUDGET; with under 5 s left the step is skipped.
step() {
  local name=$1 secs=$2 t0=$SECONDS rc left
  shift 2
  left=$(( MASE_RUN_DEADLINE - $(date +%s) ))
  if ((left < 5)); then echo "skipped: the call's budget is spent" > "$LOGS/$name.log"; echo "skipped (budget)"; return; fi
  ((secs > left)) && secs=$left
  timeout -k 5 "$secs" "$@" > "$LOGS/$name.log" 2>&1
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
  rm -rf /tmp/run-tiny  # mase-train refuses a non-empty --out (a rerun on a warm machine)
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
  if (( $(left) < 15 )); then row "$p" "skipped: $(left) s left of GPU_RUN_BUDGET"; continue; fi
  if [ "$p" = core ]; then core
  elif [ "$p" = memcheck ]; then memcheck
  elif [ -f "scripts/gpu/$p.sh" ]; then
    # a part's own timeouts may add up to more than is left: it is stopped at the budget
    timeout -k 10 "$(left)" bash "scripts/gpu/$p.sh" > "$LOGS/part-$p.log" 2>&1
    rc=$?
    ((rc == 124 || rc == 137)) && row "scripts/gpu/$p.sh" "stopped at GPU_RUN_BUDGET after $((SECONDS - t0)) s (exit $rc)"
    ((rc != 0 && rc != 124 && rc != 137)) && row "scripts/gpu/$p.sh" "exit $rc"
  else row "$p" "no such part (core or scripts/gpu/<name>.sh)"
  fi
  echo "part $p: $((SECONDS - t0)) s" >&2
  row "part $p" "$((SECONDS - t0)) s"
  save_logs
done
cat "$sum"
