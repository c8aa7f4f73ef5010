"""Line formats: `json-lines` (one JSON object per finding, the `json` format's
objects) and `pylint` (`path:row: [CODE] message`, what pylint's parsers and
editors' problem matchers read)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import Diagnostic
from accel_lint.report.json_format import diagnostic_json


def render_json_lines(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for diag in diagnostics:
        stream.write(json.dumps(diagnostic_json(diag)) + "\n")


def render_pylint(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for d in diagnostics:
        where = d.filename if d.cell is None else f"{d.filename}:cell {d.cell}"
        stream.write(f"{where}:{d.row}: [{d.code}] {d.full_message}\n")
