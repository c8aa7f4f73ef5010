"""Speed per fix and its label, on constructed timing series: "faster" and
"slower" only when the ratio's interval lies beyond 1 and clears the original's
run-to-run noise, "no measurable change" otherwise, "not applicable on this
hardware" where the fix's benefit needs hardware the machine lacks; each rule's
fixes timed alone; the likely cause of a slowdown and of a memory growth."""

from __future__ import annotations

import random
from collections.abc import Sequence
from typing import Any, cast

import pytest

from accel_lint.rule import Equivalence, Verification
from accel_lint.verify import speed
from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.plan import Options, Planner
from accel_lint.verify.protocol import LoaderRecord, Record
from accel_lint.verify.report import FixItem, Report, VariantTiming
from accel_lint.verify.timing import (
    ASSUMED_NOISE,
    FASTER,
    NO_CHANGE,
    NOT_APPLICABLE,
    SLOWER,
    RunRate,
    Side,
    bootstrap_ratio,
    compare,
    run_rate,
)


def _series(rate: float, jitter: float, n: int = 15, seed: int = 0) -> tuple[float, ...]:
    """Steady step times around 1/rate, each off by up to `jitter` (relative)."""
    rng = random.Random(seed)
    return tuple((1.0 / rate) * (1.0 + rng.uniform(-jitter, jitter)) for _ in range(n))


def _side(*rates: float, jitter: float = 0.02, memory: int | None = None) -> Side:
    runs = []
    for i, rate in enumerate(rates):
        deltas = _series(rate, jitter, seed=i + int(rate * 100))
        runs.append(RunRate(len(deltas) / sum(deltas), deltas, memory, None, 64))
    return Side(tuple(runs))


def test_faster_when_the_interval_clears_the_noise() -> None:
    result = compare(_side(28.0, 28.5, 27.9), _side(50.0, 51.0, 49.5))
    assert result.label == FASTER
    assert result.low is not None and result.low > 1.0 + result.noise
    assert result.speedup == pytest.approx(result.ratio)
    rates = _side(28.0, 28.5, 27.9).rates
    assert result.noise_measured
    assert result.noise == pytest.approx((max(rates) - min(rates)) / sorted(rates)[1])


def test_slower_when_the_whole_interval_lies_below_one_beyond_the_noise() -> None:
    result = compare(_side(30.0, 30.3, 29.9), _side(24.0, 24.2, 23.9))
    assert result.label == SLOWER
    assert result.high is not None and result.high < 1.0 / (1.0 + result.noise)
    assert result.ratio == pytest.approx(0.8, abs=0.01)


def test_no_change_when_the_ratio_is_inside_the_noise() -> None:
    # 0.8x, its interval entirely below 1, but the original's own runs spread by 30%
    result = compare(_side(25.0, 30.0, 35.0), _side(24.0, 24.2, 23.9))
    assert result.high is not None and result.high < 1.0
    assert result.label == NO_CHANGE and result.speedup is None


def test_one_run_per_side_assumes_the_noise_instead_of_claiming_nothing() -> None:
    # 0.23x: no A-vs-A spread to measure, but far beyond any plausible noise
    result = compare(_side(40.0), _side(9.2))
    assert not result.noise_measured and result.noise == ASSUMED_NOISE
    assert result.label == SLOWER
    assert compare(_side(40.0), _side(41.0)).label == NO_CHANGE


def test_the_interval_carries_the_run_to_run_variation() -> None:
    steady = _side(20.0, 20.0, 20.0, jitter=0.01)
    varying = _side(16.0, 20.0, 24.0, jitter=0.01)
    a = bootstrap_ratio(steady.runs, steady.runs)
    b = bootstrap_ratio(steady.runs, varying.runs)
    assert None not in a and None not in b
    assert (b[1] or 0) - (b[0] or 0) > 4 * ((a[1] or 0) - (a[0] or 0))
    assert bootstrap_ratio(steady.runs, varying.runs) == b  # seeded: reproducible


def test_run_rate_is_the_steady_window_and_carries_memory_and_samples() -> None:
    times = [0.0, 1.0, 2.0, 2.03, 2.04, 2.07, 2.08]
    rate = run_rate(times, warmup=2, peak_memory_bytes=5, samples_per_step=64)
    assert rate is not None and rate.steps_per_s == pytest.approx(5 / 1.08)
    assert (rate.peak_memory_bytes, rate.samples_per_step) == (5, 64)
    assert run_rate(times[:3], warmup=2) is None
    side = Side((rate,))
    assert side.samples_per_s == pytest.approx(64 * 5 / 1.08)


# -- planning and running the timing -----------------------------------------------------


def _item(code: str, needs: str | None = None) -> FixItem:
    verification = Verification(Equivalence.EXACT, needs_accelerator=needs)
    return FixItem(code, f"fix of {code}", Equivalence.EXACT, verification, "train.py", 3)


def test_each_rule_alone_and_all_together_but_not_what_needs_absent_hardware() -> None:
    items = [_item("ACL901"), _item("ACL902", "needs a GPU"), _item("ACL903"), _item("ACL901")]
    plan = speed.plan(items, "cpu")
    assert plan.variants == (
        (speed.ALL, frozenset({"ACL901", "ACL903"})),
        ("ACL901", frozenset({"ACL901"})),
        ("ACL903", frozenset({"ACL903"})),
    )
    assert plan.not_applicable == {"ACL902": "needs a GPU"}
    assert plan.runs_per_round == 4
    on_cuda = speed.plan(items, "cuda")
    assert len(on_cuda.variants) == 4 and not on_cuda.not_applicable
    single = speed.plan([_item("ACL901")], "cpu")
    assert single.variants == (("ACL901", frozenset({"ACL901"})),)


def _loader(workers: int, in_memory: bool) -> LoaderRecord:
    return cast(
        LoaderRecord,
        {
            "ordinal": 0,
            "row": 10,
            "num_workers": workers,
            "trains": True,
            "in_memory": in_memory,
            "dataset": "TensorDataset",
        },
    )


class Timed:
    """Stands in for timing runs: a rate per variant and round, and the loaders."""

    def __init__(self, rates: dict[str, list[float]]) -> None:
        self.rates = rates
        self.order: list[str] = []

    def __call__(self, specs: Sequence[RunSpec]) -> list[RunResult]:
        (spec,) = specs
        name = spec.name.split(": ", 1)[1]
        self.order.append(name)
        rate = self.rates[name][self.order.count(name) - 1]
        deltas = _series(rate, 0.01, n=20, seed=len(self.order))
        times = [sum(deltas[: i + 1]) for i in range(len(deltas))]
        workers = 2 if "ACL901" in spec.text else 0
        memory = 300 * 2**20 * (3 if workers else 1)
        record: dict[str, Any] = {
            "step_times": times,
            "memory": {"host_peak_bytes": memory, "device_peak_bytes": None},
            "batch_size": 32,
            "loaders": [_loader(workers, in_memory=True)],
        }
        return [RunResult(spec, "ok", 0, 1.0, records=[cast(Record, record)])]


def test_timing_names_each_rules_cost_and_the_likely_cause() -> None:
    items = [_item("ACL901"), _item("ACL903"), _item("ACL902", "needs a GPU")]
    planner = Planner("x", lambda codes: "fixed " + " ".join(sorted(codes)), items, Options())
    report = Report("train.py", 20, 3, items)
    runs = Timed(
        {
            "original": [50.0, 47.0, 52.0],
            speed.ALL: [38.0, 37.5, 38.5],
            "ACL901": [37.0, 36.0, 37.5],
            "ACL903": [51.0, 49.0, 52.5],
        }
    )
    speed.time_fixes(items, planner, runs, report, speed.plan(items, "cpu"))
    # rounds alternate: the order reverses from one round to the next
    assert runs.order[:4] == ["original", speed.ALL, "ACL901", "ACL903"]
    assert runs.order[4:8] == ["ACL903", "ACL901", speed.ALL, "original"]
    labels = {f.code: f.speed.label if f.speed else None for f in items}
    assert labels == {"ACL901": SLOWER, "ACL903": NO_CHANGE, "ACL902": NOT_APPLICABLE}
    slow = items[0].speed
    assert slow is not None and isinstance(slow.variant, VariantTiming)
    assert slow.variant.cause is not None
    assert slow.variant.cause.startswith("DataLoader workers over data already in memory")
    assert slow.variant.notes == [
        "peak memory 300 -> 900 MiB: 2 DataLoader worker process(es), each a copy of the "
        "training process counted at its own peak"
    ]
    assert slow.variant.side.samples_per_s == pytest.approx(32 * slow.variant.side.median)
    assert items[2].speed is not None and items[2].speed.reason == "needs a GPU"
    assert report.timing is not None and report.timing.fixed is not None
    assert report.timing.fixed.name == speed.ALL
