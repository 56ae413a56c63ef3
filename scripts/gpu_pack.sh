#!/usr/bin/env bash
# scripts/gpu_pack.sh — prepare a lent GPU machine's one long call (run it HERE, then call the
# device tool with carry [".dev"] and the command `bash scripts/gpu_run.sh`; see that script).
#
# The GPU machine has nvcc, CMake and cuBLAS but none of our Debian libraries and no package
# registry, so everything is built here: the CUDA build (build-cuda/), the test binaries and
# tools stripped into .dev/bin, the shared libraries they need that the GPU machine lacks in
# .dev/lib (glibc, libstdc++ and CUDA's own stay behind), a small IMDb archive (2,000 training
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
# every library ldd resolves, except what every Linux and the CUDA install already have
ldd .dev/bin/* | awk '/=> \// { print $3 }' | sort -u |
  grep -v -E '/(libc|libm|libdl|librt|libpthread|libgcc_s|libstdc\+\+|ld-linux[^/]*)\.so|libcu(blas|blasLt|dart|da)\.so' |
  while read -r lib; do cp -L "$lib" .dev/lib/; done
# the device tool carries at most 64 MiB: every binary holds all our device code (~16 MB
# stripped), so binaries and libraries travel xz-compressed (~4x; gpu_run.sh unpacks them)
xz -T2 "-${XZ_LEVEL:-3}" -f .dev/bin/* .dev/lib/*
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
echo "gpu_pack: now call the device tool: carry [\".dev\"], command \"bash scripts/gpu_run.sh\""
