#!/usr/bin/env bash
# scripts/setup.sh — install what is missing (Debian 12 packages), configure and build mase-cpp.
#
#   scripts/setup.sh            # build in ./build (Release; CUDA when nvcc and a GPU are found)
#   MASE_CUDA=ON scripts/setup.sh                     # compile the CUDA kernels anyway (CI)
#   MASE_CMAKE_ARGS="-DMASE_CUDA=OFF" scripts/setup.sh
#
# The first build compiles ~300 files: about 5 minutes on a quiet 2-core machine, up to 20 on
# a busy one (ccache, when installed, makes a rebuild of unchanged files seconds). Progress is
# one updating line on a terminal, a line every 10% otherwise; the full log is build/build.log.
# Idempotent and quiet when everything is already installed and built.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libopenblas-dev libtbb-dev            # GEMM, thread pool
  libdnnl-dev                           # oneDNN: the large fp32 GEMMs (runtime/cpu/onednn_gemm.h)
  libsentencepiece-dev libutf8proc-dev  # tokenizers (utf8proc: Unicode tables for WordPiece)
  doctest-dev libbenchmark-dev          # tests, benchmarks
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev   # CLI flags, JSON, TOML configs
  libsqlite3-dev libarchive-dev libcurl4-openssl-dev    # studies, tar.gz reading, download
  zlib1g-dev                            # crc32: Hyperband's brackets (search/halving.h)
  libpq-dev postgresql                  # studies in PostgreSQL; the test server (pg_server.sh)
  libopenmpi-dev openmpi-bin            # data-parallel training: mpirun -np N mase-train
  graphviz gnuplot-nox                  # graph drawings, plots
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# CUDA toolkit: used when present (it is on CI, at /usr/local/cuda); never required.
if [ -x /usr/local/cuda/bin/nvcc ]; then export PATH="/usr/local/cuda/bin:$PATH"; fi

if [ ! -f build/build.ninja ]; then
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${MASE_CUDA:+-DMASE_CUDA=$MASE_CUDA} \
    ${MASE_CMAKE_ARGS:-} >/dev/null
fi

# ninja's "[done/total] ..." lines -> "setup: building 40% (120/300 targets, 1:52)"
progress() {
  local start=$SECONDS next=0 line pct el
  while IFS= read -r line; do
    printf '%s\n' "$line" >>build/build.log
    [[ $line =~ ^\[([0-9]+)/([0-9]+)\] ]] || continue
    pct=$((100 * BASH_REMATCH[1] / BASH_REMATCH[2]))
    el=$(printf '%d:%02d' $(((SECONDS - start) / 60)) $(((SECONDS - start) % 60)))
    if [ -t 1 ]; then
      printf '\rsetup: building %3d%% (%s/%s targets, %s)' "$pct" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$el"
    elif ((pct >= next)); then
      printf 'setup: building %3d%% (%s/%s targets, %s)\n' "$pct" "${BASH_REMATCH[1]}" "${BASH_REMATCH[2]}" "$el"
      next=$((pct / 10 * 10 + 10))
    fi
  done
  [ -t 1 ] && printf '\n'
  return 0
}

echo "setup: building in build/ (first build: ~8-10 min on 2 quiet cores, longer busy; log: build/build.log)"
: >build/build.log
start=$SECONDS
set +e
cmake --build build -- -j"$(nproc)" 2>&1 | progress
status=${PIPESTATUS[0]}
set -e
if [ "$status" -ne 0 ]; then
  grep -E -A5 'error|FAILED' build/build.log | head -60
  echo "setup: build failed (full log: build/build.log)"
  exit 1
fi
echo "setup: build done in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
