"""Steps per second from the step clock of timing runs, and what a comparison
may claim.

A run's rate is its steady state: optimizer steps per second from the end of
the warm-up (worker start-up, allocator growth and lazy imports stay out of it)
to the last step. It is a window rate, not a median of step times, because a
loader with workers delivers batches in bursts (steps alternate 28 ms and 6 ms
on the I/O fixture, so a median picks one mode). A side's figure is the median
over its runs, which keeps a stall of a shared machine in one run out of it.

The ratio fixed/original has a bootstrap interval that resamples both the runs
and the steps within each run, so it carries the run-to-run variation as well
as the step-to-step one. The label (docs/verifier.md, "Timing"):

- "faster": the interval lies above 1 and clears the run-to-run noise, the
  original's own spread between its runs (A against A);
- "slower": it lies below 1 and clears that noise;
- "no measurable change": anything else;
- "not applicable on this hardware": the fix's benefit needs hardware this
  machine lacks, so no ratio is claimed.

With one run per side the spread cannot be measured, and an assumed noise of
10% stands in for it (the relative spread from which torch's benchmark timer
warns that a measurement may reflect the machine rather than the code).
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95
ASSUMED_NOISE = 0.10

FASTER = "faster"
SLOWER = "slower"
NO_CHANGE = "no measurable change"
NOT_APPLICABLE = "not applicable on this hardware"


@dataclass(frozen=True)
class RunRate:
    steps_per_s: float
    deltas: tuple[float, ...]  # steady-state seconds per step
    peak_memory_bytes: int | None = None  # host: the process and its children
    device_peak_bytes: int | None = None  # torch.cuda.max_memory_allocated
    samples_per_step: int | None = None  # the global batch, when the loader says
    first_step_s: float | None = None


def run_rate(
    step_times: Sequence[float],
    warmup: int,
    *,
    peak_memory_bytes: int | None = None,
    device_peak_bytes: int | None = None,
    samples_per_step: int | None = None,
    first_step_s: float | None = None,
) -> RunRate | None:
    """`step_times[i]`: the clock after optimizer step i+1 (on CUDA the runner
    synchronises at the warm-up boundary and the last step, so the window is exact)."""
    if len(step_times) < warmup + 2:
        return None
    steady = list(step_times[max(warmup - 1, 0) :])
    deltas = tuple(b - a for a, b in zip(steady, steady[1:]))
    span = steady[-1] - steady[0]
    return RunRate(
        len(deltas) / span if span > 0 else float("inf"),
        deltas,
        peak_memory_bytes,
        device_peak_bytes,
        samples_per_step,
        first_step_s,
    )


@dataclass(frozen=True)
class Side:
    """One script's timing runs."""

    runs: tuple[RunRate, ...]

    @property
    def rates(self) -> list[float]:
        return [r.steps_per_s for r in self.runs]

    @property
    def median(self) -> float:
        return statistics.median(self.rates)

    @property
    def spread(self) -> float | None:
        """(max - min) / median of the per-run rates: the run-to-run noise."""
        if len(self.runs) < 2:
            return None
        return (max(self.rates) - min(self.rates)) / self.median

    @property
    def peak_memory_bytes(self) -> int | None:
        values = [r.peak_memory_bytes for r in self.runs if r.peak_memory_bytes is not None]
        return max(values) if values else None

    @property
    def device_peak_bytes(self) -> int | None:
        values = [r.device_peak_bytes for r in self.runs if r.device_peak_bytes is not None]
        return max(values) if values else None

    @property
    def samples_per_s(self) -> float | None:
        sizes = {r.samples_per_step for r in self.runs}
        if len(sizes) != 1 or None in sizes:
            return None
        (size,) = sizes
        assert size is not None
        return self.median * size

    @property
    def first_step_s(self) -> float | None:
        values = [r.first_step_s for r in self.runs if r.first_step_s is not None]
        return statistics.median(values) if values else None

    def summary(self) -> dict[str, float]:
        return {"median": self.median, "min": min(self.rates), "max": max(self.rates)}


@dataclass(frozen=True)
class Speed:
    ratio: float  # fixed steps/s over original steps/s (medians)
    low: float | None  # bootstrap confidence interval of the ratio
    high: float | None
    noise: float  # the run-to-run noise the interval must clear
    noise_measured: bool  # False: one run per side, ASSUMED_NOISE stands in
    label: str

    @property
    def speedup(self) -> float | None:
        """The ratio, when it clears the noise; None when nothing can be claimed."""
        return self.ratio if self.label in (FASTER, SLOWER) else None


def label(low: float | None, high: float | None, noise: float) -> str:
    if low is not None and low > 1.0 + noise:
        return FASTER
    if high is not None and high < 1.0 / (1.0 + noise):
        return SLOWER
    return NO_CHANGE


def compare(original: Side, fixed: Side, *, seed: int = 0) -> Speed:
    ratio = fixed.median / original.median
    spread = original.spread
    noise = spread if spread is not None else ASSUMED_NOISE
    low, high = bootstrap_ratio(original.runs, fixed.runs, seed=seed)
    return Speed(ratio, low, high, noise, spread is not None, label(low, high, noise))


def bootstrap_ratio(
    original: Sequence[RunRate],
    fixed: Sequence[RunRate],
    *,
    seed: int = 0,
    samples: int = BOOTSTRAP_SAMPLES,
) -> tuple[float | None, float | None]:
    """Confidence interval of median(fixed rate) / median(original rate): each
    sample draws runs with replacement, then each drawn run's steady steps with
    replacement (a rate is steps over their summed time)."""
    if not original or not fixed or not all(r.deltas for r in (*original, *fixed)):
        return None, None
    if sum(len(r.deltas) for r in original) < 2 or sum(len(r.deltas) for r in fixed) < 2:
        return None, None
    rng = random.Random(seed)

    def resampled(runs: Sequence[RunRate]) -> float:
        rates = []
        for run in rng.choices(runs, k=len(runs)):
            drawn = rng.choices(run.deltas, k=len(run.deltas))
            total = sum(drawn)
            rates.append(len(drawn) / total if total > 0 else float("inf"))
        return statistics.median(rates)

    ratios = sorted(resampled(fixed) / resampled(original) for _ in range(samples))
    tail = (1.0 - CONFIDENCE) / 2
    return ratios[int(tail * (len(ratios) - 1))], ratios[int((1.0 - tail) * (len(ratios) - 1))]
