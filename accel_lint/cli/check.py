"""`accel-lint check`: lint files and print the findings."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any, TextIO, cast

import click

from accel_lint.cli.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    common,
    fail,
    internal_error,
    jobs_option,
    selection_options,
)
from accel_lint.diagnostic import Diagnostic
from accel_lint.files import discover
from accel_lint.lint import FileReport, lint_bytes, lint_paths
from accel_lint.report import FORMATS, render
from accel_lint.report.text import render_statistics


@click.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@selection_options
@click.option(
    "--output-format",
    type=click.Choice(FORMATS),
    default="full",
    show_default=True,
    envvar="ACCEL_LINT_OUTPUT_FORMAT",
    help="How to print findings.",
)
@click.option("--statistics", is_flag=True, help="Count findings per rule instead of listing them.")
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option(
    "--diff",
    is_flag=True,
    help="Print the diff of the fixes instead of the findings, like `fix` without --apply; "
    "exit 1 when fixes are pending.",
)
@jobs_option
@click.pass_context
def check(
    ctx: click.Context,
    paths: tuple[str, ...],
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_file: Path | None,
    isolated: bool,
    unsafe_fixes: bool | None,
    stdin_filename: str | None,
    force_exclude: bool,
    no_cache: bool,
    quiet: bool,
    output_format: str,
    statistics: bool,
    exit_zero: bool,
    diff: bool,
    jobs: int | None,
) -> None:
    """Lint PATHS (files or directories; `-` reads standard input)."""
    if diff:
        if statistics:
            fail("--diff and --statistics cannot be combined")
        try:
            # the fixer loads libcst: only when asked for
            from accel_lint.cli.fix import fix

            ctx.invoke(
                fix,
                paths=paths,
                select=select,
                ignore=ignore,
                extend_select=extend_select,
                config_file=config_file,
                isolated=isolated,
                unsafe_fixes=unsafe_fixes,
                stdin_filename=stdin_filename,
                force_exclude=force_exclude,
                no_cache=no_cache,
                quiet=quiet,
                jobs=jobs,
            )
        except SystemExit as exc:
            if exit_zero and exc.code == EXIT_FINDINGS:
                sys.exit(EXIT_OK)
            raise
        return
    shared = common(
        paths, select, ignore, extend_select, config_file, isolated, unsafe_fixes, stdin_filename
    )
    settings = shared.settings
    with_edits = output_format in ("json", "sarif")
    reports: list[FileReport]
    if shared.stdin:
        name = shared.stdin_filename or "-"
        reports = [lint_bytes(name, sys.stdin.buffer.read(), settings, with_edits=with_edits)]
    else:
        files = discover(shared.paths, settings, force_exclude=force_exclude)
        reports = lint_paths(
            files, settings, with_edits=with_edits, use_cache=not no_cache, jobs=jobs
        )
    found: list[Diagnostic] = [d for r in reports for d in r.diagnostics]
    internal = [r for r in reports if r.internal_error]
    out = sys.stdout
    if statistics:
        render_statistics(found, out, unsafe_fixes=settings.unsafe_fixes)
    elif quiet and output_format in ("full", "concise"):
        render(
            output_format,
            found,
            cast(TextIO, _NoSummary(out)),
            unsafe_fixes=settings.unsafe_fixes,
        )
    else:
        render(
            output_format,
            found,
            out,
            unsafe_fixes=settings.unsafe_fixes,
        )
    for report in internal:
        internal_error(report.path, report.internal_error or "")
    if internal:
        sys.exit(EXIT_ERROR)
    if found and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


class _NoSummary:
    """A stream that drops the summary block of the text formats (`--quiet`)."""

    def __init__(self, stream: Any) -> None:
        self.stream = stream
        self._drop = False

    def write(self, text: str) -> int:
        if text.startswith(("Found ", "All checks passed", "[*] ", "[~] ")):
            self._drop = True
        if not self._drop:
            self.stream.write(text)
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def isatty(self) -> bool:
        return bool(getattr(self.stream, "isatty", lambda: False)())
