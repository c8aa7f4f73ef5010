"""Test helpers: expectation markers, in-process lint and fix, rule-page parsing.

Markers (bugbear's habit): a trailing `# ACL101` comment says "a finding with
this code starts on this line"; `# ACL101 ACL102` for two. They are stripped
before the code is linted, so the tools see the code readers see.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from accel_lint.config import Selection, Settings, load_settings
from accel_lint.engine import analyze, diagnostics, rules_for
from accel_lint.fixer import fix_source
from accel_lint.source import Source

ROOT = Path(__file__).resolve().parents[1]


@dataclass
class Ran:
    """What a command-line run left: exit status and both streams."""

    returncode: int
    stdout: str
    stderr: str


def cli(
    *args: str,
    cwd: Path,
    stdin: str | bytes | None = None,
    env: dict[str, str | None] | None = None,
) -> Ran:
    """`accel-lint ARGS` in this process (click's runner), in `cwd`. An exception that
    escapes the command is reported as Python would: a traceback and status 1."""
    import os
    import traceback

    from click.testing import CliRunner

    from accel_lint.cli import main

    previous = os.getcwd()
    os.chdir(cwd)
    try:
        result = CliRunner().invoke(
            main, list(args), input=stdin, env={"NO_COLOR": "1", **(env or {})}
        )
    finally:
        os.chdir(previous)
    stderr = result.stderr
    code = result.exit_code
    if result.exception is not None and not isinstance(result.exception, SystemExit):
        assert result.exc_info is not None
        stderr += "".join(traceback.format_exception(*result.exc_info))
        code = 1
    return Ran(code, result.stdout, stderr)


MARKER = re.compile(r"[ \t]*#[ \t]*(ACL\d{3}(?:[ \t]+ACL\d{3})*)[ \t]*$")


def strip_markers(text: str) -> tuple[str, list[tuple[int, str]]]:
    expected: list[tuple[int, str]] = []
    lines = text.splitlines(keepends=True)
    out = []
    for row, line in enumerate(lines, start=1):
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        m = MARKER.search(body)
        if m:
            expected.extend((row, code) for code in m.group(1).split())
            body = body[: m.start()]
        out.append(body + ending)
    return "".join(out), sorted(expected)


def settings_for(
    select: Iterable[str] = ("ALL",),
    *,
    target_torch: str | None = None,
    unsafe: bool = False,
    options: dict[str, dict[str, Any]] | None = None,
    tmp: Path | None = None,
) -> Settings:
    """Settings that read no file. The examples are written for torch 2.1, the oldest
    torch this project supports (its `verify` extra); until `--isolated` stopped
    reading `[project].dependencies`, that came from this checkout's pyproject.toml
    by accident of the working directory. `target_torch=None` means that default."""
    base = load_settings(isolated=True, cli=Selection(select=tuple(select)), unsafe_fixes=unsafe)
    overrides: dict[str, Any] = {}
    major, minor = (int(p) for p in (target_torch or "2.1").split(".")[:2])
    overrides["target_torch"] = (major, minor)
    if options:
        overrides["rule_options"] = options
    if overrides:
        from dataclasses import replace

        return replace(base, **overrides)
    return base


def lint(
    text: str, settings: Settings | None = None, path: str = "example.py"
) -> list[tuple[int, str]]:
    settings = settings or settings_for()
    data = text.encode()
    analysis = analyze(path, Source(text, "utf-8"), settings, rules_for(settings.enabled, data))
    return sorted((d.row, d.code) for d in diagnostics(analysis))


def lint_messages(text: str, settings: Settings | None = None) -> list[tuple[int, str, str]]:
    settings = settings or settings_for()
    analysis = analyze(
        "example.py", Source(text, "utf-8"), settings, rules_for(settings.enabled, text.encode())
    )
    return [(d.row, d.code, d.full_message) for d in diagnostics(analysis)]


def fix(text: str, settings: Settings, path: str = "example.py") -> str:
    outcome = fix_source(
        path,
        Source(text, "utf-8"),
        settings,
        settings.enabled,
        unsafe=settings.unsafe_fixes,
    )
    assert outcome.error is None, outcome.error
    return outcome.fixed_text


# -- rule pages ------------------------------------------------------------------

PAGE_SECTIONS = (
    "What it does",
    "Why is it slow?|Why is it wrong?",
    "Example",
    "Use instead",
    "Not flagged",
    "Fix safety",
    "How the verifier judges the fix",
    "References",
)
_DIRECTIVE = re.compile(
    r"<!--\s*accel-lint:\s*(?P<key>[a-z-]+)\s*=\s*\"?(?P<value>[^\"]*?)\"?\s*-->"
)


@dataclass
class Block:
    code: str
    directives: dict[str, str] = field(default_factory=dict)


@dataclass
class Page:
    code: str
    title: str
    facts: dict[str, str]
    sections: dict[str, str]  # heading -> raw text
    order: list[str]

    def blocks(self, heading: str) -> list[Block]:
        text = self.sections.get(heading, "")
        out: list[Block] = []
        pending: dict[str, str] = {}
        for m in re.finditer(r"(<!--.*?-->)|```python\n(.*?)```", text, re.DOTALL):
            if m.group(1):
                d = _DIRECTIVE.search(m.group(1))
                if d:
                    pending[d.group("key")] = d.group("value")
            else:
                out.append(Block(m.group(2), pending))
                pending = {}
        return out


def read_page(path: Path) -> Page:
    text = path.read_text(encoding="utf-8")
    title = text.splitlines()[0]
    facts: dict[str, str] = {}
    for m in re.finditer(
        r"^\|\s*([A-Za-z ]+?)\s*\|\s*(.+?)\s*\|\s*$", text.split("\n## ")[0], re.MULTILINE
    ):
        if set(m.group(1)) - set("- ") and m.group(1).strip():
            facts[m.group(1).strip().lower()] = m.group(2)
    sections: dict[str, str] = {}
    order: list[str] = []
    for chunk in text.split("\n## ")[1:]:
        heading, _, body = chunk.partition("\n")
        sections[heading.strip()] = body
        order.append(heading.strip())
    return Page(path.stem, title, facts, sections, order)
