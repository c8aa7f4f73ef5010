"""The verify report for people (rich), and the progress display while runs are
under way ("run k of N", with the steps the run has done)."""

from __future__ import annotations

import sys
import threading
import time
from pathlib import Path

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from accel_lint.verify import compare as cmp
from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.report import FixItem, Opinion, Report, Timing
from accel_lint.verify.timing import FASTER, NOT_APPLICABLE, SLOWER, Side, Speed

VERDICT_STYLE = {cmp.HOLDS: "green", cmp.FAILS: "bold red", cmp.NOT_VERIFIABLE: "yellow"}
SPEED_STYLE = {FASTER: "green", SLOWER: "bold red", NOT_APPLICABLE: "dim"}


def num(value: float | None) -> str:
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.2g}"


def mib(value: int | None) -> str:
    return "-" if value is None else f"{value / 2**20:,.0f} MiB"


def place(item: FixItem) -> str:
    return f"{item.filename}:{item.row}" if item.row is not None else item.filename


def speed_words(speed: Speed) -> str:
    interval = (
        f", 95% interval {speed.low:.2f}-{speed.high:.2f}"
        if speed.low is not None and speed.high is not None
        else ""
    )
    noise = f"run-to-run noise {speed.noise:.0%}" + ("" if speed.noise_measured else " (assumed)")
    return f"{speed.ratio:.2f}x{interval}; {noise}"


def render(report: Report, console: Console) -> None:
    versions = f", torch {report.torch}" if report.torch else ""
    timing = f", {report.repeat} timing rounds" if report.repeat else ", no timing"
    ran = report.steps_run
    steps = (
        f"{ran} steps (the script ended before --steps {report.steps})"
        if ran is not None and ran < report.steps
        else f"{report.steps} steps"
    )
    console.print(
        Text(f"accel-lint verify {report.script}", style="bold"),
        f"({report.device}{versions}, {steps}{timing})",
    )
    if not report.fixes:
        console.print("No fix applies to this script: nothing to verify.")
        _render_unfixed(report, console)
        return
    if report.problem is not None:
        problem = report.problem
        console.print(
            Text(f"\nThe run `{problem.run}` did not complete: {problem.message}", style="bold red")
        )
        if problem.output:
            console.print(Text(_indent(problem.output), style="dim"))
        if problem.hint:
            console.print(Text(f"hint: {problem.hint}", style="bold"))
    for write in report.refused_writes:
        console.print(Text(f"warning: {write.sentence()}", style="bold yellow"))
    if report.noise is not None:
        noise = report.noise
        same = (
            "bitwise equal"
            if noise.deterministic
            else f"differ (losses by up to {num(noise.nondeterminism)})"
        )
        console.print(
            f"\nNoise floor of the original: losses {num(noise.loss)}, "
            f"parameters {num(noise.param_rel)} (relative norm"
            + (f", worst {noise.param_worst}" if noise.param_worst else "")
            + f"). Two identical runs: {same}."
        )
    table = Table(header_style="bold", box=None, pad_edge=False)
    for title in ("place", "fix", "fix is", "class", "verdict", "loss diff", "param diff", "speed"):
        table.add_column(title, no_wrap=True)
    for item in report.fixes:
        verdict = item.verdict
        name = verdict.verdict if verdict else cmp.NOT_VERIFIABLE
        label = item.speed.label if item.speed else "-"
        table.add_row(
            place(item),
            item.code,
            item.applicability,
            item.equivalence.value,
            Text(name, style=VERDICT_STYLE.get(name, "")),
            num(verdict.max_loss_diff if verdict else None),
            num(verdict.max_param_diff if verdict else None),
            Text(label, style=SPEED_STYLE.get(label, "")),
        )
    console.print()
    console.print(table)
    shared = report.shared_reason()
    if shared is not None:
        console.print(f"\nEvery fix: {shared}.")
    for item in report.fixes:
        _render_item(item, console, shared)
    if report.timing is not None:
        console.print()
        _render_timing(report.timing, console)
    if report.opinion is not None:
        console.print()
        render_opinion(report.opinion, console)
    _render_unfixed(report, console)
    for note in [*report.notes, *([report.combined_fails] if report.combined_fails else [])]:
        console.print(f"note: {note}")
    console.print(_summary(report))


def _render_item(item: FixItem, console: Console, shared: str | None = None) -> None:
    verdict = item.verdict
    name = verdict.verdict if verdict else cmp.NOT_VERIFIABLE
    head = Text(f"\n{item.code} ", style="bold")
    head.append(f"{place(item)} [{item.applicability}] ", style="")
    head.append(item.message, style="dim")
    console.print(head)
    why = [verdict.reason] if verdict and verdict.reason and verdict.reason != shared else []
    why += verdict.notes if verdict else ["not run"]
    line = Text("  ")
    line.append(name, style=VERDICT_STYLE.get(name, ""))
    line.append((": " + "; ".join(why)) if why else "")
    console.print(line)
    speed = item.speed
    if speed is None:
        return
    text = Text("  speed: ")
    text.append(speed.label, style=SPEED_STYLE.get(speed.label, ""))
    if speed.reason:
        text.append(f": {speed.reason}")
    variant = speed.variant
    if variant is not None:
        text.append(f": {speed_words(variant.speed)}")
        if variant.codes != {item.code}:
            text.append(f" ({variant.name}: {', '.join(sorted(variant.codes))} together)")
        if variant.cause:
            text.append(f"; likely cause: {variant.cause}", style="bold")
        for note in variant.notes:
            text.append(f"; {note}")
    console.print(text)


def _render_timing(timing: Timing, console: Console) -> None:
    table = Table(
        title="Speed (steady-state steps/s after the warm-up, median over the runs)",
        title_justify="left",
        header_style="bold",
    )
    for title in ("variant", "steps/s", "min-max", "samples/s", "peak memory", "vs original"):
        table.add_column(title, justify="left" if title in ("variant", "vs original") else "right")

    def row(name: str, side: Side, versus: Text) -> None:
        s = side.summary()
        memory = mib(side.peak_memory_bytes) + (
            f" (device {mib(side.device_peak_bytes)})" if side.device_peak_bytes else ""
        )
        samples = side.samples_per_s
        table.add_row(
            name,
            f"{s['median']:.1f}",
            f"{s['min']:.1f}-{s['max']:.1f}",
            f"{samples:,.0f}" if samples else "-",
            memory,
            versus,
        )

    row("original", timing.original, Text("-"))
    for variant in timing.variants:
        versus = Text(variant.speed.label, style=SPEED_STYLE.get(variant.speed.label, ""))
        versus.append(f" ({variant.speed.ratio:.2f}x)")
        row(variant.name, variant.side, versus)
    console.print(table)
    for code, why in timing.not_applicable.items():
        console.print(f"{code}: {NOT_APPLICABLE}: {why}")
    for note in timing.notes:
        console.print(f"note: {note}")


def render_opinion(opinion: Opinion, console: Console) -> None:
    console.print(
        Text("Runtime second opinion", style="bold"),
        f"(a probe run of the original: {opinion.steps} steps on {opinion.device})",
    )
    if opinion.problem:
        console.print(Text(f"  {opinion.problem}", style="yellow"))
    style = {"seen": "green", "not seen": "yellow"}
    for check in opinion.findings:
        line = Text(f"  {check.code} line {check.row}: ")
        line.append(check.status, style=style.get(check.status, "dim"))
        if check.detail:
            line.append(f" ({check.detail})")
        console.print(line)
    for found in opinion.runtime_only:
        where = f"{found.file}:{found.row}" if found.row is not None else found.file
        line = Text("  runtime finding ", style="bold")
        line.append(f"{found.code or '(no rule yet)'} {found.name} at {where}: {found.detail}")
        console.print(line)
    ran = [p for p in opinion.patterns if p["status"] == "ran"]
    if opinion.patterns:
        words = []
        for pattern in opinion.patterns:
            if pattern["status"] == "ran":
                words.append(f"{pattern['name']} {len(pattern['hits'])} hit(s)")
            else:
                words.append(f"{pattern['name']} {pattern['status']}")
        console.print(
            f"  torch's profiler patterns ({len(ran)} of {len(opinion.patterns)} ran): "
            + ", ".join(words),
            style="dim",
        )
    for setting in opinion.configuration:
        console.print(f"  {setting}", style="dim")


def _render_unfixed(report: Report, console: Console) -> None:
    if not report.unfixed:
        return
    console.print("\nFindings without an applied fix:")
    for unfixed in report.unfixed:
        console.print(f"  {report.script}:{unfixed.row} {unfixed.code}: {unfixed.why}")


def _summary(report: Report) -> Text:
    style = {0: "bold green", 1: "bold red"}.get(report.exit_code, "bold yellow")
    words = report.summary()
    return Text(f"\n{words[:1].upper()}{words[1:]}.", style=style)


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# -- progress ---------------------------------------------------------------------------


class RichProgress:
    """ "run k of N: name (steps s/S)" per run under way on a terminal; one line per
    finished run otherwise (CI logs). Steps done are read from the file each run's
    runner keeps up to date."""

    def __init__(self, console: Console, steps: int) -> None:
        self.console = console
        self.steps = steps
        self.live = console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.planned = 0
        self.count = 0
        self.lock = threading.Lock()
        self.under_way: dict[int, tuple[TaskID | None, str, Path | None, float]] = {}
        self._stop = threading.Event()
        self._poller = threading.Thread(target=self._poll, daemon=True)

    def __enter__(self) -> RichProgress:
        if self.live:
            self.progress.start()
            self._poller.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        if self.live:
            self.progress.stop()

    def total(self, runs: int) -> None:
        with self.lock:
            self.planned = max(runs, self.count)

    def started(self, spec: RunSpec, progress_file: Path | None = None) -> None:
        with self.lock:
            self.count += 1
            self.planned = max(self.planned, self.count)
            label = f"run {self.count} of {self.planned}: {spec.name}"
            task = self.progress.add_task(label, total=None) if self.live else None
            self.under_way[id(spec)] = (task, label, progress_file, time.perf_counter())

    def finished(self, spec: RunSpec, result: RunResult) -> None:
        with self.lock:
            task, title, _, started = self.under_way.pop(
                id(spec), (None, spec.name, None, time.perf_counter())
            )
        seconds = time.perf_counter() - started
        status = "ok" if result.ok else result.status
        done = f"{title}: {status}, {result.steps} steps, {seconds:.1f} s"
        if result.cpu_seconds is not None:
            done += f" ({result.cpu_seconds:.1f} s CPU)"
        if self.live:
            if task is not None:
                self.progress.remove_task(task)
            self.progress.console.print(f"[dim]{done}[/dim]")
        else:
            print(f"accel-lint verify: {done}", file=sys.stderr, flush=True)

    def _poll(self) -> None:
        while not self._stop.wait(0.25):
            with self.lock:
                running = list(self.under_way.values())
            for task, label, path, _ in running:
                steps = _steps_done(path)
                if task is not None and steps is not None:
                    self.progress.update(task, description=f"{label} (step {steps}/{self.steps})")


def _steps_done(path: Path | None) -> int | None:
    if path is None:
        return None
    try:
        return int(path.read_text(encoding="ascii").strip() or 0)
    except (OSError, ValueError):
        return None
