"""`# noqa` comments: reading them (from the tokens, so a `# noqa` inside a string
is no directive), removing codes from one (ACL001's fix) and adding codes to a
line (`check --add-noqa`). Nothing here needs a parse.

Grammar (flake8's): a bare `# noqa`, or `# noqa:` followed by codes separated by
commas or spaces; a file-level `# accel-lint: noqa: ACL101, ACL102` suppresses
those codes in the whole file.
"""

from __future__ import annotations

import io
import re
import tokenize
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
FILE_NOQA = re.compile(
    r"^#\s*accel-lint:\s*noqa:\s*(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*)", re.IGNORECASE
)
CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)
OUR_CODE = re.compile(r"^ACL\d{3}$")


@dataclass(frozen=True)
class Directive:
    row: int
    column: int  # 1-based, of the comment's `#`
    comment: str
    codes: tuple[str, ...] | None  # upper-case; None: a bare noqa comment (every code)


@dataclass(frozen=True)
class Suppressions:
    lines: tuple[Directive, ...]  # in file order
    file_codes: frozenset[str]

    def by_row(self) -> dict[int, Directive]:
        return {d.row: d for d in self.lines}


def _comments(text: str) -> list[tuple[int, int, str]] | None:
    try:
        return [
            (tok.start[0], tok.start[1] + 1, tok.string)
            for tok in tokenize.generate_tokens(io.StringIO(text).readline)
            if tok.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return None


def read(text: str) -> Suppressions:
    if "noqa" not in text and "NOQA" not in text.upper():
        return Suppressions((), frozenset())
    found = _comments(text)
    if found is None:  # not tokenizable: read the lines as they are
        found = [
            (row, line.index("#") + 1, line[line.index("#") :])
            for row, line in enumerate(text.splitlines(), start=1)
            if "#" in line
        ]
    lines: list[Directive] = []
    file_codes: set[str] = set()
    for row, column, comment in found:
        whole = FILE_NOQA.match(comment)
        if whole is not None:
            file_codes.update(c.upper() for c in CODE.findall(whole.group("codes")))
            continue
        m = NOQA.search(comment)
        if m is None:
            continue
        codes = m.group("codes")
        parsed = None if codes is None else tuple(c.upper() for c in CODE.findall(codes))
        lines.append(Directive(row, column, comment, parsed))
    return Suppressions(tuple(lines), frozenset(file_codes))


def covers(directive: Directive | None, code: str) -> bool:
    if directive is None:
        return False
    return directive.codes is None or code.upper() in directive.codes


def without_codes(comment: str, drop: Iterable[str]) -> str | None:
    """The comment with `drop` taken out of its noqa list; None when nothing is left."""
    m = NOQA.search(comment)
    if m is None or m.group("codes") is None:
        return comment
    gone = {c.upper() for c in drop}
    kept = [c for c in CODE.findall(m.group("codes")) if c.upper() not in gone]
    if kept:
        return comment[: m.start()] + "# noqa: " + ", ".join(kept) + comment[m.end() :]
    rest = (comment[: m.start()] + comment[m.end() :]).strip()
    if rest in ("", "#"):
        return None
    return rest if rest.startswith("#") else "# " + rest


def add_codes(text: str, wanted: Mapping[int, Iterable[str]]) -> tuple[str, int, list[int]]:
    """`text` with `# noqa: CODES` on each wanted row (merged into a noqa already
    there); the new text, the number of lines changed, and the rows that cannot
    take a comment (inside a multi-line string, or continued with a backslash)."""
    lines = text.splitlines(keepends=True)
    existing = read(text).by_row()
    blocked = _blocked_rows(text)
    changed = 0
    skipped: list[int] = []
    for row in sorted(wanted):
        if not 0 < row <= len(lines):
            continue
        if row in blocked:
            skipped.append(row)
            continue
        line = lines[row - 1]
        body = line.rstrip("\r\n")
        ending = line[len(body) :]
        codes = sorted({c.upper() for c in wanted[row]})
        directive = existing.get(row)
        if directive is not None:
            if directive.codes is None:
                continue  # a bare noqa already covers every code
            merged = list(directive.codes) + [c for c in codes if c not in directive.codes]
            if merged == list(directive.codes):
                continue
            start = directive.column - 1
            comment = body[start:]
            m = NOQA.search(comment)
            assert m is not None
            comment = comment[: m.start()] + "# noqa: " + ", ".join(merged) + comment[m.end() :]
            body = body[:start] + comment
        else:
            body = body.rstrip(" \t") + "  # noqa: " + ", ".join(codes)
        lines[row - 1] = body + ending
        changed += 1
    return "".join(lines), changed, skipped


def _blocked_rows(text: str) -> set[int]:
    rows: set[int] = set()
    try:
        for tok in tokenize.generate_tokens(io.StringIO(text).readline):
            if tok.start[0] < tok.end[0] and tok.type not in (tokenize.NL, tokenize.NEWLINE):
                rows.update(range(tok.start[0], tok.end[0]))  # a multi-line string
    except (tokenize.TokenError, SyntaxError, IndentationError):
        return set(range(1, text.count("\n") + 2))
    for row, line in enumerate(text.splitlines(), start=1):
        if line.rstrip().endswith("\\"):
            rows.add(row)
    return rows
