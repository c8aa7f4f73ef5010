"""The HTML report is one self-contained file: nothing fetched (no http(s) URL,
no external script, no script at all), its charts inline SVG; and it carries the
loss curves, the noise band, the per-step difference on a log scale, the speed and
memory bars of each fix and the verdict table."""

from __future__ import annotations

import re
from html.parser import HTMLParser

from accel_lint.rule import Equivalence, Verification
from accel_lint.verify import compare as cmp
from accel_lint.verify.html import render_html
from accel_lint.verify.report import (
    FindingCheck,
    FixItem,
    FixSpeed,
    Opinion,
    Report,
    RunSeries,
    RuntimeFinding,
    Timing,
    VariantTiming,
)
from accel_lint.verify.svg import nice_ticks
from accel_lint.verify.timing import RunRate, Side, compare


def _side(*rates: float, memory: int) -> Side:
    return Side(tuple(RunRate(r, tuple([1.0 / r] * 15), memory, None, 64) for r in rates))


def _report() -> Report:
    exact = Verification(Equivalence.EXACT)
    gpu = Verification(Equivalence.EXACT, needs_accelerator="pinned memory needs an accelerator")
    original = _side(20.0, 21.0, 19.5, memory=300 * 2**20)
    workers = _side(30.0, 31.0, 29.0, memory=800 * 2**20)
    variant = VariantTiming("ACL101", frozenset({"ACL101"}), workers, compare(original, workers))
    fast = FixItem(
        "ACL101", "Add `num_workers=4`", Equivalence.EXACT, exact, "train.py", 44, "unsafe"
    )
    fast.verdict = cmp.Verdict(cmp.HOLDS, None, 0.0, 0.0, ["bitwise equal: 20 losses"])
    fast.speed = FixSpeed(variant.speed.label, variant)
    pinned = FixItem("ACL102", "Add `pin_memory=True`", Equivalence.EXACT, gpu, "train.py", 44)
    pinned.verdict = cmp.Verdict(cmp.HOLDS, None, 0.0, 0.0)
    pinned.speed = FixSpeed.not_applicable("pinned memory needs an accelerator")
    report = Report("train.py", 20, 3, [fast, pinned], torch="2.13.0+cpu")
    losses = [2.3 - 0.05 * i for i in range(20)]
    fixed_losses = [v + (1e-7 * i if i % 2 else 0.0) for i, v in enumerate(losses)]
    report.runs = [
        RunSeries("original", "equivalence", "original", "ok", 2.0, 20, losses, [], 1, None),
        RunSeries("fixed", "equivalence", "ACL101", "ok", 2.0, 20, fixed_losses, [], 1, None),
    ]
    report.noise = cmp.Noise(2e-6, 1e-7, 1e-5, 0.0)
    report.noise_series = [2e-6 * (i % 3) for i in range(20)]
    report.timing = Timing(
        original,
        [variant],
        variant,
        not_applicable={"ACL102": "pinned memory needs an accelerator"},
    )
    report.opinion = Opinion(
        8,
        "cpu",
        [FindingCheck("ACL101", "dataloader-sync-loading", 44, "seen", "num_workers=0")],
        [RuntimeFinding("ACL311", "eval-without-no-grad", "train.py", 90, "eval with grad on")],
        [
            {
                "name": "SynchronizedDataLoaderPattern",
                "shows": "dataloader-sync-loading",
                "status": "ran",
                "reason": None,
                "hits": [{"file": "train.py", "row": 50, "message": "m"}],
            }
        ],
        ["backends: cudnn.benchmark=False"],
    )
    return report


class _Tags(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict[str, str | None]]] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_report_is_self_contained() -> None:
    page = render_html(_report())
    assert not re.search(r"https?://", page)
    parser = _Tags()
    parser.feed(page)
    names = [tag for tag, _ in parser.tags]
    assert "script" not in names and "link" not in names and "iframe" not in names
    assert not [a for _, attrs in parser.tags for k, a in attrs.items() if k in ("src", "href")]
    assert names.count("svg") == 4  # loss curves, difference, speed bars, memory bars


def test_the_report_shows_the_curves_the_band_the_bars_and_the_verdicts() -> None:
    page = render_html(_report())
    assert "Loss per backward pass" in page and "noise band" in page and "<polygon" in page
    assert "Per-step loss difference (log scale)" in page
    assert "10 of 20 passes are bitwise equal" in page
    assert "Steps per second" in page and "Peak memory" in page and "800 MiB" in page
    assert "train.py:44" in page and "ACL102" in page and "not applicable on this hardware" in page
    assert 'class="badge unsafe"' in page and 'class="badge holds"' in page
    assert "runtime only" in page and "ACL311" in page and "SynchronizedDataLoaderPattern" in page
    assert "2 fixes verified (1 unsafe): 2 holds" in page


def test_a_script_with_nothing_to_verify_still_makes_a_page() -> None:
    page = render_html(Report("train.py", 20, 3, []))
    assert "nothing to verify" in page and "<svg" not in page


def test_axis_ticks_are_round_numbers() -> None:
    assert nice_ticks(0, 1, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(1.23, 2.31, 4) == [1.25, 1.5, 1.75, 2.0, 2.25]
