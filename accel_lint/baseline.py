"""A baseline: today's findings, recorded so that only new ones are reported.

`check --write-baseline FILE` records each finding by fingerprint: its code, its
file's path relative to the baseline's directory, the finding's source line with
its whitespace normalised, and how many findings share those three (so the second
identical line in a file is a finding of its own). Line numbers are not part of
it: an edit elsewhere in the file does not make an old finding new. `check
--baseline FILE` (or `baseline = "FILE"` in the configuration) then hides the
findings the file records, up to the recorded count per fingerprint, in every
output format; ACL000 is never recorded nor hidden (a file that does not parse
cannot be checked, whatever was true of it before).
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path, PurePath

from accel_lint.diagnostic import PARSE_ERROR, Diagnostic

FORMAT = "accel-lint-baseline/1"
Key = tuple[str, str, str]  # code, path relative to the baseline, normalised line


class BaselineError(Exception):
    """The baseline file cannot be read or is not one; the CLI exits 2 with it."""


def normalised(line: str) -> str:
    return " ".join(line.split())


def _relative(path: str, base: Path) -> str:
    absolute = os.path.abspath(path)
    try:
        return PurePath(os.path.relpath(absolute, base)).as_posix()
    except ValueError:  # another drive
        return PurePath(absolute).as_posix()


def keys(
    diagnostics: Iterable[Diagnostic], base: Path, line_of: Callable[[Diagnostic], str]
) -> list[Key | None]:
    """Each diagnostic's fingerprint (None for ACL000, which is never baselined)."""
    return [
        None
        if d.code == PARSE_ERROR
        else (d.code, _relative(d.filename, base), normalised(line_of(d)))
        for d in diagnostics
    ]


@dataclass(frozen=True)
class Baseline:
    path: Path
    counts: Counter[Key]

    @classmethod
    def load(cls, path: Path) -> Baseline:
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except OSError as exc:
            raise BaselineError(f"{path}: cannot read the baseline: {exc.strerror}") from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise BaselineError(f"{path}: not an accel-lint baseline (not JSON: {exc})") from exc
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise BaselineError(
                f"{path}: not an accel-lint baseline (write one with `check --write-baseline`)"
            )
        counts: Counter[Key] = Counter()
        for entry in data.get("findings", []):
            if not (
                isinstance(entry, dict)
                and all(isinstance(entry.get(k), str) for k in ("code", "path", "source"))
                and isinstance(entry.get("count", 1), int)
            ):
                raise BaselineError(f"{path}: a finding without code, path, source or count")
            counts[(entry["code"], entry["path"], entry["source"])] += entry.get("count", 1)
        return cls(path, counts)

    def split(
        self, diagnostics: Sequence[Diagnostic], line_of: Callable[[Diagnostic], str]
    ) -> tuple[list[Diagnostic], int]:
        """The diagnostics the baseline does not record (in their order), and how many
        it hid. Within one fingerprint the first ones in file order are the old ones."""
        left = Counter(self.counts)
        kept: list[Diagnostic] = []
        hidden = 0
        for diagnostic, key in zip(
            diagnostics, keys(diagnostics, self.path.parent.resolve(), line_of)
        ):
            if key is not None and left[key] > 0:
                left[key] -= 1
                hidden += 1
            else:
                kept.append(diagnostic)
        return kept, hidden


def write(
    path: Path, diagnostics: Sequence[Diagnostic], line_of: Callable[[Diagnostic], str]
) -> int:
    """Record `diagnostics` in `path` (atomically); the number recorded."""
    base = path.parent.resolve()
    counts = Counter(k for k in keys(diagnostics, base, line_of) if k is not None)
    findings = [
        {"code": code, "path": where, "source": source, "count": count}
        for (code, where, source), count in sorted(
            counts.items(), key=lambda kv: kv[0][1:] + kv[0][:1]
        )
    ]
    text = json.dumps({"format": FORMAT, "findings": findings}, indent=2) + "\n"
    temporary = path.with_name(f".{path.name}.accel-lint-tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)
    return sum(counts.values())


def _file_order(item: tuple[Key, int]) -> tuple[str, str, str]:
    (code, where, source), _ = item
    return where, code, source


class FileLines:
    """The source line a diagnostic points at, each file (or notebook cell) read once."""

    def __init__(self) -> None:
        self._files: dict[tuple[str, int | None], tuple[str, ...]] = {}

    def __call__(self, diagnostic: Diagnostic) -> str:
        key = (diagnostic.filename, diagnostic.cell)
        lines = self._files.get(key)
        if lines is None:
            lines = self._files[key] = _read(*key)
        return lines[diagnostic.row - 1] if 0 < diagnostic.row <= len(lines) else ""


def _read(path: str, cell: int | None) -> tuple[str, ...]:
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as handle:
            text = handle.read()
    except OSError:
        return ()
    if cell is None:
        return tuple(text.splitlines())
    try:  # a notebook: the cell's own lines
        source = json.loads(text.lstrip("\ufeff"))["cells"][cell - 1].get("source", "")
    except (ValueError, LookupError, TypeError, AttributeError):
        return ()
    return tuple(("".join(source) if isinstance(source, list) else str(source)).split("\n"))
