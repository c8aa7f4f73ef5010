"""Lint files: read, decide which rules can match, analyse, and turn findings into
diagnostics. A failure in one file never stops the others.

`lint_paths` is what `check` runs over a tree: files whose bytes are unchanged
come from the result cache (`accel_lint.cache`), the rest are linted in worker
processes (`accel_lint.parallel`) when there are enough of them to pay for the
pool, and the reports come back in input order either way.
"""

from __future__ import annotations

import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from accel_lint.cache import ResultCache, content_hash
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
from accel_lint.parallel import available_cpus, map_ordered

# Below this many files to lint, forking workers costs more than it saves.
PARALLEL_MIN_FILES = 8


@dataclass
class FileReport:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    internal_error: str | None = None  # a bug of ours (exit 2), with the traceback


def lint_bytes(
    path: str, data: bytes, settings: Settings, *, with_edits: bool = False
) -> FileReport:
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
    return _lint_hashed(path, settings, with_edits)[0]


def _lint_hashed(path: str, settings: Settings, with_edits: bool) -> tuple[FileReport, str | None]:
    """The report and the hash of the bytes it describes (None when unreadable)."""
    try:
        data = read_bytes(path)
    except ReadError as exc:
        return FileReport(path, [parse_error(path, f"cannot read file: {exc}")]), None
    return lint_bytes(path, data, settings, with_edits=with_edits), content_hash(data)


# Set once per worker process by `_init_worker`, so the settings cross the
# process boundary once instead of once per file.
_worker_state: tuple[Settings, bool] | None = None


def _init_worker(settings: Settings, with_edits: bool) -> None:
    global _worker_state
    _worker_state = (settings, with_edits)


def _worker_task(path: str) -> tuple[FileReport, str | None]:
    assert _worker_state is not None
    settings, with_edits = _worker_state
    return _lint_hashed(path, settings, with_edits)


def lint_paths(
    files: Sequence[str],
    settings: Settings,
    *,
    with_edits: bool = False,
    use_cache: bool = True,
    jobs: int | None = None,
) -> list[FileReport]:
    """Reports in input order. `jobs`: worker processes (None: one per available CPU)."""
    cache = ResultCache.open(settings) if use_cache else None
    reports: list[FileReport | None] = [None] * len(files)
    todo: list[int] = []
    weights: list[int] = []
    for index, path in enumerate(files):
        if cache is None:
            todo.append(index)
            weights.append(_size(path))
            continue
        try:
            data = read_bytes(path)
        except ReadError as exc:
            reports[index] = FileReport(path, [parse_error(path, f"cannot read file: {exc}")])
            continue
        hit = cache.get(path, content_hash(data), settings.codes_for(path), with_edits=with_edits)
        if hit is None:
            todo.append(index)
            weights.append(len(data))
        else:
            reports[index] = FileReport(path, hit)

    # Workers get paths, not bytes: they read the file again (from the page cache)
    # and hash what they linted, so an edit made meanwhile is never cached under
    # the old content.
    paths = [files[i] for i in todo]
    workers = available_cpus() if jobs is None else max(1, jobs)
    if workers > 1 and len(paths) >= PARALLEL_MIN_FILES:
        outcomes = map_ordered(
            _worker_task,
            paths,
            weights,
            jobs=workers,
            initializer=_init_worker,
            initargs=(settings, with_edits),
        )
    else:
        outcomes = [_lint_hashed(path, settings, with_edits) for path in paths]

    for index, (report, digest) in zip(todo, outcomes):
        reports[index] = report
        # a bug of ours is reported again on every run, never remembered
        if cache is not None and digest is not None and report.internal_error is None:
            path = files[index]
            cache.put(
                path, digest, settings.codes_for(path), report.diagnostics, with_edits=with_edits
            )
    if cache is not None:
        cache.save()
    return [report for report in reports if report is not None]


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0
