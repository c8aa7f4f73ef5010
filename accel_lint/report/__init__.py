"""Output formats of `check`: full, concise, json, github, sarif; and --statistics."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import Diagnostic

FORMATS = ("full", "concise", "json", "github", "sarif")


def marker(diag: Diagnostic, unsafe_fixes: bool) -> str:
    """`[*]` a fix `fix --apply` makes now; `[~]` an unsafe fix, needing --unsafe-fixes."""
    if not diag.has_fix:
        return ""
    if diag.fix_safety == "safe" or unsafe_fixes:
        return "[*]"
    return "[~]"


def render(
    fmt: str,
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    files_checked: int,
    color: bool | None = None,
) -> None:
    if fmt == "concise":
        from accel_lint.report.text import render_concise

        render_concise(diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color)
    elif fmt == "full":
        from accel_lint.report.text import render_full

        render_full(diagnostics, stream, unsafe_fixes=unsafe_fixes, color=color)
    elif fmt == "json":
        from accel_lint.report.json_format import render_json

        render_json(diagnostics, stream)
    elif fmt == "github":
        from accel_lint.report.github import render_github

        render_github(diagnostics, stream)
    elif fmt == "sarif":
        from accel_lint.report.sarif import render_sarif

        render_sarif(diagnostics, stream)
    else:  # pragma: no cover - click restricts the choice
        raise ValueError(fmt)
    del files_checked
