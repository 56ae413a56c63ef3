#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build, and run the whole test suite.
#
# ctest's summary counts passed and failed cases; a case that could not run here (no GPU, no
# data in ../shared, no Graphviz) is *skipped*, never passed, and counted at the end.
# The study tests against PostgreSQL (tests/search/test_study_postgres.cpp) get a throwaway
# server on the loopback for the run (scripts/pg_server.sh: ~3 s to start; stopped at exit);
# MASE_TEST_PG_URL set by the caller is used as it is instead.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
log=build/ctest.log
if [ -z "${MASE_TEST_PG_URL:-}" ]; then
  pgdir=$(mktemp -d "${TMPDIR:-/tmp}/mase-pg-XXXXXX")
  trap 'scripts/pg_server.sh stop "$pgdir"' EXIT
  if pg_env=$(scripts/pg_server.sh start "$pgdir"); then
    eval "$pg_env"
    echo "test.sh: PostgreSQL test server on ${MASE_TEST_PG_URL##*@}"
  else
    echo "test.sh: no PostgreSQL test server (its cases will be skipped)"
  fi
fi
set +e
ctest --test-dir build -j"$(nproc)" --output-on-failure --timeout 600 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
skipped=$(grep -c '(Skipped)' "$log" || true)
echo "test.sh: ${skipped} case(s) skipped on this machine (listed above; a GPU case runs only where"
echo "test.sh: a GPU is present, a data case only where ../shared/data has its file)"
exit "$status"
