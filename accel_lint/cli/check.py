"""`accel-lint check`: lint files and print the findings."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO, cast

import click

from accel_lint import baseline
from accel_lint.baseline import FileLines
from accel_lint.cli.common import (
    EXIT_ERROR,
    EXIT_FINDINGS,
    EXIT_OK,
    apply_baseline,
    common,
    describe_settings,
    fail,
    internal_error,
    jobs_option,
    read_stdin,
    selection_options,
    stdin_excluded,
    warn,
    warn_if_empty,
)
from accel_lint.diagnostic import Diagnostic
from accel_lint.files import discover, once_each
from accel_lint.lint import FileReport, lint_bytes, lint_paths, revealed_by_fixes
from accel_lint.report import FORMATS, HUMAN, WITH_EDITS, render
from accel_lint.report.text import render_statistics, render_statistics_json, use_color


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
@click.option(
    "--output-file",
    "-o",
    type=click.Path(dir_okay=False, path_type=Path),
    envvar="ACCEL_LINT_OUTPUT_FILE",
    help="Write the findings to this file instead of standard output.",
)
@click.option(
    "--color",
    type=click.Choice(("auto", "always", "never")),
    default="auto",
    show_default=True,
    help="Colour the human formats: on a terminal (auto; NO_COLOR and FORCE_COLOR are "
    "honoured), always, or never.",
)
@click.option(
    "--statistics",
    is_flag=True,
    help="Count findings per rule instead of listing them (JSON with --output-format json).",
)
@click.option("--exit-zero", is_flag=True, help="Exit 0 even when findings remain.")
@click.option(
    "--diff",
    is_flag=True,
    help="Print the diff of the fixes instead of the findings, like `fix` without --apply; "
    "exit 1 when fixes are pending.",
)
@click.option(
    "--fix",
    "fix_",
    is_flag=True,
    help="Apply the fixes, like `fix --apply` (with --unsafe-fixes, the unsafe ones too).",
)
@click.option(
    "--add-noqa",
    is_flag=True,
    help="Append `# noqa: CODE` to each finding's line, so the gate passes today.",
)
@click.option(
    "--baseline",
    "baseline_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Report only the findings this baseline does not record (see --write-baseline).",
)
@click.option(
    "--write-baseline",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Record today's findings in this file, to report only new ones later; exit 0.",
)
@click.option("--show-files", is_flag=True, help="List the files that would be linted, and exit.")
@click.option(
    "--show-settings", is_flag=True, help="Show the resolved settings for each file, and exit."
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
    extend_exclude: str | None,
    respect_gitignore: bool | None,
    no_cache: bool,
    quiet: bool,
    output_format: str,
    output_file: Path | None,
    color: str,
    statistics: bool,
    exit_zero: bool,
    diff: bool,
    fix_: bool,
    add_noqa: bool,
    baseline_file: Path | None,
    write_baseline: Path | None,
    show_files: bool,
    show_settings: bool,
    jobs: int | None,
) -> None:
    """Lint PATHS (files or directories; `-` reads standard input)."""
    if sum((diff, fix_, add_noqa, write_baseline is not None)) > 1:
        fail("--diff, --fix, --add-noqa and --write-baseline cannot be combined")
    if write_baseline is not None and baseline_file is not None:
        fail("--write-baseline records every finding; it cannot be combined with --baseline")
    for flag, name in ((diff, "--diff"), (fix_, "--fix"), (add_noqa, "--add-noqa")):
        if flag and statistics:
            fail(f"{name} and --statistics cannot be combined")
    if add_noqa:
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
        if shared.stdin:
            fail("--add-noqa needs files, not standard input")
        from accel_lint.lint import NoqaOutcome, add_noqa_paths

        files = discover(
            shared.paths,
            shared.settings,
            force_exclude=force_exclude,
            settings_in=shared.settings_in,
        )
        warn_if_empty(files, shared.paths)
        files = once_each(files)
        outcome = NoqaOutcome()
        for group_settings, indices in shared.groups(files):
            part = add_noqa_paths(
                [files[i] for i in indices], group_settings, use_cache=not no_cache, jobs=jobs
            )
            outcome.merge(part)
        for path, error in outcome.errors:
            click.echo(f"accel-lint: error: {path}: {error}", err=True)
        n, m = outcome.lines, outcome.files
        click.echo(
            f"Added `# noqa` to {n} line{'s' if n != 1 else ''} "
            f"in {m} file{'s' if m != 1 else ''}.",
            err=True,
        )
        for path, row in outcome.skipped:
            click.echo(
                f"accel-lint: {path}:{row}: a comment cannot go on this line "
                "(inside a string or after a backslash); suppress it by hand",
                err=True,
            )
        sys.exit(EXIT_ERROR if outcome.errors else EXIT_OK)
    if diff or fix_:
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
                extend_exclude=extend_exclude,
                respect_gitignore=respect_gitignore,
                no_cache=no_cache,
                quiet=quiet,
                apply_=fix_,
                exit_non_zero_on_fix=False,
                jobs=jobs,
            )
        except SystemExit as exc:
            if exit_zero and exc.code == EXIT_FINDINGS:
                sys.exit(EXIT_OK)
            raise
        return
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
    with_edits = output_format in WITH_EDITS
    reports: list[FileReport]
    stdin_data: bytes | None = None
    if stdin_excluded(shared, force_exclude):
        reports = []
    elif shared.stdin:
        name = shared.stdin_filename or "-"
        stdin_data = read_stdin()
        reports = [lint_bytes(name, stdin_data, settings, with_edits=with_edits)]
    else:
        files = discover(
            shared.paths, settings, force_exclude=force_exclude, settings_in=shared.settings_in
        )
        if show_files or show_settings:
            warn_if_empty(files, shared.paths)
            if show_settings:
                blocks = [
                    describe_settings(group_settings, [files[i] for i in indices])
                    for group_settings, indices in shared.groups(files)
                ]
                click.echo("\n".join(blocks), nl=False)
            else:
                click.echo("".join(f"{os.path.abspath(f)}\n" for f in files), nl=False)
            sys.exit(EXIT_OK)
        warn_if_empty(files, shared.paths)
        reports = shared.each(
            files,
            lambda group, group_settings: lint_paths(
                group, group_settings, with_edits=with_edits, use_cache=not no_cache, jobs=jobs
            ),
        )
    found: list[Diagnostic] = [d for r in reports for d in r.diagnostics]
    internal = [r for r in reports if r.internal_error]
    line_of = _stdin_lines(stdin_data) if stdin_data is not None else FileLines()
    if write_baseline is not None:
        try:
            recorded = baseline.write(write_baseline, found, line_of)
        except OSError as exc:
            fail(f"cannot write {write_baseline}: {exc.strerror}")
        click.echo(
            f"Recorded {recorded} finding{'s' if recorded != 1 else ''} in {write_baseline}; "
            f"`accel-lint check --baseline {write_baseline}` reports only new ones.",
            err=True,
        )
        for report in internal:
            internal_error(report.path, report.internal_error or "")
        sys.exit(EXIT_ERROR if internal else EXIT_OK)
    found = apply_baseline(shared, found, baseline_file, line_of, quiet)
    out: Any = sys.stdout
    handle = None
    if output_file is not None:
        try:
            handle = open(output_file, "w", encoding="utf-8", newline="")  # noqa: SIM115
        except OSError as exc:
            fail(f"cannot write {output_file}: {exc.strerror}")
        out = handle
    paint = _color(color, out)
    try:
        if statistics:
            if output_format in ("json", "json-lines"):
                render_statistics_json(found, out, unsafe_fixes=settings.unsafe_fixes)
            else:
                render_statistics(found, out, unsafe_fixes=settings.unsafe_fixes)
        elif quiet and output_format in HUMAN:
            render(
                output_format,
                found,
                cast(TextIO, _NoSummary(out)),
                unsafe_fixes=settings.unsafe_fixes,
                color=paint,
            )
        else:
            # only the human formats' summary says it, and only files with a fix cost a pass
            revealed = (
                revealed_by_fixes(reports, settings, jobs=jobs)
                if output_format in HUMAN and not shared.stdin
                else 0
            )
            render(
                output_format,
                found,
                out,
                unsafe_fixes=settings.unsafe_fixes,
                color=paint,
                revealed=revealed,
            )
    finally:
        if handle is not None:
            handle.close()
    for report in reports:
        if report.note is not None:
            warn(report.path, report.note)
    for report in internal:
        internal_error(report.path, report.internal_error or "")
    if internal:
        sys.exit(EXIT_ERROR)
    if found and not exit_zero:
        sys.exit(EXIT_FINDINGS)
    sys.exit(EXIT_OK)


def _stdin_lines(data: bytes) -> Callable[[Diagnostic], str]:
    lines = data.decode("utf-8", "replace").splitlines()
    return lambda d: lines[d.row - 1] if d.cell is None and 0 < d.row <= len(lines) else ""


def _color(choice: str, stream: Any) -> bool:
    if choice == "always":
        return True
    if choice == "never":
        return False
    return use_color(stream)


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
