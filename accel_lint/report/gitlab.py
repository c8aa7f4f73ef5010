"""`--output-format gitlab`: a GitLab Code Quality report
(https://docs.gitlab.com/ci/testing/code_quality/, the subset of the Code
Climate spec GitLab reads): a JSON array of issues with `description`,
`check_name`, `fingerprint`, `severity` and `location.path` /
`location.positions`. The fingerprint hashes the code, the path (relative to the
working directory, as GitLab wants it) and the message, plus a counter for
repeats, and not the line: an issue keeps its identity when code moves above it."""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import Any, TextIO

from accel_lint.diagnostic import PARSE_ERROR, Diagnostic
from accel_lint.notebook import NotebookLines
from accel_lint.pages import page_url


def _path(filename: str) -> str:
    relative = os.path.relpath(os.path.abspath(filename))
    return (filename if relative.startswith(os.pardir) else relative).replace(os.sep, "/")


def gitlab_report(diagnostics: Sequence[Diagnostic]) -> list[dict[str, Any]]:
    seen: Counter[tuple[str, str, str]] = Counter()
    notebooks = NotebookLines()
    out = []
    for d in diagnostics:
        path = _path(d.filename)
        key = (d.code, path, d.full_message)
        seen[key] += 1
        digest = hashlib.sha256("\0".join([*key, str(seen[key])]).encode()).hexdigest()
        cell = f" (cell {d.cell})" if d.cell is not None else ""
        out.append(
            {
                "description": f"{d.code}{cell}: {d.full_message}",
                "check_name": d.code,
                "fingerprint": digest,
                "severity": "blocker" if d.code == PARSE_ERROR else "major",
                "content": {"body": f"{d.name}: {page_url(d.code)}"},
                "location": {"path": path, "positions": _positions(d, notebooks)},
            }
        )
    return out


def _positions(d: Diagnostic, notebooks: NotebookLines) -> dict[str, Any]:
    if d.cell is None:
        return {
            "begin": {"line": d.row, "column": d.column},
            "end": {"line": d.end_row, "column": d.end_column},
        }
    # a notebook: the `.ipynb` file's lines, where GitLab shows the finding
    start = notebooks.line(d.filename, d.cell, d.row) or 1
    end = notebooks.line(d.filename, d.cell, d.end_row) or start
    return {"begin": {"line": start}, "end": {"line": max(start, end)}}


def render_gitlab(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump(gitlab_report(diagnostics), stream, indent=2)
    stream.write("\n")
