#!/usr/bin/env bash
# Set up a virtual environment with accel-lint (no torch needed), lint a realistic
# training script and show the diff its fixes would make (nothing is written).
# Usage: bash scripts/run.sh [PATH...]   (default: fixtures/cnn_bn/train.py)
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
python -m pip install --quiet -e .
if [ "$#" -eq 0 ]; then
  set -- fixtures/cnn_bn/train.py
fi
status=0
accel-lint check "$@" || status=$?
if [ "$status" -gt 1 ]; then
  exit "$status"  # a usage or configuration error, not findings
fi
echo
echo "The fixes, safe and unsafe (accel-lint fix --unsafe-fixes; add --apply to write them):"
accel-lint fix --unsafe-fixes "$@" || [ "$?" -eq 1 ]
