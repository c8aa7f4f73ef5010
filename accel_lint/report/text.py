"""Human formats: `concise` (one line per finding) and `full` (ruff's look: the
source line with a marker under the reported span, and the fix as help)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from functools import lru_cache
from typing import TextIO

from rich.console import Console
from rich.markup import escape

from accel_lint.diagnostic import Diagnostic
from accel_lint.report import marker

_CONTEXT = 1  # lines shown above and below the reported line


def console_for(stream: TextIO, color: bool | None) -> Console:
    # Plain text when not writing to a terminal (CI logs, pipes, files).
    return Console(
        file=stream,
        highlight=False,
        soft_wrap=True,
        emoji=False,
        force_terminal=color,
        no_color=color is False,
    )


def _location(d: Diagnostic) -> str:
    return f"{d.filename}:{d.row}:{d.column}"


def render_concise(
    diagnostics: Sequence[Diagnostic], stream: TextIO, *, unsafe_fixes: bool, color: bool | None
) -> None:
    console = console_for(stream, color)
    for d in diagnostics:
        mark = marker(d, unsafe_fixes)
        mark_text = f" {escape(mark)}" if mark else ""
        console.print(
            f"[bold]{escape(_location(d))}:[/bold] [bold red]{d.code}[/bold red]{mark_text} "
            f"{escape(d.message)}"
        )
    summary(diagnostics, console, unsafe_fixes=unsafe_fixes)


@lru_cache(maxsize=64)
def _lines(path: str) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as fh:
            return tuple(fh.read().splitlines())
    except OSError:
        return ()


def render_full(
    diagnostics: Sequence[Diagnostic],
    stream: TextIO,
    *,
    unsafe_fixes: bool,
    color: bool | None,
    sources: dict[str, Sequence[str]] | None = None,
) -> None:
    console = console_for(stream, color)
    for d in diagnostics:
        mark = marker(d, unsafe_fixes)
        mark_text = f" {escape(mark)}" if mark else ""
        console.print(f"[bold red]{d.code}[/bold red]{mark_text} [bold]{escape(d.message)}[/bold]")
        console.print(f"  [blue]-->[/blue] {escape(_location(d))}")
        lines = (sources or {}).get(d.filename) or _lines(d.filename)
        if lines and 0 < d.row <= len(lines):
            first = max(1, d.row - _CONTEXT)
            last = min(len(lines), d.row + _CONTEXT)
            width = len(str(last))
            pad = " " * width
            console.print(f"{pad} [blue]|[/blue]")
            for n in range(first, last + 1):
                text = lines[n - 1].expandtabs(4) if n != d.row else lines[n - 1]
                console.print(f"[blue]{n:>{width}} |[/blue] {escape(text)}")
                if n == d.row:
                    start = d.column - 1
                    end = d.end_column - 1 if d.end_row == d.row else len(text)
                    carets = "^" * max(1, end - start)
                    prefix = "".join("\t" if ch == "\t" else " " for ch in text[:start])
                    console.print(
                        f"{pad} [blue]|[/blue] {prefix}[bold red]{carets} {d.code}[/bold red]"
                    )
            console.print(f"{pad} [blue]|[/blue]")
        if d.has_fix:
            kind = "safe fix" if d.fix_safety == "safe" else "unsafe fix"
            hint = d.fix_message
            hint_text = f"{escape(hint)} " if hint else ""
            console.print(f"[bold cyan]help[/bold cyan]: {hint_text}({kind})")
        console.print()
    summary(diagnostics, console, unsafe_fixes=unsafe_fixes)


def summary(diagnostics: Sequence[Diagnostic], console: Console, *, unsafe_fixes: bool) -> None:
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
        console.print(f"\\[*] {fixable} fixable with `accel-lint fix --apply{extra}`.")
    if hidden:
        console.print(
            f"\\[~] {hidden} more fixable with `accel-lint fix --apply --unsafe-fixes` "
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
