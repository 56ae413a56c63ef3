#!/usr/bin/env bash
# scripts/fuzz.sh — runs each libFuzzer target of fuzz/ for a bounded time, seeded with the
# hostile corpus of fuzz/corpus/<target>/ (kept read-only: what the fuzzer finds goes to
# build-san/fuzz-work/<target>/). A crash, a sanitizer report or an exception other than
# mase::Error fails the run and leaves the input in build-san/fuzz-artifacts/.
#
#   scripts/fuzz.sh                  # every target, 30 s each (MASE_FUZZ_SECONDS to change)
#   MASE_FUZZ_SECONDS=600 scripts/fuzz.sh safetensors
#
# The targets are built by scripts/sanitize.sh (clang, ASan + UBSan); built here if missing.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=${MASE_FUZZ_SECONDS:-30}
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(safetensors config_json compress_config prune_config wordpiece sentencepiece
                                   token_cache study_space optuna_distribution space_spec train_config
                                   command_output)

missing=0
for t in "${targets[@]}"; do [ -x "build-san/bin/fuzz_$t" ] || missing=1; done
if [ "$missing" = 1 ]; then MASE_SAN_TESTS='^$' scripts/sanitize.sh >/dev/null; fi

export ASAN_OPTIONS=halt_on_error=1:detect_leaks=1
export UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1
mkdir -p build-san/fuzz-artifacts
fails=0
for t in "${targets[@]}"; do
  work=build-san/fuzz-work/$t
  mkdir -p "$work"
  if build-san/bin/fuzz_"$t" -max_total_time="$seconds" -rss_limit_mb=4096 -max_len=262144 \
       -timeout=20 -print_final_stats=1 -artifact_prefix=build-san/fuzz-artifacts/"$t"- \
       "$work" fuzz/corpus/"$t" >build-san/fuzz-"$t".log 2>&1; then
    runs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' build-san/fuzz-"$t".log | grep -o '[0-9]*$' || echo "?")
    echo "fuzz: $t ok ($runs inputs in ${seconds} s)"
  else
    echo "fuzz: $t FAILED (log: build-san/fuzz-$t.log, inputs: build-san/fuzz-artifacts/)"
    grep -E 'ERROR|==[0-9]+==|terminate|runtime error' build-san/fuzz-"$t".log | head -5
    fails=1
  fi
done
exit "$fails"
