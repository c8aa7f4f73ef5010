"""`accel-lint verify SCRIPT [-- ARGS...]`: fix the script in memory, run the
original and the fixed script, judge every fix, time both (docs/verifier.md)."""

from __future__ import annotations

import json
import os
import signal
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from accel_lint.cli.common import EXIT_ERROR, common, fail, internal_error
from accel_lint.rules import BY_CODE
from accel_lint.source import DecodeError, Source, decode, skip_file

if TYPE_CHECKING:
    from accel_lint.diagnostic import Diagnostic
    from accel_lint.fixer import AppliedFix
    from accel_lint.verify.report import FixItem


class Terminated(KeyboardInterrupt):
    """SIGTERM (a CI timeout, `timeout`, `docker stop`): ended like Ctrl-C."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


@contextmanager
def _terminate_like_interrupt() -> Iterator[None]:
    def handler(signum: int, frame: FrameType | None) -> None:
        raise Terminated(signum)

    previous = signal.signal(signal.SIGTERM, handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


@click.command("verify")
@click.argument("script", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("script_args", nargs=-1, type=click.UNPROCESSED, metavar="[-- ARGS...]")
@click.option(
    "--steps",
    type=click.IntRange(1),
    default=20,
    show_default=True,
    help="Optimizer steps per run.",
)
@click.option(
    "--repeat",
    type=click.IntRange(0),
    default=3,
    show_default=True,
    help="Timing runs of each script (alternating original and fixed); 0 skips timing.",
)
@click.option(
    "--warmup",
    type=click.IntRange(0),
    default=None,
    help="Steps left out of the steady-state rate [default: min(5, steps/4)].",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=1),
    default=600,
    show_default=True,
    help="Seconds allowed for each run.",
)
@click.option(
    "--nproc-per-node",
    "nproc",
    type=click.IntRange(1),
    default=None,
    help="torchrun processes [default: 2 on CPU, one per GPU on CUDA].",
)
@click.option(
    "--torchrun", is_flag=True, help="The original script is itself launched with torchrun."
)
@click.option(
    "--threads",
    type=click.IntRange(1),
    default=1,
    show_default=True,
    help="Threads per process, the same for every run.",
)
@click.option(
    "--seeds",
    type=click.IntRange(2),
    default=3,
    show_default=True,
    help="Seed offsets for fixes judged statistically.",
)
@click.option(
    "--jobs",
    "-j",
    type=click.IntRange(1),
    default=min(2, os.cpu_count() or 1),
    show_default=True,
    help="Equivalence runs at once (timing runs always go one by one).",
)
@click.option(
    "--workdir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="Directory each run gets a fresh copy of as its working directory "
    "[default: the script's directory].",
)
@click.option(
    "--output-format", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@click.option(
    "--select",
    metavar="CODES",
    help="Rule codes or prefixes whose fixes to verify (comma-separated), or ALL.",
)
@click.option("--ignore", metavar="CODES", help="Rule codes or prefixes to leave out.")
@click.option(
    "--extend-select", metavar="CODES", help="Codes or prefixes to enable on top of the selection."
)
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False, path_type=Path),
    help="Use this configuration file instead of discovering one.",
)
@click.option("--isolated", is_flag=True, help="Ignore all configuration files.")
@click.option(
    "--unsafe-fixes/--no-unsafe-fixes",
    default=None,
    help="Include fixes that may change behaviour.",
)
def verify(
    script: Path,
    script_args: tuple[str, ...],
    steps: int,
    repeat: int,
    warmup: int | None,
    timeout: float,
    nproc: int | None,
    torchrun: bool,
    threads: int,
    seeds: int,
    jobs: int,
    workdir: Path | None,
    output_format: str,
    select: str | None,
    ignore: str | None,
    extend_select: str | None,
    config_file: Path | None,
    isolated: bool,
    unsafe_fixes: bool | None,
) -> None:
    """Run SCRIPT and its fixed version side by side and show that each fix
    computes the same thing (by its rule's equivalence class), and how fast.

    Arguments after `--` go to the script. Exit status: 0 every fix holds,
    1 a fix does not, 2 a run failed or a fix could not be verified here.
    """
    from rich.console import Console

    from accel_lint.engine import analyze, diagnostics, rules_for
    from accel_lint.fixer import fix_source
    from accel_lint.verify.launch import Target
    from accel_lint.verify.plan import Options
    from accel_lint.verify.report import Report
    from accel_lint.verify.session import Session
    from accel_lint.verify.table import RichProgress, render, to_json

    settings = common(
        [str(script)], select, ignore, extend_select, config_file, isolated, unsafe_fixes, None
    ).settings
    root = (workdir or script.parent).resolve()
    try:
        relative = script.resolve().relative_to(root)
    except ValueError:
        fail(f"{script} is not inside the working directory {root}")
    data = script.read_bytes()
    try:
        source = decode(data)
    except DecodeError as exc:
        fail(f"{script}: {exc}")
    codes = frozenset() if skip_file(data) else settings.codes_for(str(script))

    def fixed_with(subset: frozenset[str]) -> str:
        outcome = fix_source(
            str(script),
            Source(source.text, source.encoding),
            settings,
            rules_for(codes & subset, data),
            unsafe=settings.unsafe_fixes,
        )
        if outcome.error is not None:
            fail(f"{script}: {outcome.error}")
        return outcome.fixed_text

    outcome = fix_source(
        str(script), source, settings, rules_for(codes, data), unsafe=settings.unsafe_fixes
    )
    if outcome.error is not None:
        fail(f"{script}: {outcome.error}")
    rules = rules_for(codes, data)
    found = diagnostics(analyze(str(script), source, settings, rules))
    fixes = fix_items(outcome.applied, found, str(script))
    options = Options(
        steps=steps,
        repeat=repeat,
        warmup=warmup,
        timeout=timeout,
        nproc=nproc,
        torchrun=torchrun,
        threads=threads,
        seeds=seeds,
        jobs=jobs,
    )
    target = Target(
        root, relative, tuple(script_args), steps, options.warmup_steps, timeout, source.encoding
    )
    try:
        with (
            _terminate_like_interrupt(),
            RichProgress(Console(stderr=True, highlight=False)) as progress,
        ):
            report: Report = Session(
                target, source.text, fixed_with, fixes, options, progress, display_name=str(script)
            ).run()
    except KeyboardInterrupt as exc:
        # the session has ended every run and removed its scratch directory
        signum = exc.signum if isinstance(exc, Terminated) else signal.SIGINT
        name = "terminated" if isinstance(exc, Terminated) else "interrupted"
        click.echo(f"accel-lint: verify {name}; every run was stopped.", err=True)
        sys.exit(128 + signum)
    except Exception:  # a bug of ours: exit 2 with the trace, as the other commands do
        import traceback

        internal_error(str(script), traceback.format_exc())
        sys.exit(EXIT_ERROR)
    if output_format == "json":
        click.echo(json.dumps(to_json(report), indent=2))
    else:
        render(report, Console(highlight=False, soft_wrap=False))
    sys.exit(report.exit_code)


def fix_items(
    applied: Sequence[AppliedFix], found: Sequence[Diagnostic], filename: str
) -> list[FixItem]:
    """One item per applied fix, with the place and applicability of the finding it
    fixes (matched by rule and fix message, in order) and its rule's declaration."""
    from accel_lint.verify.report import FixItem

    open_findings = [d for d in found if d.has_fix]
    items = []
    for fix in applied:
        rule = BY_CODE[fix.code].rule
        verification = rule.verification
        # a rule with a fix always declares its verification (Rule.__init_subclass__)
        assert verification is not None
        finding = next(
            (d for d in open_findings if d.code == fix.code and d.fix_message == fix.message),
            None,
        )
        if finding is not None:
            open_findings.remove(finding)
        items.append(
            FixItem(
                fix.code,
                fix.message,
                fix.equivalence or verification.equivalence,
                verification,
                filename=filename,
                row=finding.row if finding else None,
                applicability=(finding.fix_safety if finding else None) or rule.fix_safety.value,
            )
        )
    return items
