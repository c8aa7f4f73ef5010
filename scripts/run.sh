#!/usr/bin/env bash
# Set up a virtual environment with accel-lint (no torch needed) and lint a
# realistic training script; extra arguments go to `accel-lint check`.
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
accel-lint check "$@" || true
