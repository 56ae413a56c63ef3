#!/usr/bin/env bash
# scripts/check_optuna.sh — CI's check that Optuna opens the studies mase-search writes (and
# that mase-search continues one Optuna wrote): tests/fixtures/search/check_optuna_load.py,
# with Optuna from PyPI in a virtual environment under build/ (Python is tooling here, never
# the product). Without network or pip it says SKIPPED and succeeds: the C++ side is tested by
# tests/search/test_study_optuna.cpp against a fixture made once with Optuna.
set -uo pipefail
cd "$(dirname "$0")/.."
venv=build/ci-venv
if ! python3 -c "import venv, ensurepip" 2>/dev/null; then
  SUDO=""
  [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    $SUDO apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi
if [ ! -x "$venv/bin/python" ] && ! python3 -m venv "$venv"; then
  echo "check_optuna: SKIPPED (python3 -m venv failed)"
  exit 0
fi
if ! "$venv/bin/python" -c "import optuna" 2>/dev/null &&
   ! "$venv/bin/python" -m pip install --quiet --disable-pip-version-check optuna; then
  echo "check_optuna: SKIPPED (pip could not install optuna)"
  exit 0
fi
exec "$venv/bin/python" tests/fixtures/search/check_optuna_load.py build/ ../shared/data
