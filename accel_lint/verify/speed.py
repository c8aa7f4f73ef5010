"""Timing runs: what each fix costs or gains, measured one run at a time.

Variants timed against the original: every fix this machine can measure,
together, and, when fixes of more than one rule apply, each rule's fixes
alone. A rule whose benefit needs hardware the machine lacks (its
`needs_accelerator`) gets "not applicable on this hardware" and no runs.
`--repeat` rounds; each round runs the original and every variant once, in an
order that reverses from one round to the next, so a drift of the machine's
load falls on every variant alike. Timing runs record the step clock and
memory only.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.plan import Planner
from accel_lint.verify.protocol import TIME, LoaderRecord
from accel_lint.verify.report import FixItem, FixSpeed, Problem, Report, Timing, VariantTiming
from accel_lint.verify.timing import FASTER, SLOWER, RunRate, Side, compare, run_rate

BUSY_CORES = 0.5  # other processes' load during a timing run worth a note
MIN_ROUNDS = 2  # timing rounds before the intervals may stop the rest
MEMORY_NOTE = 1.2  # a variant whose peak memory grows by this factor is explained
Runs = Callable[[Sequence[RunSpec]], list[RunResult]]
ALL = "all fixes"


@dataclass(frozen=True)
class Plan:
    variants: tuple[tuple[str, frozenset[str]], ...]  # (name, codes)
    not_applicable: dict[str, str]  # code -> why its benefit needs other hardware

    @property
    def runs_per_round(self) -> int:
        return 1 + len(self.variants) if self.variants else 0


def plan(items: Sequence[FixItem], device: str) -> Plan:
    codes = list(dict.fromkeys(f.code for f in items))
    absent: dict[str, str] = {}
    if device != "cuda":
        for item in items:
            why = item.verification.needs_accelerator
            if why and item.code not in absent:
                absent[item.code] = why
    measurable = [c for c in codes if c not in absent]
    variants: list[tuple[str, frozenset[str]]] = []
    if measurable:
        variants.append((ALL if len(measurable) > 1 else measurable[0], frozenset(measurable)))
    if len(measurable) > 1:
        variants += [(code, frozenset({code})) for code in measurable]
    return Plan(tuple(variants), absent)


def time_fixes(
    items: Sequence[FixItem],
    planner: Planner,
    runs: Runs,
    report: Report,
    timing_plan: Plan,
    *,
    paired: bool = False,
) -> None:
    """`paired`: each variant's run goes at once with a run of the original, each
    on a core of its own (both meet the same machine, in half the time); else
    one run at a time. `runs` runs the specs it is given at once."""
    options = planner.options
    warmup = options.warmup_steps
    for item in items:
        why = timing_plan.not_applicable.get(item.code)
        if why is not None:
            item.speed = FixSpeed.not_applicable(why)
    if not timing_plan.variants:
        if timing_plan.not_applicable:
            report.notes.append(
                "no timing runs: every fix's benefit needs hardware this machine lacks"
            )
        return
    order: list[tuple[str, frozenset[str] | None]] = [
        ("original", None),
        *timing_plan.variants,
    ]
    rates: dict[str, list[RunRate]] = {name: [] for name, _ in order}
    loaders: dict[str, list[LoaderRecord]] = {}
    others: list[float] = []
    rounds = 0
    for round_index in range(options.repeat):
        sequence = order if round_index % 2 == 0 else order[::-1]
        if paired:
            # each variant beside the original, the original first in every other round
            slots = [
                [order[0], variant] if round_index % 2 == 0 else [variant, order[0]]
                for variant in order[1:]
            ]
        else:
            slots = [[entry] for entry in sequence]
        for slot in slots:
            specs = [
                planner.spec(
                    f"timing {round_index + 1}/{options.repeat}: {name}",
                    codes,
                    mode=TIME,
                    reference=None,
                    align_init=None,
                    role="timing",
                )
                for name, codes in slot
            ]
            done = runs(specs)
            for (name, _), spec, run in zip(slot, specs, done):
                if not run.ok:
                    report.problem = Problem(
                        spec.name, run.status, run.message or run.status, run.output
                    )
                    return
                rate = _rate(run, warmup)
                if rate is None:
                    report.notes.append(timing_skipped(run.steps, warmup, options.steps))
                    return
                rates[name].append(rate)
                loaders.setdefault(name, [lo for r in run.records for lo in r.get("loaders", [])])
                if run.other_load is not None:
                    # the partner of a pair is ours, not another tenant's
                    partner = sum(
                        r.cpu_seconds / r.seconds
                        for r in done
                        if r is not run and r.cpu_seconds is not None and r.seconds > 0
                    )
                    others.append(max(0.0, run.other_load - partner))
        rounds = round_index + 1
        if rounds >= MIN_ROUNDS and rounds < options.repeat and decided(rates, timing_plan):
            break
    original = Side(tuple(rates["original"]))
    variants = []
    for name, codes in timing_plan.variants:
        side = Side(tuple(rates[name]))
        variant = VariantTiming(name, codes, side, compare(original, side))
        explain(variant, original, loaders.get("original", []), loaders.get(name, []))
        variants.append(variant)
    fixed = variants[0]
    timing = Timing(original, variants, fixed, not_applicable=dict(timing_plan.not_applicable))
    if others and max(others) > BUSY_CORES:
        timing.notes.append(
            f"other processes kept up to {max(others):.1f} of {os.cpu_count() or 1} cores busy "
            "during timing: the rates are noisier than on a quiet machine"
        )
    if rounds < options.repeat:
        timing.notes.append(
            f"timing stopped after {rounds} of {options.repeat} rounds: every interval was "
            "decided (outside the run-to-run noise, or inside it)"
        )
    if paired:
        timing.notes.append(
            "each timing run of a fix ran at once with a run of the original, each on a core "
            "of its own"
        )
    if not fixed.speed.noise_measured:
        timing.notes.append(
            f"one timing run per script cannot measure the run-to-run noise: "
            f"{fixed.speed.noise:.0%} is assumed (use --repeat 2 or more)"
        )
    by_code = {v.name: v for v in variants}
    for item in items:
        if item.speed is not None:
            continue
        alone = by_code.get(item.code, fixed if fixed.codes == {item.code} else None)
        if alone is not None:
            item.speed = FixSpeed(alone.speed.label, alone)
    report.timing = timing


def available_cores() -> set[int]:
    """The cores this process may run on (its affinity), else every core."""
    try:
        return os.sched_getaffinity(0)
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def timing_skipped(steps: int, warmup: int, requested: int) -> str:
    """Why no rate could be measured: too few steps after the warm-up, because the
    script ended by itself (more --steps cannot help) or because --steps is low."""
    if steps < requested:
        return (
            f"timing skipped: the script ended by itself after {steps} optimizer steps (before "
            f"--steps {requested}), too few for a steady rate after {warmup} warm-up steps; let "
            "it train longer through its arguments after `--`, or lower --warmup"
        )
    return (
        f"timing skipped: {steps} steps leave no steady rate after {warmup} warm-up steps "
        "(raise --steps, or lower --warmup)"
    )


def decided(rates: dict[str, list[RunRate]], timing_plan: Plan) -> bool:
    """Every variant's label settled: its interval clears the original's run-to-run
    noise (faster or slower), or lies wholly inside it (no measurable change: more
    runs only widen the noise it would have to clear)."""
    original = Side(tuple(rates["original"]))
    for name, _ in timing_plan.variants:
        speed = compare(original, Side(tuple(rates[name])))
        if speed.label in (FASTER, SLOWER):
            continue
        if speed.low is None or speed.high is None or not speed.noise_measured:
            return False
        if not (1.0 / (1.0 + speed.noise) <= speed.low and speed.high <= 1.0 + speed.noise):
            return False
    return True


def _rate(run: RunResult, warmup: int) -> RunRate | None:
    record = run.first
    batches = [r.get("batch_size") for r in run.records]
    samples = sum(b for b in batches if b) if batches and all(batches) else None
    peaks = [r["memory"]["device_peak_bytes"] for r in run.records]
    return run_rate(
        record.get("step_times", []),
        warmup,
        peak_memory_bytes=sum(int(r["memory"]["host_peak_bytes"]) for r in run.records),
        device_peak_bytes=sum(int(p) for p in peaks if p)
        if all(p is not None for p in peaks)
        else None,
        samples_per_step=samples,
        first_step_s=record.get("first_step_s"),
    )


def explain(
    variant: VariantTiming,
    original: Side,
    original_loaders: Sequence[LoaderRecord],
    loaders: Sequence[LoaderRecord],
) -> None:
    """Name the likely cause of a slowdown and of a memory growth, from what the
    runs recorded: DataLoader workers added over data already in memory."""
    # loaders match by the order they were built in: a fix moves lines, not loaders
    before = {lo["ordinal"]: lo for lo in original_loaders}
    added = [
        lo
        for lo in loaders
        if lo["num_workers"] > 0
        and before.get(lo["ordinal"], lo)["num_workers"] == 0
        and lo["trains"]
    ]
    in_memory = [lo for lo in added if lo["in_memory"]]
    if variant.speed.label == SLOWER and in_memory:
        lo = in_memory[0]
        variant.cause = (
            f"DataLoader workers over data already in memory ({lo['dataset']}): "
            "each batch is built in a worker process and copied to the training process, "
            "which costs more than indexing the tensors in place"
        )
    grown = variant.side.peak_memory_bytes, original.peak_memory_bytes
    if added and grown[0] and grown[1] and grown[0] > MEMORY_NOTE * grown[1]:
        workers = sum(lo["num_workers"] for lo in added)
        variant.notes.append(
            f"peak memory {grown[1] / 2**20:,.0f} -> {grown[0] / 2**20:,.0f} MiB: "
            f"{workers} DataLoader worker process(es), each a copy of the training process "
            "counted at its own peak"
        )
