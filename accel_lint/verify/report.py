"""What a verification found: one item per applied fix with its verdict, the
noise floor, the timing, and what stopped a run. Filled by the session, read
by the table, the JSON and the HTML report."""

from __future__ import annotations

from dataclasses import dataclass, field

from accel_lint.rule import Equivalence, Verification
from accel_lint.verify import compare as cmp
from accel_lint.verify.timing import Side, Speed


@dataclass
class FixItem:
    """One applied fix: where it is, what its rule declares, and its verdict."""

    code: str
    message: str
    equivalence: Equivalence  # the rule's, or the finding's own
    verification: Verification
    filename: str = ""
    row: int | None = None
    applicability: str = "safe"
    verdict: cmp.Verdict | None = None


@dataclass(frozen=True)
class Problem:
    """A run that did not complete, attributed to the original or a fixed script."""

    run: str
    status: str
    message: str
    output: str


@dataclass
class Timing:
    original: Side
    fixed: Side
    speed: Speed
    original_device_peak: int | None = None
    fixed_device_peak: int | None = None
    notes: list[str] = field(default_factory=list)
    applicable: bool = True  # False: every fix's benefit needs absent hardware


@dataclass
class Report:
    script: str
    steps: int
    repeat: int
    fixes: list[FixItem]
    device: str = "cpu"
    noise: cmp.Noise | None = None
    timing: Timing | None = None
    problem: Problem | None = None
    notes: list[str] = field(default_factory=list)
    combined_fails: str | None = None  # the fixes hold one by one but not together

    @property
    def exit_code(self) -> int:
        """0 every fix holds, 1 one does not, 2 a run failed. A fix that could not be
        verified here is not a pass either (2)."""
        if self.problem is not None:
            return 2
        if self.combined_fails or any(
            f.verdict is not None and f.verdict.verdict == cmp.FAILS for f in self.fixes
        ):
            return 1
        if any(f.verdict is None or f.verdict.verdict != cmp.HOLDS for f in self.fixes):
            return 2
        return 0
