"""`--output-format github`: workflow commands, as GitHub documents them
(https://docs.github.com/actions/reference/workflow-commands-for-github-actions)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TextIO

from accel_lint.engine import Diagnostic


def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(diag: Diagnostic) -> str:
    level = "error" if diag.code == "ACL000" else "warning"
    props = ",".join(
        f"{key}={_escape_property(str(value))}"
        for key, value in (
            ("file", diag.filename),
            ("line", diag.row),
            ("col", diag.column),
            ("endLine", diag.end_row),
            ("endColumn", diag.end_column),
            ("title", diag.code),
        )
    )
    return f"::{level} {props}::{_escape_data(f'{diag.code} {diag.message}')}"


def render_github(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    for diag in diagnostics:
        stream.write(github_line(diag) + "\n")
