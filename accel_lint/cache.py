"""The result cache: a file whose bytes did not change is not linted again.

Layout (ruff's cache layout): a `.accel_lint_cache/` directory
with a `CACHEDIR.TAG` and a `.gitignore` of `*`, holding one JSON file per
(accel-lint build, Python version, settings). That file maps each linted file's
absolute path to the SHA-256 of its bytes, the rule codes enabled for it, and
its diagnostics. Unlike ruff, files with findings are stored too: a cache that
only remembers clean files gains nothing on a repository where the rules fire.

A content hash, not a modification time, decides whether an entry is fresh, so
a fresh CI checkout (every mtime new) still hits. The cache never changes what
is reported: an entry whose hash, codes or format does not match is a miss,
and a cache that cannot be read or written is ignored, never an error.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import sys
import time
from collections.abc import Iterable
from functools import lru_cache
from pathlib import Path
from typing import Any

from accel_lint import __version__
from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic, Edit, FixView

CACHE_DIR_NAME = ".accel_lint_cache"
CACHE_DIR_ENV = "ACCEL_LINT_CACHE_DIR"
FORMAT = 1
MAX_AGE_DAYS = 30  # entries and cache files unseen this long are dropped

CACHEDIR_TAG = (
    "Signature: 8a477f597d28d172789f06886806bc55\n"
    "# This file is a cache directory tag created by accel-lint.\n"
    "# For information about cache directory tags see https://bford.info/cachedir/\n"
)


def content_hash(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@lru_cache(maxsize=1)
def tool_fingerprint() -> str:
    """The version, the Python version, and the package's own source.

    The source is part of the key because an editable install changes its
    rules without changing `__version__`; reading ~50 small files costs ~1 ms.
    """
    package = Path(__file__).resolve().parent
    digest = hashlib.sha256(f"{__version__}|{sys.version_info[:2]}".encode())
    for path in sorted(package.rglob("*.py")):
        digest.update(path.relative_to(package).as_posix().encode())
        with contextlib.suppress(OSError):
            digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()


def cache_dir(settings: Settings) -> Path:
    """`$ACCEL_LINT_CACHE_DIR`, else beside the configuration file, else in the
    working directory (ruff's choice: one cache per project, not one per linted folder)."""
    override = os.environ.get(CACHE_DIR_ENV)
    if override:
        return Path(override)
    base = settings.root if settings.config_file is not None else Path.cwd()
    return base / CACHE_DIR_NAME


def _codes_key(codes: Iterable[str]) -> str:
    return ",".join(sorted(codes))


# -- diagnostics to and from JSON (without the file name: it is the entry's key) --


def _dump(diag: Diagnostic) -> list[Any]:
    fix = None
    if diag.fix is not None:
        fix = [
            diag.fix.applicability,
            diag.fix.message,
            [[e.content, e.row, e.column, e.end_row, e.end_column, e.cell] for e in diag.fix.edits],
        ]
    return [
        diag.code,
        diag.name,
        diag.message,
        diag.row,
        diag.column,
        diag.end_row,
        diag.end_column,
        diag.has_fix,
        diag.fix_safety,
        diag.fix_message,
        fix,
        diag.cell,
        diag.no_fix_reason,
    ]


def _typed(value: Any, *types: type) -> Any:
    """`value` when it is of one of `types` (an int is not a bool here), else ValueError:
    an entry of valid JSON with other types is a miss, never a crash of a later run."""
    if isinstance(value, bool) and bool not in types:
        raise ValueError(f"unexpected {value!r} in the cache")
    if not isinstance(value, types):
        raise ValueError(f"unexpected {type(value).__name__} in the cache")
    return value


def _load(raw: list[Any], filename: str, with_edits: bool) -> Diagnostic:
    if len(raw) != 13:
        raise ValueError("unexpected entry length in the cache")
    code, name, message, row, column, end_row, end_column, has_fix, safety, fix_message, fix = raw[
        :11
    ]
    cell = _typed(raw[11], int, type(None))
    no_fix_reason = _typed(raw[12], str, type(None))
    for text in (code, name, message):
        _typed(text, str)
    for number in (row, column, end_row, end_column):
        _typed(number, int)
    _typed(has_fix, bool)
    _typed(safety, str, type(None))
    _typed(fix_message, str, type(None))
    view = None
    if fix is not None and with_edits:
        applicability, fmessage, edits = _typed(fix, list)
        _typed(applicability, str)
        _typed(fmessage, str)
        loaded = []
        for edit in _typed(edits, list):
            c, r, col, er, ec, edit_cell = _typed(edit, list)
            loaded.append(
                Edit(
                    _typed(c, str),
                    _typed(r, int),
                    _typed(col, int),
                    _typed(er, int),
                    _typed(ec, int),
                    _typed(edit_cell, int, type(None)),
                )
            )
        view = FixView(applicability, fmessage, tuple(loaded))
    return Diagnostic(
        code,
        name,
        message,
        filename,
        row,
        column,
        end_row,
        end_column,
        view,
        has_fix,
        safety,
        fix_message,
        no_fix_reason,
        cell=cell,
    )


class ResultCache:
    """The entries for one (build, settings) key. `get` and `put` work in memory;
    `save` merges them into the file on disk with an atomic rename."""

    def __init__(self, directory: Path, key: str) -> None:
        self.directory = directory
        self.path = directory / f"{key[:32]}.json"
        self._entries: dict[str, list[Any]] = self._read()
        self._dirty: dict[str, list[Any]] = {}
        self._today = int(time.time() // 86400)

    @classmethod
    def open(cls, settings: Settings) -> ResultCache:
        key = hashlib.sha256(
            f"{FORMAT}|{tool_fingerprint()}|{settings.fingerprint()}".encode()
        ).hexdigest()
        return cls(cache_dir(settings), key)

    def _read(self) -> dict[str, list[Any]]:
        try:
            with self.path.open("rb") as fh:
                data = json.load(fh)
        except (OSError, ValueError):
            return {}
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            return {}
        entries = data.get("entries")
        return entries if isinstance(entries, dict) else {}

    def get(
        self, path: str, digest: str, codes: Iterable[str], *, with_edits: bool
    ) -> list[Diagnostic] | None:
        """The diagnostics stored for this exact content and rule set, or None."""
        entry = self._entries.get(os.path.abspath(path))
        try:
            # entry: [sha256, codes, has edits, day last seen, diagnostics]
            stored_digest, stored_codes, has_edits, seen, raw = entry  # type: ignore[misc]
            if stored_digest != digest or stored_codes != _codes_key(codes):
                return None
            if with_edits and not has_edits:
                return None
            found = [_load(_typed(item, list), path, with_edits) for item in _typed(raw, list)]
        except (TypeError, ValueError):  # no entry, or one written by someone else
            return None
        if seen != self._today:
            self._dirty[os.path.abspath(path)] = [digest, stored_codes, has_edits, self._today, raw]
        return found

    def put(
        self,
        path: str,
        digest: str,
        codes: Iterable[str],
        diagnostics: Iterable[Diagnostic],
        *,
        with_edits: bool,
    ) -> None:
        self._dirty[os.path.abspath(path)] = [
            digest,
            _codes_key(codes),
            with_edits,
            self._today,
            [_dump(d) for d in diagnostics],
        ]

    def save(self) -> None:
        """Write what changed; on any failure the cache is simply not updated."""
        if not self._dirty:
            return
        with contextlib.suppress(OSError):
            self._prepare_directory()
            # another run may have saved since we read: merge onto the newest file
            entries = self._read()
            entries.update(self._dirty)
            oldest = self._today - MAX_AGE_DAYS
            entries = {
                path: entry
                for path, entry in entries.items()
                if isinstance(entry, list) and len(entry) == 5 and _day(entry[3]) >= oldest
            }
            self._write({"format": FORMAT, "version": __version__, "entries": entries})
            self._dirty = {}
            self._entries = entries
            self._prune_files()

    def _prepare_directory(self) -> None:
        self.directory.mkdir(parents=True, exist_ok=True)
        tag = self.directory / "CACHEDIR.TAG"
        if not tag.exists():
            tag.write_text(CACHEDIR_TAG, encoding="utf-8")
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Automatically created by accel-lint.\n*\n", encoding="utf-8")

    def _write(self, data: dict[str, Any]) -> None:
        import tempfile  # only when the cache is written

        fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                json.dump(data, fh, separators=(",", ":"))
            os.replace(tmp, self.path)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise

    def _prune_files(self) -> None:
        """Drop cache files of other settings or builds that nobody used for a month."""
        cutoff = time.time() - MAX_AGE_DAYS * 86400
        for other in self.directory.glob("*.json"):
            with contextlib.suppress(OSError):
                if other != self.path and other.stat().st_mtime < cutoff:
                    other.unlink()


def _day(value: Any) -> int:
    return value if isinstance(value, int) else -1
