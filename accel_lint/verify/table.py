"""The verify report: a rich table for people, one JSON object for machines,
and the progress display while runs are under way."""

from __future__ import annotations

import sys
import time
from typing import Any

from rich.console import Console
from rich.progress import Progress, SpinnerColumn, TaskID, TextColumn, TimeElapsedColumn
from rich.table import Table
from rich.text import Text

from accel_lint.verify import compare as cmp
from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.report import Report, Timing

_VERDICT_STYLE = {cmp.HOLDS: "green", cmp.FAILS: "bold red", cmp.NOT_VERIFIABLE: "yellow"}


# -- JSON -------------------------------------------------------------------------------


def to_json(report: Report) -> dict[str, Any]:
    """The documented object (docs/verifier.md). Keys beyond the first version's
    (`message`, `notes`, `noise_floor`, `error`, and in `timing` the raw `ratio`,
    its interval, the A-vs-A `noise` and the `claim`) add detail without changing
    the meaning of the others."""
    return {
        "script": report.script,
        "device": report.device,
        "steps": report.steps,
        "repeat": report.repeat,
        "fixes": [
            {
                "code": item.code,
                "class": item.equivalence.value,
                "verdict": item.verdict.verdict if item.verdict else cmp.NOT_VERIFIABLE,
                "reason": item.verdict.reason if item.verdict else "not run",
                "max_loss_diff": item.verdict.max_loss_diff if item.verdict else None,
                "max_param_diff": item.verdict.max_param_diff if item.verdict else None,
                "message": item.message,
                "notes": item.verdict.notes if item.verdict else [],
            }
            for item in report.fixes
        ],
        "timing": _timing_json(report.timing) if report.timing else None,
        "noise_floor": (
            {
                "loss": report.noise.loss,
                "param_rel": report.noise.param_rel,
                "buffer_rel": report.noise.buffer_rel,
                "deterministic": report.noise.deterministic,
            }
            if report.noise
            else None
        ),
        "notes": [*report.notes, *([report.combined_fails] if report.combined_fails else [])],
        "error": (
            {
                "run": report.problem.run,
                "status": report.problem.status,
                "message": report.problem.message,
                "output": report.problem.output,
            }
            if report.problem
            else None
        ),
    }


def _timing_json(timing: Timing) -> dict[str, Any]:
    speed = timing.speed

    def side(which: str) -> dict[str, Any]:
        data = timing.original if which == "original" else timing.fixed
        device = timing.original_device_peak if which == "original" else timing.fixed_device_peak
        return {
            "steps_per_s": data.summary(),
            "peak_memory_bytes": data.peak_memory_bytes,
            "peak_device_memory_bytes": device,
            "first_step_s": data.first_step_s,
        }

    return {
        "original": side("original"),
        "fixed": side("fixed"),
        "speedup": speed.speedup if timing.applicable else None,
        "ratio": speed.ratio,
        "ratio_interval": [speed.low, speed.high] if speed.low is not None else None,
        "noise": speed.noise,
        "claim": speed.claim if timing.applicable else "not applicable on this device",
        "notes": timing.notes,
    }


# -- table ------------------------------------------------------------------------------


def _num(value: float | None) -> str:
    if value is None:
        return "-"
    return "0" if value == 0 else f"{value:.2g}"


def _bytes(value: int | None) -> str:
    if value is None:
        return "-"
    return f"{value / 2**20:,.0f} MiB"


def render(report: Report, console: Console) -> None:
    timing = f", {report.repeat} timing repeats" if report.repeat else ", no timing"
    console.print(
        Text(f"accel-lint verify {report.script}", style="bold"),
        f"({report.device}, {report.steps} steps{timing})",
    )
    if not report.fixes:
        console.print("No fix applies to this script: nothing to verify.")
        return
    if report.problem is not None:
        problem = report.problem
        console.print(
            Text(f"\nThe run `{problem.run}` did not complete: {problem.message}", style="bold red")
        )
        if problem.output:
            console.print(Text(_indent(problem.output), style="dim"))
    if report.noise is not None:
        noise = report.noise
        same = (
            "bitwise equal"
            if noise.deterministic
            else f"differ (losses by up to {_num(noise.nondeterminism)})"
        )
        console.print(
            f"\nNoise floor of the original: losses {_num(noise.loss)}, "
            f"parameters {_num(noise.param_rel)} (relative norm"
            + (f", worst {noise.param_worst}" if noise.param_worst else "")
            + f"). Two identical runs: {same}."
        )
    table = Table(header_style="bold", box=None, pad_edge=False)
    for title in ("fix", "class", "verdict", "max loss diff", "max param diff"):
        table.add_column(title, no_wrap=True)
    for item in report.fixes:
        verdict = item.verdict
        name = verdict.verdict if verdict else cmp.NOT_VERIFIABLE
        table.add_row(
            item.code,
            item.equivalence.value,
            Text(name, style=_VERDICT_STYLE.get(name, "")),
            _num(verdict.max_loss_diff if verdict else None),
            _num(verdict.max_param_diff if verdict else None),
        )
    console.print()
    console.print(table)
    for item in report.fixes:
        verdict = item.verdict
        name = verdict.verdict if verdict else cmp.NOT_VERIFIABLE
        detail = Text(f"\n{item.code} ", style="bold")
        detail.append(item.message, style="dim")
        console.print(detail)
        why = [verdict.reason] if verdict and verdict.reason else []
        why += verdict.notes if verdict else ["not run"]
        line = Text("  ")
        line.append(name, style=_VERDICT_STYLE.get(name, ""))
        line.append((": " + "; ".join(why)) if why else "")
        console.print(line)
    if report.timing is not None:
        console.print()
        _render_timing(report.timing, console)
    for note in [*report.notes, *([report.combined_fails] if report.combined_fails else [])]:
        console.print(f"note: {note}")
    console.print(_summary(report))


def _render_timing(timing: Timing, console: Console) -> None:
    table = Table(
        title="Speed (steady-state optimizer steps/s after warm-up)",
        title_justify="left",
        header_style="bold",
    )
    for title in ("run", "steps/s median", "min", "max", "first step", "peak memory"):
        table.add_column(title, justify="right" if title != "run" else "left")
    for name, side, device in (
        ("original", timing.original, timing.original_device_peak),
        ("fixed", timing.fixed, timing.fixed_device_peak),
    ):
        s = side.summary()
        memory = _bytes(side.peak_memory_bytes) + (
            f" (device {_bytes(device)})" if device is not None else ""
        )
        first = f"{side.first_step_s:.1f} s" if side.first_step_s is not None else "-"
        table.add_row(
            name, f"{s['median']:.1f}", f"{s['min']:.1f}", f"{s['max']:.1f}", first, memory
        )
    console.print(table)
    speed = timing.speed
    noise = f"{speed.noise:.0%}" if speed.noise is not None else "unknown"
    interval = (
        f", 95% interval {speed.low:.2f}-{speed.high:.2f}"
        if speed.low is not None and speed.high is not None
        else ""
    )
    if not timing.applicable:
        line = (
            f"Speed ratio {speed.ratio:.2f}x is not evidence on this device (see the notes below)."
        )
    elif speed.claim == "faster":
        line = f"Speedup {speed.ratio:.2f}x{interval}: clears the original's run-to-run spread"
        line += f" of {noise}."
    elif speed.claim == "slower":
        line = f"Slower: {speed.ratio:.2f}x{interval}, beyond the original's run-to-run spread"
        line += f" of {noise}."
    else:
        line = f"No measurable change: {speed.ratio:.2f}x{interval} is within the noise ({noise})."
    console.print(line)
    for note in timing.notes:
        console.print(f"note: {note}")


def _summary(report: Report) -> Text:
    counts: dict[str, int] = {}
    for item in report.fixes:
        name = item.verdict.verdict if item.verdict else cmp.NOT_VERIFIABLE
        counts[name] = counts.get(name, 0) + 1
    parts = [f"{n} {verdict}" for verdict, n in counts.items()]
    style = {0: "bold green", 1: "bold red"}.get(report.exit_code, "bold yellow")
    total = len(report.fixes)
    return Text(
        f"\n{total} fix{'es' if total != 1 else ''} verified: " + ", ".join(parts) + ".",
        style=style,
    )


def _indent(text: str) -> str:
    return "\n".join("    " + line for line in text.splitlines())


# -- progress ---------------------------------------------------------------------------


class RichProgress:
    """A spinner per run on a terminal; one line per finished run otherwise (CI logs)."""

    def __init__(self, console: Console) -> None:
        self.console = console
        self.live = console.is_terminal
        self.progress = Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            TimeElapsedColumn(),
            console=console,
            transient=True,
        )
        self.tasks: dict[int, TaskID] = {}
        self.started_at: dict[int, float] = {}

    def __enter__(self) -> RichProgress:
        if self.live:
            self.progress.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.live:
            self.progress.stop()

    def started(self, spec: RunSpec) -> None:
        self.started_at[id(spec)] = time.perf_counter()
        if self.live:
            self.tasks[id(spec)] = self.progress.add_task(f"run: {spec.name}", total=None)

    def finished(self, spec: RunSpec, result: RunResult) -> None:
        seconds = time.perf_counter() - self.started_at.pop(id(spec), time.perf_counter())
        status = "ok" if result.ok else result.status
        if self.live:
            task = self.tasks.pop(id(spec), None)
            if task is not None:
                self.progress.remove_task(task)
            self.progress.console.print(f"[dim]run: {spec.name}: {status} ({seconds:.1f} s)[/dim]")
        else:
            print(
                f"accel-lint verify: {spec.name}: {status} ({seconds:.1f} s)",
                file=sys.stderr,
                flush=True,
            )
