#!/usr/bin/env bash
# The one GPU call: install what is missing from the carried wheelhouse, verify
# every workload within a wall-clock budget, and leave under $OUT what comes back
# (the device tool returns at most 8 files, so the per-workload reports are packed):
#   summary.md, summary.json   the table and the raw rows (run.py)
#   machine.txt                nvidia-smi, python, torch and CUDA versions
#   reports.tar.gz             each workload's JSON and HTML report and its log
#   device.log                 this script's own output
# On the device machine, from the repository root (carry benchmarks/gpu/wheelhouse):
#   bash benchmarks/gpu/device.sh                    # CUDA, 480 s budget
# Rehearse everything but the GPU here:
#   OUT=/tmp/out bash benchmarks/gpu/device.sh --device cpu --budget 300
# Extra arguments go to run.py (--only, --steps, --repeat, --budget, --device).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT="$PWD"
OUT="${OUT:-$ROOT/benchmarks/gpu/reports/device}"
PYTHON="${PYTHON:-python3}"
WHEELHOUSE="${WHEELHOUSE:-$ROOT/benchmarks/gpu/wheelhouse}"
mkdir -p "$OUT"
exec > >(tee "$OUT/device.log") 2>&1

echo "== what is installed"
if ! "$PYTHON" -c "import libcst, click, rich" 2>/dev/null; then
  if [ ! -d "$WHEELHOUSE" ]; then
    echo "libcst, click or rich is missing and there is no $WHEELHOUSE:" \
      "run benchmarks/gpu/wheelhouse.sh where there is a network, and carry it"
    exit 2
  fi
  # only what is missing: the machine's own torch, numpy and friends stay as they are
  "$PYTHON" -m pip install --quiet --no-index --find-links "$WHEELHOUSE" \
    "libcst>=1.1" "click>=8.1" "rich>=13" || exit 2
fi
export PYTHONPATH="$ROOT${PYTHONPATH:+:$PYTHONPATH}"
{
  nvidia-smi 2>&1 || echo "(no nvidia-smi)"
  "$PYTHON" - <<'PY'
import sys, libcst, torch
import accel_lint
print("python", sys.version.split()[0], sys.executable)
print("torch", torch.__version__, "cuda", torch.version.cuda,
      "available", torch.cuda.is_available())
if torch.cuda.is_available():
    print("gpu", torch.cuda.get_device_name(0))
print("accel-lint", accel_lint.__version__, "from", accel_lint.__file__)
print("libcst", getattr(libcst, "_version", None) and libcst._version.__version__)
PY
} > "$OUT/machine.txt" 2>&1
cat "$OUT/machine.txt"
"$PYTHON" -c "import accel_lint, libcst, torch" || { echo "accel-lint cannot start"; exit 2; }

echo "== verify every workload"
# a GPU run: 30 steps and 3 timing runs per side fit seven workloads in 8 minutes
# (each workload's share is enforced by run.py); later arguments override these
"$PYTHON" benchmarks/gpu/run.py --budget 480 --steps 30 --repeat 3 --out "$OUT/reports" "$@"
status=$?
cp "$OUT/reports/summary.md" "$OUT/reports/summary.json" "$OUT/" 2>/dev/null
tar -czf "$OUT/reports.tar.gz" -C "$OUT" reports && rm -rf "$OUT/reports"
echo "== done: run.py exited $status; files in $OUT:"
ls -l "$OUT"
exit "$status"
