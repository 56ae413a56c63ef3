#!/usr/bin/env bash
# scripts/sanitize.sh — the test suite built with clang under AddressSanitizer + UndefinedBehavior
# Sanitizer (LeakSanitizer included), CPU only, -O1, and run: any report fails the run. The same
# build (build-san/) holds the libFuzzer targets of fuzz/ (scripts/fuzz.sh runs them).
#
#   scripts/sanitize.sh                      # build the test binaries + fuzz targets, run ctest
#   MASE_SAN_TESTS='^(models|hostile):' scripts/sanitize.sh   # a subset (ctest -R regex)
#
# Only the doctest suites run here (the tools' command-line tests need the tools, which this
# build does not compile). Measured times: docs/developing.md, "Continuous integration".
set -euo pipefail
cd "$(dirname "$0")/.."

# clang 16 (Debian 12 has it beside the default 14): 14 cannot capture structured bindings in
# lambdas, which C++20 allows and the code uses. libclang-rt-16-dev: libFuzzer, the sanitizers.
if ! command -v clang++-16 >/dev/null || ! dpkg-query -W -f='${Status}' libclang-rt-16-dev 2>/dev/null | grep -q "install ok installed"; then
  echo "sanitize: installing clang-16 (libFuzzer and the sanitizers' runtime)"
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends clang-16 libclang-rt-16-dev >/dev/null
fi

san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
if [ ! -f build-san/build.ninja ]; then
  CC=clang-16 CXX=clang++-16 cmake -S . -B build-san -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DMASE_CUDA=OFF -DMASE_FUZZ=ON \
    -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g" \
    -DCMAKE_CXX_FLAGS="$san -fsanitize=fuzzer-no-link" \
    -DCMAKE_EXE_LINKER_FLAGS="$san" >/dev/null
fi
suites=(runtime autograd models train data quant graph search hostile)
fuzzers=(safetensors config_json compress_config prune_config wordpiece sentencepiece token_cache
         study_space optuna_distribution space_spec train_config command_output)
targets=("${suites[@]/#/test_}" "${fuzzers[@]/#/fuzz_}")
start=$SECONDS
echo "sanitize: building ${#targets[@]} targets in build-san/ (log: build-san/build.log)"
if ! ninja -C build-san -j"$(nproc)" "${targets[@]}" >build-san/build.log 2>&1; then
  grep -E -A5 'error|FAILED' build-san/build.log | head -60
  echo "sanitize: build failed (full log: build-san/build.log)"
  exit 1
fi
echo "sanitize: built in $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1:abort_on_error=0
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
start=$SECONDS
set +e
ctest --test-dir build-san -j"$(nproc)" --output-on-failure --timeout 1200 \
  -R "${MASE_SAN_TESTS:-^($(IFS='|'; echo "${suites[*]}")):}" 2>&1 | tee build-san/ctest.log
status=${PIPESTATUS[0]}
set -e
echo "sanitize: ctest under ASan + UBSan took $(((SECONDS - start) / 60)) min $(((SECONDS - start) % 60)) s"
exit "$status"
