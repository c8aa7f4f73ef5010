#!/usr/bin/env bash
# Download, here (with network), every package accel-lint needs besides torch as
# wheels for the GPU machine: CPython 3.12 on manylinux x86-64. They go to
# benchmarks/gpu/wheelhouse/ (git-ignored), which the device call carries:
#   bash benchmarks/gpu/wheelhouse.sh
# The GPU machine has no network and no libcst; device.sh installs from here only
# what its python3 lacks.
set -euo pipefail
cd "$(dirname "$0")"
PYTHON="${PYTHON:-python3}"
rm -rf wheelhouse
"$PYTHON" -m pip download --quiet --dest wheelhouse --only-binary=:all: \
  --implementation cp --python-version 3.12 --abi cp312 \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_17_x86_64 \
  --platform manylinux2014_x86_64 \
  "libcst>=1.1" "click>=8.1" "rich>=13"
ls -1 wheelhouse
du -sh wheelhouse
