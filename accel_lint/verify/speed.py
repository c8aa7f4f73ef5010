"""Timing runs: the original and the fixed script alternating, one at a time,
step clock only; and what the timing may claim on this machine."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.plan import Planner
from accel_lint.verify.protocol import TIME
from accel_lint.verify.report import FixItem, Problem, Report, Timing
from accel_lint.verify.timing import RunRate, Side, compare, run_rate

BUSY_CORES = 0.5  # other processes' load during a timing run worth a note
Runs = Callable[[Sequence[RunSpec]], list[RunResult]]


def time_fixes(
    codes: frozenset[str], items: Sequence[FixItem], planner: Planner, runs: Runs, report: Report
) -> None:
    options = planner.options
    warmup = options.warmup_steps
    sides: dict[str, list[RunRate]] = {"original": [], "fixed": []}
    device_peaks: dict[str, list[int]] = {"original": [], "fixed": []}
    others: list[float] = []
    for i in range(options.repeat):
        for side, side_codes in (("original", None), ("fixed", codes)):
            name = f"timing {i + 1}/{options.repeat}: {side}"
            spec = planner.spec(
                name, side_codes, mode=TIME, reference=None, align_init=None, role="timing"
            )
            run = runs([spec])[0]
            if not run.ok:
                report.problem = Problem(name, run.status, run.message or run.status, run.output)
                return
            record = run.first
            rate = run_rate(
                record.get("step_times", []),
                warmup,
                peak_memory_bytes=sum(int(r["memory"]["host_peak_bytes"]) for r in run.records),
                first_step_s=record.get("first_step_s"),
            )
            if rate is None:
                report.notes.append(
                    f"timing skipped: {run.steps} steps leave no steady state after "
                    f"{warmup} warm-up steps (raise --steps)"
                )
                return
            sides[side].append(rate)
            peaks = [r["memory"]["device_peak_bytes"] for r in run.records]
            if peaks and all(p is not None for p in peaks):
                device_peaks[side].append(sum(int(p or 0) for p in peaks))
            if run.other_load is not None:
                others.append(run.other_load)
    original, fixed = Side(tuple(sides["original"])), Side(tuple(sides["fixed"]))
    timing = Timing(
        original,
        fixed,
        compare(original, fixed),
        max(device_peaks["original"], default=None),
        max(device_peaks["fixed"], default=None),
    )
    if others and max(others) > BUSY_CORES:
        timing.notes.append(
            f"other processes kept up to {max(others):.1f} of {os.cpu_count() or 1} cores busy "
            "during timing: the rates are noisier than on a quiet machine"
        )
    if report.device != "cuda":
        absent = [f for f in items if f.verification.needs_accelerator]
        for code in dict.fromkeys(f.code for f in absent):
            why = next(f.verification.needs_accelerator for f in absent if f.code == code)
            timing.notes.append(f"{code}: not measurable on this machine: {why}")
        timing.applicable = len({f.code for f in absent}) < len({f.code for f in items})
    if timing.speed.claim == "noise unknown":
        timing.notes.append("one timing repeat cannot show the noise: use --repeat 2 or more")
    report.timing = timing
