#!/usr/bin/env bash
# scripts/cuda_emu/run.sh — runs the CUDA softmax, flash-attention, LayerNorm, column-sum,
# block-format, dtype-conversion and bf16-rounding kernels ON THE CPU, through a host emulation
# of the CUDA features they use (emu.h), against references computed in double (attn_check.cpp,
# cols_check.cpp), the dropout row maps of the fused attention and LayerNorm kernels against
# the full tensor's rows (rows_check.cpp), and the CPU's own functions bit for bit
# (quant_check.cpp, convert_check.cpp).
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
#                                           # convert (cuda/copy.cu's conversions, fill, iota,
#                                           # copies; matmul_bf16.cu's rounding to bf16 and its
#                                           # GEMMs' operands on an emulated cuBLAS; bitwise)
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
  cuda/embedding.cu cuda/quant_block.cu cuda/quant_scalar.cu cuda/copy.cu cuda/matmul_bf16.cu
for check in attn_check cols_check rows_check quant_check convert_check; do
  g++ -std=c++20 -O1 -pthread -DMASE_HAS_CUDA -I"$repo/scripts/cuda_emu" -I"$work/src" -I"$repo" \
    -x c++ "$repo/scripts/cuda_emu/$check.cpp" -o "$work/$check"
done
if [ $# -eq 0 ]; then set -- softmax sdpa tc bwd cols rows quant convert; fi
for part in "$@"; do
  case "$part" in
    cols) "$work/cols_check" cols ;;
    rows) "$work/rows_check" rows ;;
    quant) "$work/quant_check" quant ;;
    convert)  # the bf16 GEMMs once on each path (matmul_bf16.cu reads MASE_BF16_GEMM once)
      env -u MASE_BF16_GEMM "$work/convert_check" convert
      MASE_BF16_GEMM=fast "$work/convert_check" gemm-fast ;;
    *) "$work/attn_check" "$part" ;;
  esac
done
