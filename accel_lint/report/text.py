"""Human formats: `concise` (one line per finding) and `full` (ruff's look: the
source line with a marker under the reported span, and the fix as help)."""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Sequence
from typing import TextIO

from accel_lint.diagnostic import Diagnostic

_CONTEXT = 1  # lines shown above and below the reported line
_STYLES = {"bold": "1", "red": "31", "blue": "34", "cyan": "36"}


class Painter:
    """Writes lines, with ANSI styles only when colour is on. Written by hand rather
    than with rich: `check` runs on every commit, and importing rich costs more than
    linting a file."""

    def __init__(self, stream: TextIO, color: bool | None) -> None:
        self.stream = stream
        self.color = use_color(stream) if color is None else color

    def style(self, text: str, *styles: str) -> str:
        if not self.color or not styles:
            return text
        codes = ";".join(_STYLES[s] for s in styles)
        return f"\x1b[{codes}m{text}\x1b[0m"

    def print(self, line: str = "") -> None:
        self.stream.write(line + "\n")


def marker(diag: Diagnostic, unsafe_fixes: bool) -> str:
    """`[*]` a fix `fix --apply` makes now; `[~]` an unsafe fix, needing --unsafe-fixes."""
    if not diag.has_fix:
        return ""
    if diag.fix_safety == "safe" or unsafe_fixes:
        return "[*]"
    return "[~]"


def use_color(stream: TextIO) -> bool:
    """Colour on a terminal, unless NO_COLOR is set; FORCE_COLOR forces it."""
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    isatty = getattr(stream, "isatty", None)
    return bool(isatty and isatty())


def _location(d: Diagnostic) -> str:
    return d.location


def render_concise(
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None,
    revealed: int = 0,
) -> None:
    out = Painter(stream, color)
    for d in diagnostics:
        mark = marker(d, unsafe_fixes)
        mark_text = f" {mark}" if mark else ""
        out.print(
            f"{out.style(_location(d) + ':', 'bold')} {out.style(d.code, 'bold', 'red')}"
            f"{mark_text} {d.full_message}"
        )
    summary(diagnostics, out, unsafe_fixes=unsafe_fixes, revealed=revealed)


def _lines(path: str, cell: int | None = None) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            text = fh.read()
    except OSError:
        return ()
    if cell is None:
        return tuple(text.splitlines())
    try:  # a notebook: the cell's own lines
        source = json.loads(text.lstrip("\ufeff"))["cells"][cell - 1].get("source", "")
    except (ValueError, LookupError, TypeError, AttributeError):
        return ()
    return tuple(("".join(source) if isinstance(source, list) else str(source)).split("\n"))


def render_full(
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None,
    sources: dict[str, Sequence[str]] | None = None,
    revealed: int = 0,
) -> None:
    out = Painter(stream, color)
    bar = out.style("|", "blue")
    sources = dict(sources or {})
    for d in diagnostics:
        mark = marker(d, unsafe_fixes)
        mark_text = f" {mark}" if mark else ""
        out.print(
            f"{out.style(d.code, 'bold', 'red')}{mark_text} {out.style(d.full_message, 'bold')}"
        )
        out.print(f"  {out.style('-->', 'blue')} {_location(d)}")
        key = d.filename if d.cell is None else f"{d.filename}:cell {d.cell}"
        if key not in sources:
            sources[key] = _lines(d.filename, d.cell)
        lines = sources[key]
        if lines and 0 < d.row <= len(lines):
            first = max(1, d.row - _CONTEXT)
            last = min(len(lines), d.row + _CONTEXT)
            width = len(str(last))
            pad = " " * width
            out.print(f"{pad} {bar}")
            for n in range(first, last + 1):
                text = lines[n - 1].expandtabs(4) if n != d.row else lines[n - 1]
                out.print(f"{out.style(f'{n:>{width}} |', 'blue')} {text}")
                if n == d.row:
                    start = d.column - 1
                    end = d.end_column - 1 if d.end_row == d.row else len(text)
                    carets = "^" * max(1, end - start)
                    prefix = "".join("\t" if ch == "\t" else " " for ch in text[:start])
                    out.print(
                        f"{pad} {bar} {prefix}{out.style(f'{carets} {d.code}', 'bold', 'red')}"
                    )
            out.print(f"{pad} {bar}")
        if d.has_fix:
            kind = "safe fix" if d.fix_safety == "safe" else "unsafe fix"
            hint = d.fix_message
            hint_text = f"{hint} " if hint else ""
            out.print(f"{out.style('help', 'bold', 'cyan')}: {hint_text}({kind})")
        out.print()
    summary(diagnostics, out, unsafe_fixes=unsafe_fixes, revealed=revealed)


def summary(
    diagnostics: Sequence[Diagnostic], console: Painter, *, unsafe_fixes: bool, revealed: int = 0
) -> None:
    """`revealed`: fixes that `fix --apply` will make beyond the fixable findings
    (findings that appear once other fixes are applied)."""
    if not diagnostics:
        console.print("All checks passed!")
        return
    n = len(diagnostics)
    console.print(f"Found {n} finding{'s' if n != 1 else ''}.")
    fixable = sum(1 for d in diagnostics if d.has_fix and (d.fix_safety == "safe" or unsafe_fixes))
    hidden = sum(
        1 for d in diagnostics if d.has_fix and d.fix_safety == "unsafe" and not unsafe_fixes
    )
    if fixable:
        extra = " --unsafe-fixes" if unsafe_fixes else ""
        more = f" (and {revealed} more after these are applied)" if revealed else ""
        console.print(f"[*] {fixable} fixable{more} with `accel-lint fix --apply{extra}`.")
    if hidden:
        console.print(
            f"[~] {hidden} more fixable with `accel-lint fix --apply --unsafe-fixes` "
            "(unsafe: read each rule's Fix safety first)."
        )


def render_statistics(
    diagnostics: Sequence[Diagnostic], stream: TextIO, *, unsafe_fixes: bool
) -> None:
    """ruff's layout: count, code, fix marker and name, tab-separated (easy to `cut`)."""
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    safe_fix = Counter(d.code for d in diagnostics if d.has_fix and d.fix_safety == "safe")
    unsafe_fix = Counter(d.code for d in diagnostics if d.has_fix and d.fix_safety == "unsafe")
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        parts = []
        if safe_fix[code]:
            parts.append(f"{safe_fix[code]} safe fix{'es' if safe_fix[code] != 1 else ''}")
        if unsafe_fix[code]:
            parts.append(f"{unsafe_fix[code]} unsafe fix{'es' if unsafe_fix[code] != 1 else ''}")
        fixes = f"  ({', '.join(parts)})" if parts else ""
        if safe_fix[code] or (unsafe_fixes and unsafe_fix[code]):
            mark = "[*]"
        elif unsafe_fix[code]:
            mark = "[~]"
        else:
            mark = "   "
        stream.write(f"{count}\t{code}\t{mark} {names[code]}{fixes}\n")
    if diagnostics:
        n = len(diagnostics)
        stream.write(
            f"Found {n} finding{'s' if n != 1 else ''}: {sum(safe_fix.values())} with a safe fix, "
            f"{sum(unsafe_fix.values())} with an unsafe fix.\n"
        )


def render_statistics_json(
    diagnostics: Sequence[Diagnostic], stream: TextIO, *, unsafe_fixes: bool
) -> None:
    """ruff's JSON statistics: one object per code, most frequent first."""
    import json

    from accel_lint.pages import page_url

    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    rows = []
    for code, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
        mine = [d for d in diagnostics if d.code == code]
        safe = sum(1 for d in mine if d.has_fix and d.fix_safety == "safe")
        unsafe = sum(1 for d in mine if d.has_fix and d.fix_safety == "unsafe")
        rows.append(
            {
                "code": code,
                "name": names[code],
                "count": count,
                "fixable": safe + (unsafe if unsafe_fixes else 0) > 0,
                "safe_fixes": safe,
                "unsafe_fixes": unsafe,
                "url": page_url(code),
            }
        )
    json.dump(rows, stream, indent=2)
    stream.write("\n")
