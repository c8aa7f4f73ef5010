"""The command line: check, fix, verify, rule, rules.

Exit codes (SPEC.md): 0 nothing to report, 1 findings remain (or, for `fix`
without `--apply`, fixes are pending), 2 usage or configuration error or a bug.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn, TextIO, cast

import click

from accel_lint import __version__
from accel_lint.config import ConfigError, Selection, Settings, load_settings, parse_codes
from accel_lint.engine import (
    Diagnostic,
)
from accel_lint.files import discover
from accel_lint.report import FORMATS, render

EXIT_OK, EXIT_FINDINGS, EXIT_ERROR = 0, 1, 2


def _fail(message: str) -> NoReturn:
    click.echo(f"accel-lint: error: {message}", err=True)
    sys.exit(EXIT_ERROR)


@dataclass
class Common:
    settings: Settings
    paths: list[str]
    stdin: bool
    stdin_filename: str | None


def _selection_options(func: Any) -> Any:
    for option in reversed(
        [
            click.option(
                "--select",
                metavar="CODES",
                help="Rule codes or prefixes to enable (comma-separated), or ALL.",
            ),
            click.option("--ignore", metavar="CODES", help="Rule codes or prefixes to disable."),
            click.option(
                "--extend-select",
                metavar="CODES",
                help="Codes or prefixes to enable on top of the selection.",
            ),
            click.option(
                "--config",
                "config_file",
                type=click.Path(dir_okay=False, path_type=Path),
                help="Use this configuration file instead of discovering one.",
            ),
            click.option("--isolated", is_flag=True, help="Ignore all configuration files."),
            click.option(
                "--unsafe-fixes/--no-unsafe-fixes",
                default=None,
                help="Include fixes that may change behaviour.",
            ),
            click.option(
                "--stdin-filename",
                metavar="NAME",
                help="The name of the file read from standard input (`-`).",
            ),
            click.option(
                "--force-exclude",
                is_flag=True,
                help="Apply `exclude` to files named on the command line too (pre-commit).",
            ),
            click.option("--no-cache", is_flag=True, help="Do not read or write the result cache."),
            click.option("--quiet", "-q", is_flag=True, help="Print findings only, no summary."),
        ]
    ):
        func = option(func)
    return func


_jobs_option = click.option(
    "--jobs",
    "-j",
    type=click.IntRange(min=1),
    default=None,
    help="Worker processes for linting (default: one per available CPU).",
)


def _common(
    paths: Sequence[str],
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_file: Path | None,
    isolated: bool,
    unsafe_fixes: bool | None,
    stdin_filename: str | None,
) -> Common:
    paths = list(paths) or ["."]
    stdin = paths == ["-"]
    if "-" in paths and not stdin:
        _fail("`-` (standard input) cannot be combined with other paths")
    cli = Selection(
        select=parse_codes(select),
        extend_select=parse_codes(extend_select) or (),
        ignore=parse_codes(ignore) or (),
    )
    if stdin:
        anchor = Path(stdin_filename).resolve().parent if stdin_filename else Path.cwd()
    else:
        anchor = Path(os.path.commonpath([os.path.abspath(p) for p in paths]))
    try:
        settings = load_settings(
            config_path=config_file,
            search_from=anchor,
            cli=cli,
            unsafe_fixes=unsafe_fixes,
            isolated=isolated,
        )
    except ConfigError as exc:
        _fail(str(exc))
    return Common(settings, paths, stdin, stdin_filename)


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="accel-lint")
def main() -> None:
    """accel-lint: find, fix and verify PyTorch training performance anti-patterns."""


# -- check ------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@_selection_options
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
@_jobs_option
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
            _fail("--diff and --statistics cannot be combined")
        try:
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
    common = _common(
        paths, select, ignore, extend_select, config_file, isolated, unsafe_fixes, stdin_filename
    )
    settings = common.settings
    with_edits = output_format in ("json", "sarif")
    from accel_lint.lint import FileReport, lint_bytes, lint_paths

    reports: list[FileReport]
    if common.stdin:
        name = common.stdin_filename or "-"
        reports = [lint_bytes(name, sys.stdin.buffer.read(), settings, with_edits=with_edits)]
        files_checked = 1
    else:
        files = discover(common.paths, settings, force_exclude=force_exclude)
        files_checked = len(files)
        reports = lint_paths(
            files, settings, with_edits=with_edits, use_cache=not no_cache, jobs=jobs
        )
    found: list[Diagnostic] = [d for r in reports for d in r.diagnostics]
    internal = [r for r in reports if r.internal_error]
    out = sys.stdout
    if statistics:
        from accel_lint.report.text import render_statistics

        render_statistics(found, out, unsafe_fixes=settings.unsafe_fixes)
    elif quiet and output_format in ("full", "concise"):
        render(
            output_format,
            found,
            cast(TextIO, _NoSummary(out)),
            unsafe_fixes=settings.unsafe_fixes,
            files_checked=files_checked,
        )
    else:
        render(
            output_format,
            found,
            out,
            unsafe_fixes=settings.unsafe_fixes,
            files_checked=files_checked,
        )
    for report in internal:
        _internal_error(report.path, report.internal_error or "")
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


def _internal_error(path: str, trace: str) -> None:
    click.echo(
        f"accel-lint: error: internal error while linting {path}; this is a bug in accel-lint, "
        f"please report it with the file.\n{trace}",
        err=True,
    )


# -- fix --------------------------------------------------------------------------


@main.command()
@click.argument("paths", nargs=-1, type=click.Path(path_type=str))
@_selection_options
@click.option(
    "--apply", "apply_", is_flag=True, help="Write the fixes (without it, print the diff)."
)
@click.option(
    "--exit-non-zero-on-fix", is_flag=True, help="With --apply, exit 1 when a file was changed."
)
@_jobs_option
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
    no_cache: bool,
    quiet: bool,
    apply_: bool,
    exit_non_zero_on_fix: bool,
    jobs: int | None,
) -> None:
    """Fix PATHS: print the unified diff, or write it with --apply."""
    common = _common(
        paths, select, ignore, extend_select, config_file, isolated, unsafe_fixes, stdin_filename
    )
    settings = common.settings
    from accel_lint.fixer import write_atomic
    from accel_lint.lint import FixReport, fix_bytes, fix_paths

    reports: list[FixReport]
    if common.stdin:
        reports = [fix_bytes(common.stdin_filename or "-", sys.stdin.buffer.read(), settings)]
    else:
        targets = discover(common.paths, settings, force_exclude=force_exclude)
        reports = fix_paths(targets, settings, use_cache=not no_cache, jobs=jobs)
    remaining: list[Diagnostic] = []
    changed_files = fixed_count = bugs = 0
    for report in reports:
        if report.internal_error is not None:
            _internal_error(report.path, report.internal_error)
            bugs += 1
            continue
        if report.error is not None:
            click.echo(f"accel-lint: error: {report.path}: {report.error}", err=True)
            bugs += 1
        remaining.extend(report.remaining)
        if common.stdin and apply_:
            # the bytes as they are, so encoding, BOM and line endings pass through
            _write_bytes(sys.stdout, report.original if report.fixed is None else report.fixed)
            fixed_count += report.applied
            continue
        if report.fixed is None:
            continue
        changed_files += 1
        fixed_count += report.applied
        if not apply_:
            sys.stdout.write(report.diff)
            continue
        try:
            write_atomic(Path(report.path), report.fixed)
        except OSError as exc:
            click.echo(f"accel-lint: error: {report.path}: cannot write: {exc.strerror}", err=True)
            bugs += 1
    if not quiet:
        _fix_summary(apply_, fixed_count, changed_files, remaining, settings, common.stdin)
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
        from accel_lint.report.text import render_concise

        if applied or not fixed:
            render_concise(remaining, err, unsafe_fixes=settings.unsafe_fixes, color=None)
        else:
            err.write(
                f"{len(remaining)} finding{'s' if len(remaining) != 1 else ''} would remain "
                "(run `accel-lint check` to see them).\n"
            )


# -- rules ------------------------------------------------------------------------


@main.command("rules")
@click.option(
    "--output-format", type=click.Choice(["text", "json"]), default="text", show_default=True
)
def rules_cmd(output_format: str) -> None:
    """List all rules."""
    from accel_lint.config import all_rules

    rows = [
        {
            "code": r.code,
            "name": r.name,
            "summary": r.summary,
            "fix": r.fix_safety.value,
            "equivalence": r.equivalence.value if r.equivalence else None,
            "default": r.default_enabled,
        }
        for r in all_rules()
    ]
    if output_format == "json":
        import json

        click.echo(json.dumps(rows, indent=2))
        return
    from rich.console import Console
    from rich.table import Table

    table = Table(box=None, pad_edge=False, header_style="bold")
    for title in ("code", "name", "fix", "verifier", "default", "what it finds"):
        table.add_column(title)
    for row in rows:
        table.add_row(
            str(row["code"]),
            str(row["name"]),
            str(row["fix"]),
            str(row["equivalence"] or "-"),
            "on" if row["default"] else "off",
            str(row["summary"]),
        )
    Console(highlight=False, soft_wrap=True).print(table)


@main.command("rule")
@click.argument("code")
def rule_cmd(code: str) -> None:
    """Show the page of rule CODE."""
    from accel_lint.config import rule_by_code
    from accel_lint.pages import read_page

    code = code.upper()
    if code not in rule_by_code() and code != "ACL000":
        _fail(f"unknown rule code {code!r} (see `accel-lint rules`)")
    page = read_page(code)
    if page is None:
        _fail(f"the page of {code} is missing from this installation")
    stdout = sys.stdout
    if stdout.isatty():
        from rich.console import Console
        from rich.markdown import Markdown

        Console().print(Markdown(page))
    else:
        stdout.write(page)


from accel_lint.verify.command import verify  # noqa: E402  (registered after the other commands)

main.add_command(verify)
