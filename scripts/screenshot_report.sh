#!/usr/bin/env bash
# Look at `accel-lint verify --report` as a browser draws it, without a display:
# verify a fixture, write its HTML report, and take headless Chromium screenshots
# at a desktop and a phone width.
#
# Usage: bash scripts/screenshot_report.sh [OUT_DIR] [SCRIPT [-- ARGS...]]
#   OUT_DIR  where report.html and the PNGs go (default: ./screenshots, not tracked)
#   SCRIPT   default: fixtures/cnn_bn/train.py -- --epochs 1
# Needs Chromium (Debian: apt-get update && apt-get install chromium) and an
# environment with accel-lint[verify] (the repository's .venv by default).
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-screenshots}"
shift || true
if [ "$#" -eq 0 ]; then
  set -- fixtures/cnn_bn/train.py -- --epochs 1
fi
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"
ACCEL_LINT="${ACCEL_LINT:-.venv/bin/accel-lint}"
BROWSER="$(command -v chromium || command -v chromium-browser || command -v google-chrome)"
status=0
"$ACCEL_LINT" verify --report "$OUT/report.html" "$@" > "$OUT/verify.txt" 2>&1 || status=$?
if [ "$status" -gt 2 ] || [ ! -s "$OUT/report.html" ]; then
  cat "$OUT/verify.txt" >&2
  exit "$status"
fi
# width x height (the top of the page); the phone: a 390-pixel-wide viewport at twice
# the pixel density
shoot() {
  "$BROWSER" --headless --no-sandbox --disable-gpu --hide-scrollbars "$@" \
    "file://$OUT/report.html" 2>/dev/null
}
shoot --window-size=1280,4200 --screenshot="$OUT/report-desktop.png"
shoot --window-size=390,1800 --force-device-scale-factor=2 --screenshot="$OUT/report-phone.png"
echo "verify exited $status; wrote $OUT/report.html, $OUT/report-desktop.png, $OUT/report-phone.png"
