"""`--output-format github`: one workflow command per finding, as GitHub documents
them (https://docs.github.com/actions/reference/workflow-commands-for-github-actions),
for example (one line):

    ::warning file=/w/repo/train.py,line=12,col=9,endLine=12,endColumn=52,title=ACL101::
    train.py:12:9: ACL101 DataLoader ...%0Ahttps://github.com/accel-lint/accel-lint/blob/main/rules/ACL101.md

The runner turns each line into an annotation on the file and line. `file` is
absolute: the runner makes a path inside the workspace relative to the
repository, which also holds when accel-lint runs in a subdirectory (a relative
path would be taken as relative to the repository root). The message repeats
the location because the job log shows only the message. Escaping follows the
runner's parser (actions/runner `ActionCommand.TryParseV2`): `%`, CR and LF in
the message; also `:` and `,` in property values.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import PARSE_ERROR, Diagnostic
from accel_lint.notebook import NotebookLines
from accel_lint.pages import page_url


def escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def escape_property(text: str) -> str:
    return escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_line(diag: Diagnostic, notebooks: NotebookLines | None = None) -> str:
    # a parse error fails the run outright; findings are warnings the exit code gates
    level = "error" if diag.code == PARSE_ERROR else "warning"
    where: tuple[tuple[str, object], ...] = (
        ("line", diag.row),
        ("col", diag.column),
        ("endLine", diag.end_row),
        ("endColumn", diag.end_column),
    )
    if diag.cell is not None:
        # a notebook: the annotation goes on the `.ipynb` line that holds the cell's row
        # (the message keeps `cell N:row:col`); unknown, it is an annotation on the file
        notebooks = notebooks or NotebookLines()
        start = notebooks.line(diag.filename, diag.cell, diag.row)
        end = notebooks.line(diag.filename, diag.cell, diag.end_row)
        where = () if start is None else (("line", start), ("endLine", max(end or start, start)))
    props = ",".join(
        f"{key}={escape_property(str(value))}"
        for key, value in (
            ("file", os.path.abspath(diag.filename)),
            *where,
            ("title", diag.code),
        )
    )
    # the rule's page on a line of its own: the annotation shows it as a link
    message = f"{diag.location}: {diag.code} {diag.full_message}\n{page_url(diag.code)}"
    return f"::{level} {props}::{escape_data(message)}"


def render_github(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    notebooks = NotebookLines()
    for diag in diagnostics:
        stream.write(github_line(diag, notebooks) + "\n")
