"""`--output-format json`: an array of findings, sorted by file then position
(the format is described in the README)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from accel_lint.diagnostic import Diagnostic, Edit
from accel_lint.pages import page_url


def diagnostic_json(diag: Diagnostic) -> dict[str, Any]:
    fix: dict[str, Any] | None = None
    if diag.fix is not None:
        fix = {
            "applicability": diag.fix.applicability,
            "message": diag.fix.message,
            "edits": [_edit(e) for e in diag.fix.edits],
        }
    out: dict[str, Any] = {
        "code": diag.code,
        "name": diag.name,
        "message": diag.full_message,
        "filename": diag.filename,
    }
    if diag.cell is not None:  # a notebook: rows count within this cell
        out["cell"] = diag.cell
    out.update(
        {
            "location": {"row": diag.row, "column": diag.column},
            "end_location": {"row": diag.end_row, "column": diag.end_column},
            "url": page_url(diag.code),
            "fix": fix,
            "no_fix_reason": diag.no_fix_reason,
        }
    )
    return out


def _edit(e: Edit) -> dict[str, Any]:
    out: dict[str, Any] = {"content": e.content}
    if e.cell is not None:
        out["cell"] = e.cell
    out["location"] = {"row": e.row, "column": e.column}
    out["end_location"] = {"row": e.end_row, "column": e.end_column}
    return out


def render_json(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump([diagnostic_json(d) for d in diagnostics], stream, indent=2)
    stream.write("\n")
