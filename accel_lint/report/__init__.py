"""Output formats of `check`: full, concise, json, github, sarif; and --statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import Diagnostic
from accel_lint.report.github import render_github
from accel_lint.report.json_format import render_json
from accel_lint.report.sarif import render_sarif
from accel_lint.report.text import render_concise, render_full

FORMATS = ("full", "concise", "json", "github", "sarif")


def render(
    fmt: str,
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None = None,
) -> None:
    if fmt == "concise":
        render_concise(diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color)
    elif fmt == "full":
        render_full(diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color)
    elif fmt == "json":
        render_json(diagnostics, stream)
    elif fmt == "github":
        render_github(diagnostics, stream)
    elif fmt == "sarif":
        render_sarif(diagnostics, stream)
    else:  # pragma: no cover - click restricts the choice
        raise ValueError(fmt)
