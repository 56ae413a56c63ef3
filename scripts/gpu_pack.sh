#!/usr/bin/env bash
# scripts/gpu_pack.sh — prepare a lent GPU machine's one long call (run it HERE, then call the
# device tool with carry [".dev"] and the command `bash scripts/gpu_run.sh`; see that script).
#
# The GPU machine has nvcc, CMake and cuBLAS but none of our Debian libraries and no package
# registry, so everything is built here: the CUDA build (build-cuda/), the test binaries and
# tools stripped into bin/, the shared libraries they need that the GPU machine lacks in lib/
# (glibc, libstdc++ and CUDA's own stay behind), both in .dev/pack.tar.xz, which gpu_run.sh
# unpacks into .dev/bin and .dev/lib; a small IMDb archive (2,000 training
# and 1,000 test reviews in the official layout) in .dev/data for mase-train --device cuda.
# .dev/ is git-ignored through .git/info/exclude; the device tool carries at most 64 MiB.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="/usr/local/cuda/bin:$PATH"
command -v nvcc >/dev/null || { echo "gpu_pack: no nvcc (the CUDA toolkit is needed here)"; exit 2; }
bins=(test_runtime test_autograd test_models test_train test_quant test_graph mase-train mase-bench
      mase-graph mase-search)
# more binaries a scripts/gpu/*.sh part needs: GPU_PACK_EXTRA="test_search"
read -r -a extra <<< "${GPU_PACK_EXTRA:-}"
bins+=("${extra[@]}")
if [ ! -f build-cuda/build.ninja ]; then
  cmake -S . -B build-cuda -G Ninja -DCMAKE_BUILD_TYPE=Release -DMASE_CUDA=ON \
    -DCMAKE_CUDA_ARCHITECTURES=90 >/dev/null
fi
ninja -C build-cuda "${bins[@]}"
exclude=$(git rev-parse --git-path info/exclude)  # .git is a file in a worktree
mkdir -p "$(dirname "$exclude")"; grep -qx '/.dev/' "$exclude" 2>/dev/null || echo '/.dev/' >> "$exclude"
rm -rf .dev && mkdir -p .dev/bin .dev/lib .dev/data/imdb
for b in "${bins[@]}"; do cp "build-cuda/bin/$b" .dev/bin/ && strip .dev/bin/"$b"; done
pwd > .dev/srcdir  # test fixtures are found by this absolute path, compiled in
git rev-parse --short HEAD > .dev/commit; git status --porcelain | grep -q . && echo "+uncommitted" >> .dev/commit
# OpenBLAS is not linked but opened with dlopen (runtime/cpu/blas.cpp: the configured path,
# then libopenblas.so.0 on the library path), so ldd does not see it: without it every CPU
# matmul (the CPU side of each CPU == CUDA case, all of search_scale) throws on a machine that
# lacks it. It travels as .dev/lib/libopenblas.so.0, with its libgfortran and libquadmath.
blas=$(sed -n 's/^MASE_OPENBLAS_LIBRARY:FILEPATH=//p' build-cuda/CMakeCache.txt)
[ -f "$blas" ] || { echo "gpu_pack: no OpenBLAS at '$blas' (build-cuda/CMakeCache.txt)"; exit 2; }
cp -L "$blas" .dev/lib/libopenblas.so.0
# every library ldd resolves, except what every Linux and the CUDA install already have
# (glibc's own libraries, libresolv too: it calls GLIBC_PRIVATE functions of the libc.so.6 of
# its own release, and the GPU machine's glibc is another)
ldd .dev/bin/* "$blas" | awk '/=> \// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libresolv|libutil|libanl|libnsl|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|libcu(blas|blasLt|dart|da)\.so' |
  while read -r lib; do cp -L "$lib" .dev/lib/; done
# the device tool carries at most 64 MiB, the repository's tracked files included (~6 MB):
# every binary holds all our device code (~16 MB stripped), so binaries and libraries travel
# as ONE xz stream whose dictionary spans the whole tar (~250 MB -> ~38 MB: each binary's copy
# of the device code is found again in the next; compressed one by one they were 62 MB, over
# the limit with the tracked files). One thread, ~1.5 min; gpu_run.sh unpacks it.
tar -C .dev -cf - bin lib | xz -T1 --lzma2="preset=${XZ_LEVEL:-6},dict=256MiB" > .dev/pack.tar.xz
rm -rf .dev/bin .dev/lib
# a small IMDb in the official layout, for mase-train --device cuda
python3 - "${MASE_DATA_DIR:-../shared/data}/imdb/aclImdb_v1.tar.gz" .dev/data/imdb/aclImdb_v1.tar.gz <<'PY'
import sys, tarfile
src, dst = sys.argv[1], sys.argv[2]
want = {("train", "pos"): 1000, ("train", "neg"): 1000, ("test", "pos"): 500, ("test", "neg"): 500}
with tarfile.open(src, "r:gz") as tin, tarfile.open(dst, "w:gz") as tout:
    for m in tin:
        parts = m.name.split("/")
        key = tuple(parts[1:3]) if len(parts) == 4 else None
        if m.isfile() and key in want and want[key] > 0 and parts[3].endswith(".txt"):
            want[key] -= 1
            tout.addfile(m, tin.extractfile(m))
PY
du -sh .dev | sed 's/^/gpu_pack: .dev holds /'
# what the device tool would carry: the tracked and untracked-not-ignored files, and .dev
git ls-files -z --cached --others --exclude-standard | python3 -c '
import os, sys
files = [f for f in sys.stdin.buffer.read().split(b"\0") if f and os.path.isfile(f)]
tree = sum(os.path.getsize(f) for f in files)
dev = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(".dev") for f in fs)
total = (tree + dev) / 2**20
print(f"gpu_pack: the call carries {total:.1f} MiB (tree {tree / 2**20:.1f}, .dev {dev / 2**20:.1f}) of the 64 MiB limit")
sys.exit(2 if total > 63 else 0)' || { echo "gpu_pack: over the device tool's 64 MiB: the call would be refused"; exit 2; }
echo "gpu_pack: now call the device tool: carry [\".dev\"], command \"bash scripts/gpu_run.sh\""
