"""Lint files: read, decide which rules can match, analyse, and turn findings into
diagnostics. A failure in one file never stops the others."""

from __future__ import annotations

import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from accel_lint.config import Settings
from accel_lint.engine import (
    DecodeError,
    Diagnostic,
    analyze,
    decode,
    diagnostics,
    parse_error,
    rules_for,
    skip_file,
)
from accel_lint.files import ReadError, read_bytes


@dataclass
class FileReport:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    internal_error: str | None = None  # a bug of ours (exit 2), with the traceback


def lint_bytes(path: str, data: bytes, settings: Settings, *, with_edits: bool = False) -> FileReport:
    if skip_file(data):
        return FileReport(path)
    try:
        source = decode(data)
    except DecodeError as exc:
        return FileReport(path, [parse_error(path, str(exc))])
    try:
        rules = rules_for(settings.codes_for(path), data)
        analysis = analyze(path, source, settings, rules)
        return FileReport(path, diagnostics(analysis, with_edits=with_edits))
    except Exception:  # a rule's bug must not take the whole run down
        return FileReport(path, internal_error=traceback.format_exc())


def lint_file(path: str, settings: Settings, *, with_edits: bool = False) -> FileReport:
    try:
        data = read_bytes(path)
    except ReadError as exc:
        return FileReport(path, [parse_error(path, f"cannot read file: {exc}")])
    return lint_bytes(path, data, settings, with_edits=with_edits)


def lint_paths(
    files: Sequence[str], settings: Settings, *, with_edits: bool = False, use_cache: bool = True
) -> list[FileReport]:
    """Reports in input order."""
    del use_cache
    return [lint_file(path, settings, with_edits=with_edits) for path in files]
