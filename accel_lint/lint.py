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

import gc
import importlib
import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic, parse_error
from accel_lint.files import ReadError, read_bytes, too_large
from accel_lint.rules import RULES, RuleEntry, matching
from accel_lint.source import DecodeError, Source, decode, skip_file, syntax_check

if TYPE_CHECKING:  # libcst loads only for files a rule may match
    from accel_lint.incremental import Reparser

# Below this many files to lint, forking workers costs more than it saves.
PARALLEL_MIN_FILES = 8
# what `warm_start` reads at most, looking for the rules the files need
WARM_BYTES = 1 << 20


@dataclass
class FileReport:
    path: str
    diagnostics: list[Diagnostic] = field(default_factory=list)
    internal_error: str | None = None  # a bug of ours (exit 2), with the traceback
    note: str | None = None  # a warning about how the file was checked (never cached)


def lint_bytes(
    path: str,
    data: bytes,
    settings: Settings,
    *,
    with_edits: bool = False,
    reparser: Reparser | None = None,
) -> FileReport:
    """`reparser`: an open document's last parse (the language server's), reused
    where the text is unchanged."""
    if path.lower().endswith(".ipynb"):
        return _lint_notebook(path, data, settings, with_edits)
    large = too_large(len(data))  # what the CLI cannot read, the server and stdin pass
    if large is not None:
        return FileReport(path, [parse_error(path, large)])
    if skip_file(data):
        return FileReport(path)
    try:
        source = decode(data)
    except DecodeError as exc:
        return FileReport(path, [parse_error(path, str(exc))])
    return _lint_source(path, data, source, settings, with_edits, reparser)


def lint_program(
    path: str, text: str, settings: Settings, reparser: Reparser | None = None
) -> FileReport:
    """`text` checked as Python and reported as the file at `path`, whatever its
    name: the language server's notebook program (its open code cells joined, magics
    masked), which `lint_bytes` would read as a notebook's JSON under a `.ipynb` path."""
    data = text.encode("utf-8")
    if skip_file(data):
        return FileReport(path)
    return _lint_source(path, data, Source(text, "utf-8"), settings, False, reparser)


def _lint_source(
    path: str,
    data: bytes,
    source: Source,
    settings: Settings,
    with_edits: bool,
    reparser: Reparser | None = None,
) -> FileReport:
    try:
        codes = settings.codes_for(path)
        entries = matching(codes, data, path)
        if not entries and syntax_check(path, source.text) is None:
            return FileReport(path)  # no rule can match and CPython accepts it: no libcst
        # libcst and the rules load only for files a rule may match (or CPython rejects)
        # a rule not imported yet has no `rule` in its entry's dict
        if "accel_lint.engine" not in sys.modules or any(
            "rule" not in entry.__dict__ for entry in entries
        ):
            _import(entries)
        from accel_lint.engine import analyze, diagnostics
        from accel_lint.parse import analysis_conditions

        with analysis_conditions():
            rules = [entry.rule for entry in entries]
            analysis = analyze(path, source, settings, rules, reparser=reparser)
            found = diagnostics(analysis, with_edits=with_edits)
            note = analysis.note
            # the tree goes now, by reference counting, while the cyclic collector
            # is off: on, its next collection would visit every node still held
            analysis.release()
            del analysis
        return FileReport(path, found, note=note)
    except RecursionError:
        from accel_lint.parse import too_deep_to_analyse

        return FileReport(path, [too_deep_to_analyse(path)])
    except Exception:  # a rule's bug must not take the whole run down
        return FileReport(path, internal_error=_format_exc())


def _import(entries: Sequence[RuleEntry], parser: bool = False) -> None:
    """Import libcst, the engine and the rules of `entries` with the cyclic collector
    off, then freeze what they built: it lives until exit, so no collection need
    walk it, during the imports (a tenth of their time) or after them. `parser`:
    libcst's parser too (a file CPython's tree rules out never loads it). A cycle
    that became garbage earlier in the run and was not collected yet is frozen
    with it: at most once per rule imported."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        import accel_lint.engine  # noqa: F401  (libcst, the facts, the positions)

        if parser:
            importlib.import_module("libcst.native")  # the parser's types, built on import
        for entry in entries:
            _ = entry.rule
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


def _lint_notebook(path: str, data: bytes, settings: Settings, with_edits: bool) -> FileReport:
    """A notebook's code cells as one program; findings at their cell and row."""
    from accel_lint.notebook import load  # only when a notebook is linted

    book = load(path, data)
    if isinstance(book, Diagnostic):
        return FileReport(path, [book])
    program = book.program.encode()
    if not book.python or skip_file(program):
        return FileReport(path)
    report = _lint_source(path, program, Source(book.program, "utf-8"), settings, with_edits)
    found = [book.map_diagnostic(d) for d in report.diagnostics]
    if book.broken:  # a notebook with a cell that does not parse gets no fixes
        found = [_unfixable(d, "a cell of the notebook does not parse") for d in found]
    report.diagnostics = _cell_order(found + book.broken)
    return report


def _unfixable(diag: Diagnostic, reason: str) -> Diagnostic:
    if not diag.has_fix:
        return diag
    return replace(
        diag, fix=None, has_fix=False, fix_safety=None, fix_message=None, no_fix_reason=reason
    )


def _cell_order(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    return sorted(diagnostics, key=lambda d: (d.cell or 0, d.row, d.column, d.code))


def _format_exc() -> str:
    import traceback  # only for a bug of ours

    return traceback.format_exc()


def _lint_hashed(
    path: str, settings: Settings, with_edits: bool, hashed: bool = True
) -> tuple[FileReport, str | None]:
    """The report and the hash of the bytes it describes (None when unreadable, or
    not `hashed`: without a cache nothing asks for it)."""
    try:
        data = read_bytes(path)
    except ReadError as exc:
        return FileReport(path, [parse_error(path, f"cannot read file: {exc}")]), None
    report = lint_bytes(path, data, settings, with_edits=with_edits)
    if not hashed:
        return report, None
    from accel_lint.cache import content_hash  # hashlib loads only for a cached run

    return report, content_hash(data)


# Set once per worker process by `_init_worker`, so the settings cross the
# process boundary once instead of once per file.
_worker_state: tuple[Settings, bool, bool] | None = None


def _init_worker(settings: Settings, with_edits: bool = False, hashed: bool = True) -> None:
    global _worker_state
    _worker_state = (settings, with_edits, hashed)


def _worker_task(path: str) -> tuple[FileReport, str | None]:
    assert _worker_state is not None
    settings, with_edits, hashed = _worker_state
    return _lint_hashed(path, settings, with_edits, hashed)


def _lint_crashed(path: str, how: str) -> tuple[FileReport, str | None]:
    return FileReport(path, internal_error=f"{how} while it checked this file"), None


def _fix_crashed(path: str, how: str) -> FixReport:
    return FixReport(path, internal_error=f"{how} while it fixed this file")


def _workers(jobs: int | None, files: int) -> int:
    """Worker processes for `files` files: none below `PARALLEL_MIN_FILES` (nor is
    the process machinery imported then: a one-file check stays light)."""
    if files < PARALLEL_MIN_FILES or jobs == 1:
        return 1
    from accel_lint.parallel import available_cpus

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
    cache = None
    if use_cache:
        from accel_lint.cache import ResultCache, content_hash

        cache = ResultCache.open(settings)
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
    workers = _workers(jobs, len(paths))
    if workers > 1:
        from accel_lint.parallel import map_ordered

        warm_start(paths, settings)
        outcomes = map_ordered(
            _worker_task,
            paths,
            weights,
            jobs=workers,
            initializer=_init_worker,
            initargs=(settings, with_edits, cache is not None),
            on_crash=_lint_crashed,
        )
    else:
        outcomes = [_lint_hashed(path, settings, with_edits, cache is not None) for path in paths]

    for index, (report, digest) in zip(todo, outcomes):
        reports[index] = report
        # a bug of ours is reported again on every run, never remembered
        if (
            cache is not None
            and digest is not None
            and report.internal_error is None
            and report.note is None
        ):
            path = files[index]
            cache.put(
                path, digest, settings.codes_for(path), report.diagnostics, with_edits=with_edits
            )
    if cache is not None:
        cache.save()
    return [report for report in reports if report is not None]


def warm_start(paths: Sequence[str], settings: Settings) -> None:
    """Import here, once, what linting `paths` will import (libcst, the engine and
    the rules whose trigger words the files spell), then freeze the collector's
    view of it: workers forked afterwards start warm instead of each importing it
    all again, and no collection in them visits the imported objects (nor writes
    to their pages, which forked workers share with this process until written).

    Only trigger words are looked for (not the requirements: their patterns cost
    more than the import they would save), each rule's until one file spells
    them, and in files up to `WARM_BYTES` in all: on a large tree, looking for a
    word no file spells cost more than importing a rule (its words searched in
    1 MB of files cost about what its import does), so a rule found only
    further on is imported by the workers that need it, each once."""
    todo = list(RULES)
    needed: list[RuleEntry] = []
    seen = 0
    for path in paths:
        if not todo or seen >= WARM_BYTES:
            break
        try:
            data = read_bytes(path)
        except ReadError:
            continue
        seen += len(data)
        codes = settings.codes_for(path)
        rest: list[RuleEntry] = []
        for entry in todo:
            if entry.code in codes and (
                not entry.triggers or any(word in data for word in entry.triggers)
            ):
                needed.append(entry)
            else:
                rest.append(entry)
        todo = rest
    if needed:
        _import(needed, parser=True)
    else:
        gc.freeze()


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
    note: str | None = None  # a warning about how the file was checked


def fix_bytes(path: str, data: bytes, settings: Settings, with_diff: bool = True) -> FixReport:
    """The file fixed in memory; `with_diff=False` leaves `diff` empty (a count of
    what the fixes apply needs no diff, nor difflib)."""
    if path.lower().endswith(".ipynb"):
        return _fix_notebook(path, data, settings)
    report = FixReport(path, data)
    large = too_large(len(data))
    if large is not None:
        report.remaining.append(parse_error(path, large))
        return report
    if skip_file(data):
        return report
    try:
        source = decode(data)
    except DecodeError as exc:
        report.remaining.append(parse_error(path, str(exc)))
        return report
    try:
        outcome = _fix_text(path, data, source, settings)
    except RecursionError:
        from accel_lint.parse import too_deep_to_analyse

        report.remaining = [too_deep_to_analyse(path)]
        return report
    except Exception:
        report.internal_error = _format_exc()
        return report
    report.error = outcome.error
    report.note = outcome.note
    if outcome.remaining is not None:
        report.remaining = outcome.remaining
    if outcome.changed:
        fixed = source.encode(outcome.fixed_text)
        if fixed != data:
            report.fixed = fixed
            report.applied = outcome.applied
            if with_diff:
                report.diff = unified_diff(path, source.text, outcome.fixed_text)
    return report


@dataclass
class _TextFix:
    fixed_text: str
    changed: bool
    applied: int
    remaining: list[Diagnostic] | None
    error: str | None
    note: str | None = None  # how the file was checked (syntax newer than this Python)


def _fix_text(path: str, data: bytes, source: Source, settings: Settings) -> _TextFix:
    from accel_lint.engine import diagnostics
    from accel_lint.fixer import fix_source
    from accel_lint.parse import analysis_conditions

    with analysis_conditions():
        outcome = fix_source(
            path, source, settings, settings.codes_for(path), unsafe=settings.unsafe_fixes
        )
        remaining = diagnostics(outcome.remaining) if outcome.remaining is not None else None
    return _TextFix(
        outcome.fixed_text,
        outcome.changed,
        len(outcome.applied),
        remaining,
        outcome.error,
        outcome.remaining.note if outcome.remaining is not None else None,
    )


def _fix_notebook(path: str, data: bytes, settings: Settings) -> FixReport:
    """Fix the cells as one program and splice the changed cells' sources back into
    the notebook's own bytes. A notebook with a cell that does not parse gets no fixes."""
    from accel_lint.notebook import NotebookError, load

    report = FixReport(path, data)
    book = load(path, data)
    if isinstance(book, Diagnostic):
        report.remaining = [book]
        return report
    program = book.program.encode()
    if not book.python or skip_file(program):
        return report
    if book.broken:
        report.remaining = _lint_notebook(path, data, settings, False).diagnostics
        return report
    try:
        outcome = _fix_text(path, program, Source(book.program, "utf-8"), settings)
        report.error = outcome.error
        if not outcome.changed:
            report.remaining = [book.map_diagnostic(d) for d in outcome.remaining or []]
            return report
        try:
            texts = book.cell_texts(outcome.fixed_text)
        except NotebookError as exc:
            report.error = f"the fixed cells could not be written back ({exc}); unchanged"
            report.remaining = _lint_notebook(path, data, settings, False).diagnostics
            return report
        old = {cell.index: cell.text for cell in book.cells}
        changed = {index: text for index, text in texts.items() if text != old[index]}
        fixed = book.with_sources(changed).encode("utf-8")
        if data.startswith(b"\xef\xbb\xbf"):
            fixed = b"\xef\xbb\xbf" + fixed
        after = load(path, fixed)
        assert not isinstance(after, Diagnostic)
        report.remaining = _cell_order([after.map_diagnostic(d) for d in outcome.remaining or []])
        if fixed != data:
            report.fixed = fixed
            report.applied = outcome.applied
            report.diff = "".join(
                unified_diff(f"{path}:cell {index}", old[index], changed[index])
                for index in sorted(changed)
            )
    except Exception:
        report.internal_error = _format_exc()
    return report


def _fix_file(path: str, settings: Settings, with_diff: bool = True) -> FixReport:
    try:
        data = read_bytes(path)
    except ReadError as exc:
        return FixReport(path, remaining=[parse_error(path, f"cannot read file: {exc}")])
    return fix_bytes(path, data, settings, with_diff)


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
        FixReport(r.path, remaining=r.diagnostics, internal_error=r.internal_error, note=r.note)
        for r in lint_paths(files, settings, use_cache=use_cache, jobs=jobs)
    ]
    todo = [
        i
        for i, r in enumerate(reports)
        if r.internal_error is None and any(_fixable(d, settings.unsafe_fixes) for d in r.remaining)
    ]
    paths = [reports[i].path for i in todo]
    workers = _workers(jobs, len(paths))
    if workers > 1:
        from accel_lint.parallel import map_ordered

        fixed = map_ordered(
            _fix_task,
            paths,
            [_size(p) for p in paths],
            jobs=workers,
            initializer=_init_worker,
            initargs=(settings,),
            on_crash=_fix_crashed,
        )
    else:
        fixed = [_fix_file(p, settings) for p in paths]
    for index, report in zip(todo, fixed):
        reports[index] = report
    return reports


def revealed_by_fixes(
    reports: Sequence[FileReport], settings: Settings, *, jobs: int | None = None
) -> int:
    """How many more fixes `fix --apply` makes than `check` counts as fixable: the
    fixer repeats until nothing fixable is left, and a fix can reveal a finding
    (a loader the fix moved now matches another rule). Only files with an
    applicable fix are fixed (in memory, in parallel as `fix` does); the others
    cost nothing."""
    unsafe = settings.unsafe_fixes
    todo = [
        r
        for r in reports
        if r.internal_error is None and any(_fixable(d, unsafe) for d in r.diagnostics)
    ]
    if not todo:
        return 0
    paths = [r.path for r in todo]
    workers = _workers(jobs, len(paths))
    if workers > 1:
        from accel_lint.parallel import map_ordered

        fixed = map_ordered(
            _fix_task,
            paths,
            [_size(p) for p in paths],
            jobs=workers,
            initializer=_init_worker,
            initargs=(settings,),
            on_crash=_fix_crashed,
        )
    else:
        fixed = [_fix_file(p, settings, with_diff=False) for p in paths]
    return sum(
        max(0, after.applied - sum(1 for d in before.diagnostics if _fixable(d, unsafe)))
        for before, after in zip(todo, fixed)
    )


def unified_diff(path: str, old: str, new: str) -> str:
    import difflib

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


# -- check --add-noqa ------------------------------------------------------------


@dataclass
class NoqaOutcome:
    files: int = 0  # files changed
    lines: int = 0  # lines changed
    skipped: list[tuple[str, int]] = field(default_factory=list)  # rows a comment cannot take
    errors: list[tuple[str, str]] = field(default_factory=list)

    def merge(self, other: NoqaOutcome) -> None:
        self.files += other.files
        self.lines += other.lines
        self.skipped.extend(other.skipped)
        self.errors.extend(other.errors)


def add_noqa_paths(
    files: Sequence[str], settings: Settings, *, use_cache: bool = True, jobs: int | None = None
) -> NoqaOutcome:
    """Append `# noqa: CODES` to the reported line of every finding (but ACL000, which
    no comment can suppress), merged into a noqa already there; write atomically."""
    from accel_lint.noqa import add_codes
    from accel_lint.writeback import WriteRefused, write_fixed

    outcome = NoqaOutcome()
    for report in lint_paths(files, settings, use_cache=use_cache, jobs=jobs):
        found = [d for d in report.diagnostics if d.code != "ACL000"]
        if report.internal_error is not None:
            outcome.errors.append((report.path, "internal error; run `check` to see it"))
            continue
        if not found:
            continue
        try:
            data = read_bytes(report.path)
            source = decode(data)
        except (ReadError, DecodeError) as exc:
            outcome.errors.append((report.path, str(exc)))
            continue
        notebook = report.path.lower().endswith(".ipynb")
        book = None
        text = source.text
        if notebook:
            from accel_lint.notebook import load

            loaded = load(report.path, data)
            if isinstance(loaded, Diagnostic):
                continue
            book = loaded
            text = book.program
        starts = {c.index: c.start for c in book.cells} if book is not None else {}
        wanted: dict[int, set[str]] = {}
        for diag in found:
            row = diag.row if diag.cell is None else starts[diag.cell] + diag.row - 1
            wanted.setdefault(row, set()).add(diag.code)
        new_text, changed, skipped = add_codes(text, wanted)
        outcome.skipped.extend((report.path, row) for row in skipped)
        if not changed:
            continue
        if (
            syntax_check(report.path, new_text) is not None
            and syntax_check(report.path, text) is None
        ):  # pragma: no cover - add_codes keeps away from strings and continuations
            outcome.errors.append((report.path, "adding noqa comments broke the file; unchanged"))
            continue
        if book is not None:
            old = {cell.index: cell.text for cell in book.cells}
            texts = book.cell_texts(new_text)
            new_data = book.with_sources({i: t for i, t in texts.items() if t != old[i]}).encode(
                "utf-8"
            )
        else:
            new_data = source.encode(new_text)
        try:
            # the file must still hold what was read; links, owner and mode are kept
            write_fixed(report.path, data, new_data)
        except WriteRefused as exc:
            outcome.errors.append((report.path, str(exc)))
            continue
        except OSError as exc:
            outcome.errors.append((report.path, f"cannot write: {exc.strerror}"))
            continue
        outcome.files += 1
        outcome.lines += changed
    return outcome
