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
    assert "2 fixes verified (1 of 2 fixes unsafe): 2 holds" in page


def test_the_report_shows_the_fix_the_command_the_interval_and_the_version() -> None:
    report = _report()
    report.command = "accel-lint verify train.py -- --epochs 1"
    report.version = "0.1.0"
    report.fixes[0].diff = (
        "--- train.py\n+++ train.py (fixed)\n@@ -44,1 +44,1 @@\n"
        "-loader = DataLoader(data)\n+loader = DataLoader(data, num_workers=4)\n"
    )
    page = render_html(report)
    assert "accel-lint verify train.py -- --epochs 1" in page and "accel-lint 0.1.0" in page
    # the diff is the row after its fix's verdict row, lines marked as added or removed
    verdict_row = page.index("<td>train.py:44</td>")
    diff_at = page.index('<pre class="diff">')
    assert verdict_row < diff_at < page.index("<td>train.py:44</td>", verdict_row + 1)
    assert '<span class="del">-loader = DataLoader(data)</span>' in page
    assert '<span class="add">+loader = DataLoader(data, num_workers=4)</span>' in page
    # the interval and the A-vs-A noise, in the row and beside the bar
    assert "95% interval 1.38-1.59; run-to-run noise 8%" in page
    assert "(95% 1.38-1.59x, noise 8%)" in page
    # markdown's code spans are rendered, never shown raw
    assert "Add <code>num_workers=4</code>" in page and "`" not in page


def test_memory_bars_follow_their_own_verdict_not_the_speed_label() -> None:
    report = _report()  # ACL101: faster, and its workers take 800 MiB against 300
    page = render_html(report)
    memory = page[page.index("<figcaption>Peak memory") :]
    assert 'fill="#f58518"' in memory and "2.67x more memory" in memory
    assert 'fill="#54a24b"' not in memory  # the speed's "faster" green is not memory's
    speed = page[page.index("<figcaption>Steps per second") : page.index("<figcaption>Peak memory")]
    assert 'fill="#54a24b"' in speed


def test_the_summary_says_could_not_verify_instead_of_verified_not_verifiable() -> None:
    report = _report()
    for item in report.fixes:
        item.verdict = cmp.Verdict(cmp.NOT_VERIFIABLE, "the script needs CUDA")
    page = render_html(report)
    summary = page[page.index('<p class="summary') : page.index("<h2")]
    assert summary == '<p class="summary warn">Could not verify 2 fixes (1 unsafe)</p>\n'
    report.fixes[0].verdict = cmp.Verdict(cmp.HOLDS, None, 0.0, 0.0)
    assert report.summary() == (
        "1 fix verified (1 of 2 fixes unsafe): 1 holds; could not verify 1 fix"
    )


def test_a_script_with_nothing_to_verify_still_makes_a_page() -> None:
    page = render_html(Report("train.py", 20, 3, []))
    assert "nothing to verify" in page and "<svg" not in page


def test_axis_ticks_are_round_numbers() -> None:
    assert nice_ticks(0, 1, 5) == [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]
    assert nice_ticks(1.23, 2.31, 4) == [1.25, 1.5, 1.75, 2.0, 2.25]


def test_each_fix_gets_the_hunks_at_its_line_and_a_dependent_fix_its_addition() -> None:
    from accel_lint.verify.report import attach_diffs

    original = "".join(f"{name} = {i}\n" for i, name in enumerate("abcdefghijkl", 1))
    original = original.replace("k = 11", "g = 7").replace("\ng = 7\n", "\nx = 7\n", 1)
    texts = {
        frozenset(): original,
        frozenset({"ACL1"}): original.replace("b = 2", "b = 20").replace("g = 7", "g = 70"),
        # ACL2 changes something only once ACL1's fixes are in
        frozenset({"ACL2"}): original,
        frozenset({"ACL1", "ACL2"}): original.replace("b = 2", "b = 20").replace(
            "g = 7", "g = 70, 2"
        ),
    }
    exact = Verification(Equivalence.EXACT)
    first, second, dependent = (
        FixItem("ACL1", "m", Equivalence.EXACT, exact, "t.py", 2),
        FixItem("ACL1", "m", Equivalence.EXACT, exact, "t.py", 11),
        FixItem("ACL2", "m", Equivalence.EXACT, exact, "t.py", None),
    )
    attach_diffs([first, second, dependent], original, texts.__getitem__)
    assert "-b = 2\n+b = 20\n" in first.diff and "g = 7" not in first.diff
    assert "-g = 7\n+g = 70\n" in second.diff and "b = 2" not in second.diff
    assert dependent.diff.startswith("--- t.py\n+++ t.py (fixed)\n")
    assert "-g = 70\n+g = 70, 2\n" in dependent.diff
