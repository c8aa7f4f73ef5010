"""`accel-lint fix`: print the fixes as a diff, or write them with --apply."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import click

from accel_lint.baseline import FileLines
from accel_lint.cli.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    apply_baseline,
    common,
    fail,
    internal_error,
    jobs_option,
    read_stdin,
    selection_options,
    stdin_excluded,
    warn,
    warn_if_empty,
)
from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic
from accel_lint.files import discover, once_each
from accel_lint.lint import FixReport, fix_bytes, fix_paths
from accel_lint.report.text import render_concise
from accel_lint.writeback import WriteRefused, write_fixed


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@selection_options
@click.option(
    "--apply", "apply_", is_flag=True, help="Write the fixes (without it, print the diff)."
)
@click.option(
    "--diff",
    is_flag=True,
    help="Print the diff and write nothing (the default; accepted as ruff users type it).",
)
@click.option(
    "--exit-non-zero-on-fix", is_flag=True, help="With --apply, exit 1 when a file was changed."
)
@jobs_option
def fix(
    paths: tuple[str, ...],
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_file: Path | None,
    isolated: bool,
    unsafe_fixes: bool | None,
    stdin_filename: str | None,
    force_exclude: bool,
    extend_exclude: str | None,
    respect_gitignore: bool | None,
    no_cache: bool,
    quiet: bool,
    apply_: bool,
    exit_non_zero_on_fix: bool,
    jobs: int | None,
    diff: bool = False,
) -> None:
    """Fix PATHS: print the unified diff, or write it with --apply."""
    if diff and apply_:
        fail("--diff prints the diff and writes nothing; it cannot be combined with --apply")
    shared = common(
        paths,
        select,
        ignore,
        extend_select,
        config_file,
        isolated,
        unsafe_fixes,
        stdin_filename,
        extend_exclude,
        respect_gitignore,
    )
    settings = shared.settings
    reports: list[FixReport]
    if stdin_excluded(shared, force_exclude):
        data = read_stdin()
        if apply_:
            _write_bytes(sys.stdout, data)  # what a formatter does: the input, untouched
        sys.exit(EXIT_OK)
    if shared.stdin:
        reports = [fix_bytes(shared.stdin_filename or "-", read_stdin(), settings)]
    else:
        targets = discover(
            shared.paths, settings, force_exclude=force_exclude, settings_in=shared.settings_in
        )
        warn_if_empty(targets, shared.paths)
        targets = once_each(targets)
        reports = shared.each(
            targets,
            lambda group, group_settings: fix_paths(
                group, group_settings, use_cache=not no_cache, jobs=jobs
            ),
        )
    remaining: list[Diagnostic] = []
    changed_files = fixed_count = bugs = 0
    for report in reports:
        if report.note is not None:
            warn(report.path, report.note)
        if report.internal_error is not None:
            internal_error(report.path, report.internal_error)
            bugs += 1
            continue
        if report.error is not None:
            click.echo(f"accel-lint: error: {report.path}: {report.error}", err=True)
            bugs += 1
        remaining.extend(report.remaining)
        if shared.stdin and apply_:
            # the bytes as they are, so encoding, BOM and line endings pass through
            _write_bytes(sys.stdout, report.original if report.fixed is None else report.fixed)
            fixed_count += report.applied
            continue
        if report.fixed is None:
            continue
        if not apply_:
            changed_files += 1
            fixed_count += report.applied
            sys.stdout.write(report.diff)
            continue
        # counted only once written: a file left as it was is not "fixed"
        try:
            write_fixed(report.path, report.original, report.fixed)
        except WriteRefused as exc:
            click.echo(f"accel-lint: error: {report.path}: cannot write: {exc}", err=True)
            bugs += 1
        except OSError as exc:
            reason = exc.strerror or str(exc)
            click.echo(f"accel-lint: error: {report.path}: cannot write: {reason}", err=True)
            bugs += 1
        else:
            changed_files += 1
            fixed_count += report.applied
    if not shared.stdin and (
        shared.settings.baseline is not None or shared.settings_in is not None
    ):  # findings the baseline records do not hold a commit back (the pre-commit hook)
        remaining = apply_baseline(shared, remaining, None, FileLines(), quiet)
    if not quiet:
        _fix_summary(apply_, fixed_count, changed_files, remaining, settings, shared.stdin)
    if bugs:
        sys.exit(EXIT_ERROR)
    if apply_:
        if remaining or (exit_non_zero_on_fix and changed_files):
            sys.exit(EXIT_FINDINGS)
        sys.exit(EXIT_OK)
    if changed_files or any(d.code == "ACL000" for d in remaining):
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


def _write_bytes(stream: Any, data: bytes) -> None:
    stream.flush()
    buffer = getattr(stream, "buffer", None)
    if buffer is not None:
        buffer.write(data)
        buffer.flush()
    else:  # a text-only stream (an embedding test harness)
        stream.write(data.decode("utf-8", "replace"))


def _fix_summary(
    applied: bool,
    fixed: int,
    files: int,
    remaining: list[Diagnostic],
    settings: Settings,
    stdin: bool,
) -> None:
    err = sys.stderr
    verb = "Fixed" if applied else "Would fix"
    if fixed:
        where = "" if stdin else f" in {files} file{'s' if files != 1 else ''}"
        err.write(f"{verb} {fixed} finding{'s' if fixed != 1 else ''}{where}.\n")
    else:
        err.write("No fixes available.\n" if not remaining else "")
    if remaining:
        if applied or not fixed:
            render_concise(remaining, err, unsafe_fixes=settings.unsafe_fixes, color=None)
        else:
            err.write(
                f"{len(remaining)} finding{'s' if len(remaining) != 1 else ''} would remain "
                "(run `accel-lint check` to see them).\n"
            )
