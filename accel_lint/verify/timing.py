"""Steps per second from the step clock of timing runs, and when a speedup is real.

Timing runs alternate original and fixed (A B A B ...). A run's rate is its
steady state: optimizer steps per second from the end of the warm-up (worker
start-up, allocator growth and lazy imports stay out of it) to the last step.
It is a window rate, not a median of step times, because a loader with
workers delivers batches in bursts (steps alternate 28 ms and 6 ms on the I/O
fixture, so a median picks one mode). Each side's figure is the median over its
repeats, which keeps a stall of the shared machine in one run out of it. A
speedup is claimed only when the bootstrap confidence interval of the ratio
clears the spread between the original's own repeats (A against A): on a
shared machine that spread is the honest noise (docs/verifier.md, "Timing").
"""

from __future__ import annotations

import random
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

BOOTSTRAP_SAMPLES = 2000
CONFIDENCE = 0.95


@dataclass(frozen=True)
class RunRate:
    steps_per_s: float
    deltas: tuple[float, ...]  # steady-state seconds per step
    peak_memory_bytes: int | None = None
    first_step_s: float | None = None


def run_rate(
    step_times: Sequence[float],
    warmup: int,
    *,
    peak_memory_bytes: int | None = None,
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
        len(deltas) / span if span > 0 else float("inf"), deltas, peak_memory_bytes, first_step_s
    )


@dataclass(frozen=True)
class Side:
    """One side's timing runs."""

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
    noise: float | None  # the A-vs-A spread
    claim: str  # "faster" | "slower" | "no measurable change" | "noise unknown"

    @property
    def speedup(self) -> float | None:
        """The ratio, when it clears the noise; None when nothing can be claimed."""
        return self.ratio if self.claim in ("faster", "slower") else None


def compare(original: Side, fixed: Side, *, seed: int = 0) -> Speed:
    ratio = fixed.median / original.median
    noise = original.spread
    low, high = bootstrap_ratio(
        [d for r in original.runs for d in r.deltas],
        [d for r in fixed.runs for d in r.deltas],
        seed=seed,
    )
    if noise is None:
        return Speed(ratio, low, high, None, "noise unknown")
    if low is None or high is None:
        return Speed(ratio, None, None, noise, "noise unknown")
    faster = low > 1.0 + noise
    slower = high < 1.0 / (1.0 + noise)
    claim = "faster" if faster else "slower" if slower else "no measurable change"
    return Speed(ratio, low, high, noise, claim)


def bootstrap_ratio(
    original: Sequence[float],
    fixed: Sequence[float],
    *,
    seed: int = 0,
    samples: int = BOOTSTRAP_SAMPLES,
) -> tuple[float | None, float | None]:
    """Confidence interval of mean(original step time) / mean(fixed step time),
    i.e. of the fixed/original steps-per-second ratio, resampling steady steps."""
    if len(original) < 2 or len(fixed) < 2:
        return None, None
    rng = random.Random(seed)
    ratios = []
    for _ in range(samples):
        a = statistics.fmean(rng.choices(original, k=len(original)))
        b = statistics.fmean(rng.choices(fixed, k=len(fixed)))
        if b > 0:
            ratios.append(a / b)
    if not ratios:
        return None, None
    ratios.sort()
    tail = (1.0 - CONFIDENCE) / 2
    return ratios[int(tail * (len(ratios) - 1))], ratios[int((1.0 - tail) * (len(ratios) - 1))]
