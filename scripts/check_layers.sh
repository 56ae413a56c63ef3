#!/usr/bin/env bash
# scripts/check_layers.sh — fails when an #include breaks the layer rules of docs/developing.md.
#
#   scripts/check_layers.sh [ROOT]     # prints each offending include; exit 1 if any
#   scripts/check_layers.sh --self-test  # the checker catches a planted bad include of each rule
#
# The rules, checked on every "…" include of the source folders (tests/ and bench/ may include
# anything):
#   1. Folders form a stack: tools → search → graph → train → quant → models → data → autograd
#      → runtime → cuda. A file includes only its own folder and the ones below it.
#   2. Inside runtime/ (and cuda/), from the bottom up:
#        base      runtime/{error,dtype,shape,device,philox,gemm_precision}.h — plain definitions
#        kernels   runtime/kernels/<stem>.h — one contract per kernel stem: both backends'
#                  signatures; includes base and other contracts only
#        backends  runtime/cpu/ and cuda/ — peers: each includes the contracts, base and its own
#                  folder, never the other (runtime/cpu/ may also use runtime/{parallel,
#                  random,allocator,cpu_features}.h: its thread pool, generators, scratch
#                  memory and the CPU's feature flags)
#        core      runtime/*.cpp|h (Tensor, Storage, allocator, …): anything in runtime/, and
#                  cuda/memory.h (device memory) only
#   3. Who calls kernels: runtime/kernels/ is included only by the backends, runtime's core,
#      the ops (autograd/ops/, quant/), the optimizer code (train/adamw.*, train/clip_grad_norm.*,
#      train/data_parallel.*: the gradient all-reduce) — and tests/, bench/. runtime/cpu/ and
#      cuda/ headers are included by nobody else.
set -uo pipefail
if [ "${1:-}" = "--self-test" ]; then
  # One tree per rule, each with one bad include: each must fail; a clean tree must pass.
  self="$(cd "$(dirname "$0")" && pwd)/$(basename "$0")"
  tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
  plant() {  # plant NAME FILE INCLUDE: a tree whose FILE includes INCLUDE
    mkdir -p "$tmp/$1/$(dirname "$2")"; printf '#include "%s"\n' "$3" >"$tmp/$1/$2"
  }
  plant twin cuda/softmax.cu runtime/cpu/softmax.h
  plant up models/bert.cpp train/trainer.h
  plant kernel models/bert.cpp runtime/kernels/softmax.h
  plant contract runtime/kernels/softmax.h runtime/tensor.h
  plant core runtime/tensor.cpp cuda/softmax.cu
  plant clean autograd/ops/softmax.cpp runtime/kernels/softmax.h
  fails=0
  for t in twin up kernel contract core; do
    if bash "$self" "$tmp/$t" >/dev/null; then echo "check_layers: missed the planted '$t' include"; fails=1; fi
  done
  bash "$self" "$tmp/clean" >/dev/null || { echo "check_layers: a clean tree failed"; fails=1; }
  [ "$fails" = 0 ] && echo "check_layers: self-test ok"
  exit "$fails"
fi
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
cd "$root" || exit 2
rank() {
  case "$1" in
    cuda) echo 0 ;; runtime) echo 1 ;; autograd) echo 2 ;; data) echo 3 ;; models) echo 4 ;;
    quant) echo 5 ;; train) echo 6 ;; graph) echo 7 ;; search) echo 8 ;; tools) echo 9 ;;
    *) echo 99 ;;
  esac
}
# cuda is below runtime's core but beside runtime/cpu: its rank only says "may not include up"
bad=0
report() { echo "check_layers: $1: includes \"$2\" ($3)"; bad=1; }
while IFS= read -r file; do
  from_dir=${file%%/*}
  while IFS= read -r inc; do
    to_dir=${inc%%/*}
    [ "$(rank "$to_dir")" = 99 ] && continue  # not a project folder (a system or local header)
    case "$file" in
      runtime/kernels/*)
        case "$inc" in runtime/kernels/*|runtime/error.h|runtime/dtype.h|runtime/shape.h|runtime/device.h|runtime/philox.h|runtime/gemm_precision.h) ;;
          *) report "$file" "$inc" "a contract includes only base headers and contracts" ;; esac ;;
      runtime/cpu/*)
        case "$inc" in runtime/cpu/*|runtime/kernels/*|runtime/error.h|runtime/dtype.h|runtime/shape.h|runtime/device.h|runtime/philox.h|runtime/gemm_precision.h|runtime/parallel.h|runtime/random.h|runtime/allocator.h|runtime/cpu_features.h) ;;
          *) report "$file" "$inc" "the CPU backend includes contracts, base headers and runtime/cpu/" ;; esac ;;
      cuda/*)
        case "$inc" in cuda/*|runtime/kernels/*|runtime/error.h|runtime/dtype.h|runtime/shape.h|runtime/device.h|runtime/philox.h|runtime/gemm_precision.h) ;;
          *) report "$file" "$inc" "the CUDA backend includes contracts, base headers and cuda/" ;; esac ;;
      runtime/*)
        case "$inc" in runtime/cpu/*|runtime/*|cuda/memory.h) ;;
          *) report "$file" "$inc" "runtime's core reaches cuda/ through cuda/memory.h only" ;; esac ;;
      *)
        if [ "$(rank "$to_dir")" -gt "$(rank "$from_dir")" ]; then
          report "$file" "$inc" "$from_dir/ is below $to_dir/: arrows point down only"
        fi
        case "$inc" in
          runtime/cpu/*|cuda/*) report "$file" "$inc" "backend headers are private to runtime/" ;;
          runtime/kernels/*)
            case "$file" in autograd/ops/*|quant/*|train/adamw.*|train/clip_grad_norm.*|train/data_parallel.*) ;;
              *) report "$file" "$inc" "only ops and the optimizer call kernels" ;; esac ;;
        esac ;;
    esac
  done < <(grep -oE '^#include "[^"]+"' "$file" | sed -E 's/^#include "(.*)"$/\1/')
done < <(find cuda runtime autograd data models quant train graph search tools 2>/dev/null \
              -type f \( -name '*.h' -o -name '*.cpp' -o -name '*.cu' -o -name '*.cuh' \) | sort)
if [ "$bad" = 0 ]; then echo "check_layers: ok"; fi
exit "$bad"
