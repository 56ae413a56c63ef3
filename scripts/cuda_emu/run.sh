#!/usr/bin/env bash
# scripts/cuda_emu/run.sh — runs the CUDA softmax, flash-attention, LayerNorm, column-sum and
# block-format kernels ON THE CPU, through a host emulation of the CUDA features they use (emu.h), against
# references computed in double (attn_check.cpp, cols_check.cpp), and the dropout row maps of
# the fused attention and LayerNorm kernels against the full tensor's rows (rows_check.cpp).
# For sessions without a GPU: it is how these kernels were checked before they ever ran on
# one. It catches index arithmetic, masking, missing barriers or waits, unaligned fragment
# loads, and wrong math; it says nothing about speed, and it is not a substitute for the
# CPU == CUDA tests on a real GPU (scripts/gpu/attn.sh).
#
#   bash scripts/cuda_emu/run.sh            # softmax, sdpa (fp32 FMA), tc (tensor cores),
#                                           # bwd (the backward variants, determinism),
#                                           # cols (column sums, embedding backward),
#                                           # rows (dropout row maps: sdpa, LayerNorm),
#                                           # quant (block formats, bitwise vs the CPU)
#   bash scripts/cuda_emu/run.sh sdpa       # one part; about 20 s each (rows 30 s) on 2 cores
# Needs g++ with C++20 (std::barrier); no CUDA toolkit. Exit status: 0 when every check passes.
set -euo pipefail
repo="$(cd "$(dirname "$0")/../.." && pwd)"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
python3 "$repo/scripts/cuda_emu/prep.py" "$repo" "$work/src" cuda/block_reduce.cuh \
  cuda/softmax_rows.cuh cuda/softmax.cu cuda/softmax_ladder.cu cuda/sdpa_tile.cuh \
  cuda/sdpa_mma.cuh cuda/sdpa_forward.cuh cuda/sdpa_forward.cu cuda/sdpa_forward_tc.cu \
  cuda/sdpa_backward.cuh cuda/sdpa_backward.cu cuda/sdpa_backward_fused.cu \
  cuda/sdpa_backward_tc.cu cuda/column_sums.cuh cuda/reduce.cu cuda/layer_norm.cu \
  cuda/embedding.cu cuda/quant_block.cu cuda/quant_scalar.cu
for check in attn_check cols_check rows_check quant_check; do
  g++ -std=c++20 -O1 -pthread -DMASE_HAS_CUDA -I"$repo/scripts/cuda_emu" -I"$work/src" -I"$repo" \
    -x c++ "$repo/scripts/cuda_emu/$check.cpp" -o "$work/$check"
done
if [ $# -eq 0 ]; then set -- softmax sdpa tc bwd cols rows quant; fi
for part in "$@"; do
  case "$part" in
    cols) "$work/cols_check" cols ;;
    rows) "$work/rows_check" rows ;;
    quant) "$work/quant_check" quant ;;
    *) "$work/attn_check" "$part" ;;
  esac
done
