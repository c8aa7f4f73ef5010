#!/usr/bin/env bash
# Set up a virtual environment (torch CPU build first, then the package with its
# dev and verify extras), check style and types, and run the whole test suite in
# parallel. Used by CI (.ci/run). Extra arguments go to pytest
# (`bash scripts/test.sh -m "not slow"` is the fast lane).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
fi
. .venv/bin/activate
python -m pip install --quiet --upgrade pip
# torch first, pinned: a looser spec would pull a multi-GB CUDA build.
python -m pip install --quiet "torch==2.13.0"
python -m pip install --quiet -e ".[dev,verify]"
echo "ruff check, ruff format --check, mypy (strict)"
python -m ruff check .
python -m ruff format --check .
python -m mypy
python -m pytest -q -n "${PYTEST_WORKERS:-2}" "$@"
