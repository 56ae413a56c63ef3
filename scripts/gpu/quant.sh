#!/usr/bin/env bash
# scripts/gpu/quant.sh — the GPU checks of the quantization work (issue 22 items 3-5), run ON the
# device machine from the repo root by scripts/gpu_run.sh (or by hand) with:
#   BIN   folder of the test binaries, mase-train and mase-bench (e.g. .dev/bin)
#   OUT   results folder: one markdown row per step is appended to $OUT/summary.md
#   LOGS  log folder (one log per step)
#   DATA  a small IMDb folder for mase-train --data-dir (e.g. .dev/data)
# Steps, each under its own timeout (20 s in all on an H100, 2026-11-26; the timeouts add up to
# 450 s at worst, inside the device tool's 600 s per call):
#   1. the CPU == CUDA cases of test_quant: every format, MXINT8 packing, prune masks, QAT step
#   2. test_quant's MXINT8 and prune cases with the GPU present (incl. the old CPU == CUDA case)
#   3. mase-train --device cuda, 20 steps of QAT in 8-bit integer, then 20 with activation pruning
#      and MXINT8 fake quantization (--compress), then --mxint8-weights (the packed Linear), LoRA,
#      plain fp32; mase-search --device cuda (2 trials) and sweep-width (2 PTQ points)
#   4. the GPU memory of bert-small and bert-base, fp32 vs MXINT8 weights (mase-bench counters)
#   5. mase-bench --suite gpu-quant (each quantizer vs the D2D copy, MXINT8 pack/unpack, the MXINT8
#      Linear vs cuBLAS), short minimum times
#   6. bench/torch_gpu_quant.py: PyTorch's fake quantization and F.linear at the same shapes
set -uo pipefail
BIN="${BIN:-.dev/bin}"
OUT="${OUT:-/tmp/mase-gpu-out}"
LOGS="${LOGS:-/tmp/mase-logs}"
DATA="${DATA:-.dev/data}"
DEVICE="${DEVICE:-cuda}"  # DEVICE=cpu checks the script itself on a machine without a GPU
mkdir -p "$OUT" "$LOGS"
sum="$OUT/summary.md"
row() { echo "| $1 | $2 |" >> "$sum"; }
# doctest's summary line without its bars (they would split the table's cells):
# "test cases: 9, 9 passed, 0 failed, 0 skipped"
cases() { grep -E '^\[doctest\] test cases' "$1" | tail -1 | sed -e 's/^\[doctest\] //' -e 's/ *| */, /g'; }
t0=$SECONDS

# 1 + 2. tests
timeout 60 "$BIN/test_quant" -tc='*CUDA*,quant_elem*' > "$LOGS/quant-cuda-tests.log" 2>&1
row "test_quant *CUDA*: every format, mxint8 paths and Linear, prune masks, QAT step" \
    "exit $?; $(cases "$LOGS/quant-cuda-tests.log"); $(grep -c MASE_SKIPPED "$LOGS/quant-cuda-tests.log") skipped"
timeout 30 "$BIN/test_quant" -tc='mxint8*,prune*,quantize*' > "$LOGS/quant-mxint8-prune.log" 2>&1
row "test_quant: mxint8 / prune / quantize cases with the GPU present" \
    "exit $?; $(cases "$LOGS/quant-mxint8-prune.log")"

# 3. mase-train on the GPU through the quantizers (QAT), pruning and packed MXINT8 weights
cfg="$LOGS/configs"
mkdir -p "$cfg"
cat > "$cfg/int8.toml" <<'TOML'
by = "type"
[default.config]
name = "integer"
data_in_width = 8
data_in_frac_width = 4
weight_width = 8
weight_frac_width = 4
bias_width = 8
bias_frac_width = 4
TOML
cat > "$cfg/compress.toml" <<'TOML'
[quantize]
by = "type"
[quantize.default.config]
name = "mxint8"
[prune.weight]
sparsity = 0.3
method = "l1-norm"
scope = "global"
[prune.activation]
sparsity = 0.1
method = "l1-norm"
scope = "local"
TOML
train() {  # train <name> <extra flags...>
  local name="$1"; shift
  rm -rf "/tmp/run-quant-$name"  # mase-train refuses a non-empty --out (a rerun on a warm machine)
  timeout 45 "$BIN/mase-train" --model bert-tiny --data imdb --data-dir "$DATA" --device "$DEVICE" \
    --cache-dir /tmp/mase-cache --train-subset 512 --test-subset 256 --max-steps 20 --batch-size 16 \
    --max-len 128 --log-every 5 --out "/tmp/run-quant-$name" "$@" > "$LOGS/train-$name.log" 2>&1
  local rc=$?
  row "mase-train bert-tiny --device $DEVICE --max-steps 20 $*" \
      "exit $rc; $(grep -E '^done|accuracy' "$LOGS/train-$name.log" | tail -1 | cut -c1-120)"
}
train int8 --quant "$cfg/int8.toml"
train compress --compress "$cfg/compress.toml"
train mxint8-weights --mxint8-weights
train lora --lora-rank 8  # LoRA adapters on the GPU (issue 23: "works with LoRA, QAT, pruning")
train plain               # the model the width sweep below quantizes
# the searches on the GPU (--device since 2026-11-28): two trials of the Lab 2 space, then two
# points of Lab 1.1's width sweep (PTQ) of the plain run
t0=$SECONDS
rm -rf /tmp/gpu-search /tmp/gpu-sweep
timeout 90 "$BIN/mase-search" --device "$DEVICE" --sampler random --trials 2 --max-steps 5 \
  --train-subset 256 --test-subset 128 --batch-size 16 --max-len 64 --data-dir "$DATA" \
  --cache-dir /tmp/mase-cache --dir /tmp/gpu-search > "$LOGS/search-gpu.log" 2>&1
row "mase-search --device $DEVICE, 2 trials" "exit $?; $((SECONDS - t0)) s; $(grep -E '^best' "$LOGS/search-gpu.log" | cut -c1-120)"
t0=$SECONDS
timeout 90 "$BIN/mase-search" sweep-width --model-dir /tmp/run-quant-plain --device "$DEVICE" \
  --widths 4,8 --curves ptq --test-subset 128 --data-dir "$DATA" --cache-dir /tmp/mase-cache \
  --dir /tmp/gpu-sweep > "$LOGS/sweep-gpu.log" 2>&1
row "mase-search sweep-width --device $DEVICE (PTQ, widths 4 and 8)" "exit $?; $((SECONDS - t0)) s; $(grep -E '^point' "$LOGS/sweep-gpu.log" | tail -2 | tr '\n' ';' | cut -c1-160)"

# 4. memory: fp32 weights vs packed MXINT8 on the GPU (allocator and cudaMemGetInfo)
timeout 60 "$BIN/mase-bench" --suite gpu-quant --benchmark_filter='gpu-quant/memory' \
  --benchmark_min_time=0.01 > "$LOGS/quant-memory.txt" 2>&1
row "GPU memory, fp32 vs MXINT8 weights (bert-small, bert-base)" \
    "exit $?; $(grep -E 'memory/' "$LOGS/quant-memory.txt" | sed -E 's/ +/ /g; s/\|/,/g' | tr '\n' ';' | cut -c1-600)"

# 5. the benchmark suite
plot=()  # Lab 4.3's figure on the GPU, where the machine has gnuplot
command -v gnuplot > /dev/null && plot=(--plot "$OUT/lab43-gpu-quant.svg")
timeout 120 "$BIN/mase-bench" --suite gpu-quant --benchmark_filter='-gpu-quant/memory' \
  --benchmark_min_time=0.01 "${plot[@]}" > "$LOGS/gpu-quant-bench.txt" 2>&1
row "mase-bench --suite gpu-quant" "exit $?; $(grep -c 'gpu-quant/' "$LOGS/gpu-quant-bench.txt") lines, table in logs"
{ echo; echo '```'; grep -E 'gpu-quant/|Benchmark|---' "$LOGS/gpu-quant-bench.txt" | cut -c1-200; echo '```'; } >> "$sum"
# 6. PyTorch's figures for the same jobs on the same GPU (where torch is installed)
if python3 -c 'import torch; assert torch.cuda.is_available()' 2> /dev/null; then
  timeout 45 python3 bench/torch_gpu_quant.py --reps 10 --no-compile > "$LOGS/torch-gpu-quant.txt" 2>&1
  row "PyTorch, same shapes (bench/torch_gpu_quant.py --no-compile)" "exit $?; table below"
  { echo; echo '```'; cut -c1-160 "$LOGS/torch-gpu-quant.txt"; echo '```'; } >> "$sum"
else
  row "PyTorch, same shapes (bench/torch_gpu_quant.py)" "skipped: no torch with CUDA here"
fi
row "scripts/gpu/quant.sh total" "$((SECONDS - t0)) s"
