"""`accel-lint verify SCRIPT [-- ARGS...]`: fix the script in memory, run the
original and the fixed script, judge every fix, time both (docs/verifier.md)."""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING

import click

from accel_lint import __version__
from accel_lint.cli.common import EXIT_ERROR, common, fail, internal_error
from accel_lint.diagnostic import PARSE_ERROR
from accel_lint.rules import BY_CODE
from accel_lint.source import DecodeError, Source, decode, skip_file

if TYPE_CHECKING:
    from accel_lint.diagnostic import Diagnostic
    from accel_lint.fixer import AppliedFix
    from accel_lint.verify.opinion import StaticFinding
    from accel_lint.verify.report import FixItem, Unfixed


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
    help="Judge the unsafe fixes too (the default: verify changes no file); "
    "--no-unsafe-fixes judges the safe fixes only.",
)
@click.option(
    "--python",
    "python",
    metavar="PATH",
    help="Run the scripts with this interpreter (your project's virtualenv); it needs "
    "only the standard library and torch.",
)
@click.option(
    "--report",
    "report_file",
    type=click.Path(dir_okay=False, writable=True, path_type=Path),
    help="Also write a self-contained HTML report (loss curves, speed and memory per fix).",
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
    python: str | None,
    report_file: Path | None,
) -> None:
    """Run SCRIPT and its fixed version side by side and show that each fix
    computes the same thing (by its rule's equivalence class), and how fast.

    Every fix is judged, safe and unsafe (verify changes no file); --no-unsafe-fixes,
    --select and --ignore narrow it. Arguments after `--` go to the script. Exit
    status: 0 every fix holds, 1 a fix does not, 2 a run failed, a fix could not be
    verified here, or the script does not parse.
    """
    from accel_lint.verify.launch import Target, environment
    from accel_lint.verify.warm import WarmInterpreter

    interpreter = python or sys.executable
    missing = torch_missing(interpreter, explicit=python is not None)
    if missing is not None:
        fail(missing)
    # started first: its `import torch` overlaps the imports below, the analysis
    # and the fixes (killed unused when nothing is fixable)
    server: WarmInterpreter | None = WarmInterpreter(
        interpreter, environment(None, threads, "server")
    )

    from rich.console import Console

    from accel_lint.engine import analyze, diagnostics, rules_for
    from accel_lint.fixer import fix_source
    from accel_lint.verify.plan import Options
    from accel_lint.verify.report import Report, attach_diffs
    from accel_lint.verify.session import Session
    from accel_lint.verify.table import RichProgress, render

    try:
        settings = common(
            [str(script)], select, ignore, extend_select, config_file, isolated, unsafe_fixes, None
        ).settings
        unsafe = unsafe_fixes is not False  # verify writes nothing: every fix by default
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
        rules = rules_for(codes, data, str(script))
        found = diagnostics(analyze(str(script), source, settings, rules))
        if found and found[0].code == PARSE_ERROR:
            error = found[0]
            click.echo(
                f"{script}:{error.row}:{error.column}: {error.code} {error.message}", err=True
            )
            sys.exit(EXIT_ERROR)
        if server is not None and not any(
            d.has_fix and (unsafe or d.fix_safety == "safe") for d in found
        ):
            server.close(unused=True)
            server = None

        def fix_with(subset: frozenset[str]) -> str:
            outcome = fix_source(
                str(script), Source(source.text, source.encoding), settings, subset, unsafe=unsafe
            )
            if outcome.error is not None:
                raise FixFailed(f"{script}: {outcome.error}")
            return outcome.fixed_text

        outcome = fix_source(str(script), source, settings, codes, unsafe=unsafe)
        if outcome.error is not None:
            fail(f"{script}: {outcome.error}")
        fixes, unfixed = fix_items(outcome.applied, found, str(script), unsafe)
        texts = FixedTexts(fix_with, codes, {codes: outcome.fixed_text, frozenset(): source.text})

        def fixed_with(subset: frozenset[str]) -> str:
            try:
                return texts(subset)
            except FixFailed as exc:
                fail(str(exc))

        if fixes:
            # the variants the runs and the report will ask for, computed while this
            # process would only wait (the server's imports, the reference run)
            texts.prefetch(
                variants_needed(
                    fixes, want_diffs=report_file is not None or (output_format == "json")
                )
            )
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
            root,
            relative,
            tuple(script_args),
            steps,
            options.warmup_steps,
            timeout,
            source.encoding,
            interpreter,
        )
        if fixes and server is not None:
            hello = server.hello(timeout)
            if hello is None or hello["torch"] is None:
                why = hello["error"] if hello else "it did not start"
                fail(f"{interpreter} cannot import torch ({why}): {install_hint(interpreter)}")
        static = [static_finding(d) for d in found]
        diffs: threading.Thread | None = None
        if fixes and (report_file is not None or output_format == "json"):
            # each fix's diff, computed while the runs go (this process waits on them)
            diffs = threading.Thread(
                target=attach_diffs, args=(fixes, source.text, fixed_with), daemon=True
            )
            diffs.start()
        try:
            with (
                _terminate_like_interrupt(),
                RichProgress(Console(stderr=True, highlight=False), steps) as progress,
            ):
                report: Report = Session(
                    target,
                    source.text,
                    fixed_with,
                    fixes,
                    options,
                    progress,
                    display_name=str(script),
                    server=server,
                    findings=static,
                    code_of=code_of,
                    target_torch=settings.target_torch,
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
    finally:
        if server is not None:
            server.close()
    hello = server.hello(0) if server is not None else None
    report.python = f"{interpreter} (Python {hello['python']})" if hello else interpreter
    report.unfixed = unfixed
    report.command = shlex.join(["accel-lint", *sys.argv[1:]])
    report.version = __version__
    if diffs is not None:
        diffs.join()
    if report_file is not None:
        from accel_lint.verify.html import write_report

        write_report(report, report_file)
    if output_format == "json":
        from accel_lint.verify.json_report import to_json

        click.echo(json.dumps(to_json(report), indent=2))
    else:
        out = Console(highlight=False, soft_wrap=False)
        if not out.is_terminal:  # a log or a pipe: never cut a line to a guessed width
            out = Console(highlight=False, soft_wrap=False, width=200)
        render(report, out)
    sys.exit(report.exit_code)


class FixFailed(Exception):
    """The fixer could not fix the script with some subset of the rules."""


class FixedTexts:
    """The script fixed by each subset of the rules, computed once whichever thread
    asks first (the runs, the report's diffs, the prefetch); a thread that asks for
    a text another thread is computing waits for it."""

    def __init__(
        self,
        fix_with: Callable[[frozenset[str]], str],
        codes: frozenset[str],
        known: dict[frozenset[str], str],
    ) -> None:
        self._fix_with = fix_with
        self._codes = codes
        self._done: dict[frozenset[str], str | FixFailed] = dict(known)
        self._computing: dict[frozenset[str], threading.Event] = {}
        self._lock = threading.Lock()

    def __call__(self, subset: frozenset[str]) -> str:
        key = self._codes & subset
        with self._lock:
            done = self._done.get(key)
            event = self._computing.get(key) if done is None else None
            mine = done is None and event is None
            if mine:
                event = self._computing[key] = threading.Event()
        if mine:
            try:
                result: str | FixFailed = self._fix_with(key)
            except FixFailed as exc:
                result = exc
            with self._lock:
                self._done[key] = result
                self._computing.pop(key).set()
            done = result
        elif done is None:
            assert event is not None
            event.wait()
            done = self._done[key]
        if isinstance(done, FixFailed):
            raise done
        return done

    def prefetch(self, subsets: Sequence[frozenset[str]]) -> None:
        def work() -> None:
            for subset in subsets:
                with contextlib.suppress(FixFailed):
                    self(subset)

        threading.Thread(target=work, daemon=True, name="accel-lint-prefetch").start()


def variants_needed(fixes: Sequence[FixItem], *, want_diffs: bool) -> list[frozenset[str]]:
    """The fixed scripts a verification will run, in the order it runs them (the
    exact fixes together, then each rule alone for timing), and those the report's
    diffs show (each rule alone)."""
    from accel_lint.verify import speed
    from accel_lint.verify.session import exact_group

    wanted = [exact_group(fixes), *(codes for _, codes in speed.plan(fixes, "cpu").variants)]
    if want_diffs:
        wanted += [frozenset({f.code}) for f in fixes]
    return [s for s in dict.fromkeys(wanted) if s]


TORCH_PROBE = "import importlib.util, sys; sys.exit(0 if importlib.util.find_spec('torch') else 3)"


def install_hint(interpreter: str) -> str:
    if interpreter == sys.executable:
        return 'pip install "accel-lint[verify]"'
    return (
        f"{interpreter} -m pip install torch (the scripts run there, and the runner needs only "
        'the standard library and torch), or pip install "accel-lint[verify]" in that environment'
    )


def torch_missing(interpreter: str, *, explicit: bool) -> str | None:
    """Before anything else: can the interpreter that runs the scripts find torch?
    (A look-up, not an import: seconds cheaper.)"""
    if not explicit:
        import importlib.util

        if importlib.util.find_spec("torch") is None:
            return "verify runs the scripts with torch, which is not installed: " + install_hint(
                interpreter
            )
        return None
    import subprocess

    try:
        done = subprocess.run([interpreter, "-c", TORCH_PROBE], capture_output=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"cannot run the interpreter {interpreter}: {exc}"
    if done.returncode == 3:
        return f"torch is not installed for {interpreter}: {install_hint(interpreter)}"
    if done.returncode != 0:
        return (
            f"the interpreter {interpreter} failed: {done.stderr.decode(errors='replace').strip()}"
        )
    return None


def static_finding(diagnostic: Diagnostic) -> StaticFinding:
    from accel_lint.verify.opinion import StaticFinding

    return StaticFinding(
        diagnostic.code,
        BY_CODE[diagnostic.code].rule.name,
        diagnostic.row,
        diagnostic.end_row,
        diagnostic.message,
    )


def code_of(name: str) -> str | None:
    """The code of the rule with this name (runtime observations carry names)."""
    from accel_lint.rules import RULES

    return next((entry.code for entry in RULES if entry.rule.name == name), None)


def fix_items(
    applied: Sequence[AppliedFix], found: Sequence[Diagnostic], filename: str, unsafe: bool
) -> tuple[list[FixItem], list[Unfixed]]:
    """One item per applied fix, with the place and applicability of the finding it
    fixes (matched by rule and fix message, in order; findings that one fix
    removes together are one item) and its rule's declaration; and the findings
    left without a fix, with the reason."""
    from accel_lint.rule import FixSafety
    from accel_lint.verify.report import FixItem, Unfixed

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
    # The fixer repeats until no allowed fix is left, so a finding whose allowed fix
    # was never applied was removed by another fix: one of its rule with the same
    # message when its fixes overlap (a rewritten import and its call sites).
    fixed_together = {(i.code, i.message) for i in items}
    unfixed = []
    for d in found:
        if d.has_fix and d not in open_findings:
            continue
        left_out = d.fix_safety == "unsafe" and not unsafe
        if d.has_fix and not left_out and (d.code, d.fix_message) in fixed_together:
            continue
        if d.has_fix:
            why = (
                "its fix is unsafe, and --no-unsafe-fixes leaves it out"
                if left_out
                else "another fix removed it (its own fix overlapped that one)"
            )
        elif d.no_fix_reason:
            why = f"no fix: {d.no_fix_reason}"
        elif BY_CODE[d.code].rule.fix_safety is FixSafety.NONE:
            why = "its rule reports, it does not fix"
        else:
            why = "no fix offered here"
        unfixed.append(Unfixed(d.code, d.row, d.message, why))
    return items, unfixed
