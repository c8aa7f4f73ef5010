"""`--output-format rdjson`: reviewdog's Diagnostic Format
(https://github.com/reviewdog/reviewdog/tree/master/proto/rdf), for
`reviewdog -f=rdjson`. Columns are UTF-8 byte counts, as the format says
(accel-lint's own are code points); fixes become `suggestions`."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, TextIO

from accel_lint.diagnostic import PARSE_ERROR, Diagnostic
from accel_lint.notebook import NotebookLines
from accel_lint.pages import page_url

TOOL_URL = "https://github.com/accel-lint/accel-lint"


class _Lines:
    def __init__(self) -> None:
        self._files: dict[str, list[str]] = {}
        self.notebooks = NotebookLines()

    def byte_column(self, d: Diagnostic, row: int, column: int) -> int:
        if d.cell is not None:
            return column
        lines = self._files.get(d.filename)
        if lines is None:
            try:
                with open(d.filename, encoding="utf-8", errors="replace", newline="") as fh:
                    lines = fh.read().splitlines()
            except OSError:
                lines = []
            self._files[d.filename] = lines
        if not 0 < row <= len(lines):
            return column
        return len(lines[row - 1][: column - 1].encode("utf-8")) + 1


def _range(lines: _Lines, d: Diagnostic, r: int, c: int, er: int, ec: int) -> dict[str, Any]:
    if d.cell is not None:
        # a notebook: the `.ipynb` file's lines (the message names the cell)
        start = lines.notebooks.line(d.filename, d.cell, r) or 1
        end = lines.notebooks.line(d.filename, d.cell, er) or start
        return {"start": {"line": start}, "end": {"line": max(start, end)}}
    return {
        "start": {"line": r, "column": lines.byte_column(d, r, c)},
        "end": {"line": er, "column": lines.byte_column(d, er, ec)},
    }


def rdjson_report(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    lines = _Lines()
    out = []
    for d in diagnostics:
        item: dict[str, Any] = {
            "message": d.full_message if d.cell is None else f"cell {d.cell}: {d.full_message}",
            "location": {
                "path": d.filename,
                "range": _range(lines, d, d.row, d.column, d.end_row, d.end_column),
            },
            "severity": "ERROR" if d.code == PARSE_ERROR else "WARNING",
            "code": {"value": d.code, "url": page_url(d.code)},
        }
        if d.fix is not None and d.cell is None:
            item["suggestions"] = [
                {
                    "range": _range(lines, d, e.row, e.column, e.end_row, e.end_column),
                    "text": e.content,
                }
                for e in d.fix.edits
            ]
        out.append(item)
    return {
        "source": {"name": "accel-lint", "url": TOOL_URL},
        "severity": "WARNING",
        "diagnostics": out,
    }


def render_rdjson(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump(rdjson_report(diagnostics), stream, indent=2)
    stream.write("\n")
