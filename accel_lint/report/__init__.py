"""Output formats of `check`: full, concise, grouped, json, json-lines, github,
gitlab, junit, pylint, rdjson, sarif; and --statistics.

Each format's module is imported only when it is asked for: `check` in a
pre-commit hook pays for the text formats alone."""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import Diagnostic
from accel_lint.report.text import render_concise, render_full

FORMATS = (
    "full",
    "concise",
    "grouped",
    "json",
    "json-lines",
    "github",
    "gitlab",
    "junit",
    "pylint",
    "rdjson",
    "sarif",
)
# formats whose output carries each fix's edits (worth computing only for them)
WITH_EDITS = frozenset({"json", "json-lines", "sarif", "rdjson"})
# formats that print for people: colour, a summary, `--quiet`
HUMAN = frozenset({"full", "concise", "grouped"})

_MACHINE = {
    "json": "json_format:render_json",
    "json-lines": "lines:render_json_lines",
    "github": "github:render_github",
    "gitlab": "gitlab:render_gitlab",
    "junit": "junit:render_junit",
    "pylint": "lines:render_pylint",
    "rdjson": "rdjson:render_rdjson",
    "sarif": "sarif:render_sarif",
}


def render(
    fmt: str,
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None = None,
    revealed: int = 0,
) -> None:
    """`revealed`: fixes beyond the fixable findings (the human formats' summary)."""
    if fmt == "concise":
        render_concise(
            diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color, revealed=revealed
        )
    elif fmt == "full":
        render_full(diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color, revealed=revealed)
    elif fmt == "grouped":
        from accel_lint.report.grouped import render_grouped

        render_grouped(
            diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color, revealed=revealed
        )
    elif fmt in _MACHINE:
        module, _, name = _MACHINE[fmt].partition(":")
        getattr(importlib.import_module(f"{__name__}.{module}"), name)(diagnostics, stream)
    else:  # pragma: no cover - click restricts the choice
        raise ValueError(fmt)
