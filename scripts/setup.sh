#!/usr/bin/env bash
# scripts/setup.sh — install what is missing (Debian 12 packages), configure and build mase-cpp.
#
#   scripts/setup.sh            # build in ./build (Release, CUDA when nvcc is found)
#   MASE_CMAKE_ARGS="-DMASE_CUDA=OFF" scripts/setup.sh
#
# Idempotent and quiet when everything is already installed and built.
set -euo pipefail
cd "$(dirname "$0")/.."

PACKAGES=(
  build-essential cmake ninja-build pkg-config git ca-certificates
  libopenblas-dev libtbb-dev            # GEMM, thread pool
  libsentencepiece-dev libutf8proc-dev  # tokenizers (utf8proc: Unicode tables for WordPiece)
  doctest-dev libbenchmark-dev          # tests, benchmarks
  libcli11-dev nlohmann-json3-dev libtomlplusplus-dev   # CLI flags, JSON, TOML configs
  libsqlite3-dev libarchive-dev libcurl4-openssl-dev    # studies, tar.gz reading, download
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
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release ${MASE_CMAKE_ARGS:-} >/dev/null
fi
echo "setup: building in build/ (log: build/build.log)"
if ! cmake --build build -- -j"$(nproc)" >build/build.log 2>&1; then
  grep -E -A5 'error|FAILED' build/build.log | head -60
  echo "setup: build failed (full log: build/build.log)"
  exit 1
fi
