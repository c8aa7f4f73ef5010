"""`--output-format json`: an array of findings, sorted by file then position
(the format is described in the README)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from accel_lint.diagnostic import Diagnostic
from accel_lint.pages import page_url


def diagnostic_json(diag: Diagnostic) -> dict[str, Any]:
    fix: dict[str, Any] | None = None
    if diag.fix is not None:
        fix = {
            "applicability": diag.fix.applicability,
            "message": diag.fix.message,
            "edits": [
                {
                    "content": e.content,
                    "location": {"row": e.row, "column": e.column},
                    "end_location": {"row": e.end_row, "column": e.end_column},
                }
                for e in diag.fix.edits
            ],
        }
    return {
        "code": diag.code,
        "name": diag.name,
        "message": diag.full_message,
        "filename": diag.filename,
        "location": {"row": diag.row, "column": diag.column},
        "end_location": {"row": diag.end_row, "column": diag.end_column},
        "url": page_url(diag.code),
        "fix": fix,
        "no_fix_reason": diag.no_fix_reason,
    }


def render_json(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump([diagnostic_json(d) for d in diagnostics], stream, indent=2)
    stream.write("\n")
