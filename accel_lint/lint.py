"""Lint files: read, decide which rules can match, analyse, and turn findings into
diagnostics. A failure in one file never stops the others.

`lint_paths` is what `check` runs over a tree: files whose bytes are unchanged
come from the result cache (`accel_lint.cache`), the rest are linted in worker
processes (`accel_lint.parallel`) when there are enough of them to pay for the
pool, and the reports come back in input order either way.

`fix_paths` is what `fix` runs: the same cached, parallel lint first, then the
fix loop only for the files with a fix to apply (a few in a large tree), again
in workers.
"""

from __future__ import annotations

import difflib
import os
import traceback
from collections.abc import Sequence
from dataclasses import dataclass, field

from accel_lint.cache import ResultCache, content_hash
from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic, parse_error
from accel_lint.files import ReadError, read_bytes
from accel_lint.parallel import available_cpus, map_ordered
from accel_lint.rules import RULES
from accel_lint.source import DecodeError, decode, skip_file, syntax_check

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
        if (
            not _may_match(settings.codes_for(path), data)
            and syntax_check(path, source.text) is None
        ):
            return FileReport(path)  # no rule can match and CPython accepts it: no libcst
        # libcst and the rules load only for files a rule may match (or CPython rejects)
        from accel_lint.engine import analyze, diagnostics, rules_for

        analysis = analyze(path, source, settings, rules_for(settings.codes_for(path), data))
        return FileReport(path, diagnostics(analysis, with_edits=with_edits))
    except Exception:  # a rule's bug must not take the whole run down
        return FileReport(path, internal_error=traceback.format_exc())


def _may_match(codes: frozenset[str], data: bytes) -> bool:
    return any(entry.code in codes and entry.may_match(data) for entry in RULES)


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


def _init_worker(settings: Settings, with_edits: bool = False) -> None:
    global _worker_state
    _worker_state = (settings, with_edits)


def _worker_task(path: str) -> tuple[FileReport, str | None]:
    assert _worker_state is not None
    settings, with_edits = _worker_state
    return _lint_hashed(path, settings, with_edits)


def _workers(jobs: int | None) -> int:
    return available_cpus() if jobs is None else max(1, jobs)


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
    workers = _workers(jobs)
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


@dataclass
class FixReport:
    path: str
    original: bytes = b""
    fixed: bytes | None = None  # the new bytes; None: the file stays as it is
    diff: str = ""
    applied: int = 0  # findings fixed
    remaining: list[Diagnostic] = field(default_factory=list)
    error: str | None = None  # the fixer gave up (no convergence, unparsable result)
    internal_error: str | None = None  # a bug of ours, with the traceback


def fix_bytes(path: str, data: bytes, settings: Settings) -> FixReport:
    report = FixReport(path, data)
    if skip_file(data):
        return report
    try:
        source = decode(data)
    except DecodeError as exc:
        report.remaining.append(parse_error(path, str(exc)))
        return report
    try:
        from accel_lint.engine import diagnostics, rules_for
        from accel_lint.fixer import fix_source

        rules = rules_for(settings.codes_for(path), data)
        outcome = fix_source(path, source, settings, rules, unsafe=settings.unsafe_fixes)
        if outcome.remaining is not None:
            report.remaining = diagnostics(outcome.remaining)
    except Exception:
        report.internal_error = traceback.format_exc()
        return report
    report.error = outcome.error
    if outcome.changed:
        fixed = source.encode(outcome.fixed_text)
        if fixed != data:
            report.fixed = fixed
            report.applied = len(outcome.applied)
            report.diff = unified_diff(path, source.text, outcome.fixed_text)
    return report


def _fix_file(path: str, settings: Settings) -> FixReport:
    try:
        data = read_bytes(path)
    except ReadError as exc:
        return FixReport(path, remaining=[parse_error(path, f"cannot read file: {exc}")])
    return fix_bytes(path, data, settings)


def _fix_task(path: str) -> FixReport:
    assert _worker_state is not None
    return _fix_file(path, _worker_state[0])


def _fixable(diagnostic: Diagnostic, unsafe: bool) -> bool:
    return diagnostic.has_fix and (unsafe or diagnostic.fix_safety == "safe")


def fix_paths(
    files: Sequence[str], settings: Settings, *, use_cache: bool = True, jobs: int | None = None
) -> list[FixReport]:
    """Reports in input order; nothing is written. A file whose (cached) findings
    offer no applicable fix is not analysed again: its findings are what remains."""
    reports = [
        FixReport(r.path, remaining=r.diagnostics, internal_error=r.internal_error)
        for r in lint_paths(files, settings, use_cache=use_cache, jobs=jobs)
    ]
    todo = [
        i
        for i, r in enumerate(reports)
        if r.internal_error is None and any(_fixable(d, settings.unsafe_fixes) for d in r.remaining)
    ]
    paths = [reports[i].path for i in todo]
    workers = _workers(jobs)
    if workers > 1 and len(paths) >= PARALLEL_MIN_FILES:
        fixed = map_ordered(
            _fix_task,
            paths,
            [_size(p) for p in paths],
            jobs=workers,
            initializer=_init_worker,
            initargs=(settings,),
        )
    else:
        fixed = [_fix_file(p, settings) for p in paths]
    for index, report in zip(todo, fixed):
        reports[index] = report
    return reports


def unified_diff(path: str, old: str, new: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True),
        new.splitlines(keepends=True),
        fromfile=f"a/{path}",
        tofile=f"b/{path}",
    )
    text = ""
    for line in lines:
        text += line if line.endswith(("\n", "\r")) else line + "\n\\ No newline at end of file\n"
    return text
