"""`--output-format grouped`: ruff's grouped layout, the findings under their file.

train.py:
  12:9 ACL101 [~] DataLoader loads every batch ...
  31:5 ACL102 [*] DataLoader returns pageable memory ...

Found 2 findings.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import TextIO

from accel_lint.diagnostic import Diagnostic
from accel_lint.report.text import Painter, marker, summary


def render_grouped(
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None,
    revealed: int = 0,
) -> None:
    out = Painter(stream, color)
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        items = list(group)
        out.print(out.style(f"{filename}:", "bold"))
        width = max(len(_position(d)) for d in items)
        for d in items:
            mark = marker(d, unsafe_fixes)
            mark_text = f" {mark}" if mark else ""
            out.print(
                f"  {_position(d):<{width}} {out.style(d.code, 'bold', 'red')}{mark_text} "
                f"{d.full_message}"
            )
        out.print()
    summary(diagnostics, out, unsafe_fixes=unsafe_fixes, revealed=revealed)


def _position(d: Diagnostic) -> str:
    cell = "" if d.cell is None else f"cell {d.cell}:"
    return f"{cell}{d.row}:{d.column}"
