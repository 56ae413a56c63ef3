#!/usr/bin/env bash
# scripts/test.sh — install what is missing, build, and run the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
ctest --test-dir build -j"$(nproc)" --output-on-failure --timeout 600
