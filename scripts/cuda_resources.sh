#!/usr/bin/env bash
# scripts/cuda_resources.sh — what each CUDA kernel costs the GPU in registers, spills and
# shared memory, read from ptxas (`-Xptxas -v`) on a machine WITHOUT a GPU.
#
#   scripts/cuda_resources.sh                    # every kernel of cuda/*.cu, spills first
#   scripts/cuda_resources.sh cuda/sdpa_backward_fused.cu
#
# Why: registers decide how many warps an SM holds (an H100 SM has 65,536: 128 registers a
# thread leave room for 2 blocks of 256 threads), and a kernel that needs more than its
# __launch_bounds__ allow spills to local memory — both invisible until a GPU run is slow.
# Compiling for sm_90 tells both here, before the GPU session. The compile flags are the CUDA
# build's own (build-cuda/ from scripts/gpu_pack.sh, else build/ configured with MASE_CUDA=ON).
# Prints one line per kernel: registers, spill stores/loads (bytes per thread), static shared
# memory, the kernel's name (demangled, namespaces cut); nothing is written to the tree.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "cuda_resources: no nvcc (the CUDA toolkit is needed)"; exit 2; }
dir=""
for d in build-cuda build; do
  if [ -f "$d/build.ninja" ] && grep -q 'CUDA_COMPILER__mase_cuda' "$d/build.ninja"; then dir=$d; break; fi
done
[ -n "$dir" ] || { echo "cuda_resources: no CUDA build (run scripts/gpu_pack.sh or MASE_CUDA=ON scripts/setup.sh)"; exit 2; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
# the build's nvcc command per .cu, its output sent nowhere and ptxas asked to report
ninja -C "$dir" -t commands mase_cuda | grep -E 'nvcc .* -c [^ ]+\.cu ' |
  sed -E 's/-MD -MT [^ ]+ -MF [^ ]+//; s/ -o [^ ]+$/ -o \/dev\/null -Xptxas -v/' > "$tmp/cmds"
if [ $# -gt 0 ]; then
  pattern=$(printf '%s\n' "$@" | sed 's#^#/#; s#$# #' | paste -sd'|')
  grep -E "$pattern" "$tmp/cmds" > "$tmp/cmds.some" || { echo "cuda_resources: no such file: $*"; exit 2; }
  mv "$tmp/cmds.some" "$tmp/cmds"
fi
(cd "$dir" && xargs -P "$(nproc)" -I{} sh -c '{} 2>&1' < "$tmp/cmds") > "$tmp/ptxas" || true
# ptxas prints, per kernel: "Compiling entry function 'NAME' for 'sm_90'", "... N bytes spill
# stores, M bytes spill loads", "Used R registers, ... S bytes smem ..."
awk '
  /Compiling entry function/ { match($0, /\047[^\047]+\047/); name = substr($0, RSTART + 1, RLENGTH - 2) }
  /bytes spill stores/ { st = $5; ld = $9 }
  /Used [0-9]+ registers/ {
    regs = $5; smem = 0
    if (match($0, /[0-9]+ bytes smem/)) smem = substr($0, RSTART, RLENGTH - 11)
    print regs, st + 0, ld + 0, smem, name
  }' "$tmp/ptxas" | c++filt |
  sed -E 's/mase::cuda:://g; s/\(anonymous namespace\):://g; s/[a-z_]+::([A-Z])/\1/g' |
  sort -k2,2nr -k1,1nr > "$tmp/table"
printf '%5s %6s %6s %6s  %s\n' regs spillS spillL smem kernel
awk '{ printf "%5d %6d %6d %6d  ", $1, $2, $3, $4; $1 = $2 = $3 = $4 = ""; sub(/^ +/, ""); print substr($0, 1, 120) }' "$tmp/table"
n=$(wc -l < "$tmp/table"); s=$(awk '$2 > 0 || $3 > 0' "$tmp/table" | wc -l)
echo "cuda_resources: $n kernels for sm_90, $s of them spill (bytes per thread, to local memory)"
