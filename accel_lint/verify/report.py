"""What a verification found: one item per applied fix with its verdict, the
noise floor, the timing, and what stopped a run. Filled by the session, read
by the table, the JSON and the HTML report."""

from __future__ import annotations

from dataclasses import dataclass, field

from accel_lint.rule import Equivalence, Verification
from accel_lint.verify import compare as cmp
from accel_lint.verify.protocol import PatternResult
from accel_lint.verify.timing import NOT_APPLICABLE, Side, Speed


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
    speed: FixSpeed | None = None


@dataclass
class VariantTiming:
    """Timing runs of one variant: every measurable fix, or one rule's fixes alone."""

    name: str
    codes: frozenset[str]
    side: Side
    speed: Speed
    cause: str | None = None  # the likely cause of a slowdown, when one is known
    notes: list[str] = field(default_factory=list)


@dataclass
class FixSpeed:
    """What the timing says about one fix: its rule's variant, or why none."""

    label: str
    variant: VariantTiming | None = None
    reason: str | None = None  # why the ratio is not applicable here

    @staticmethod
    def not_applicable(reason: str) -> FixSpeed:
        return FixSpeed(NOT_APPLICABLE, None, reason)


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
    variants: list[VariantTiming]
    fixed: VariantTiming | None  # every fix this machine can measure, together
    notes: list[str] = field(default_factory=list)
    not_applicable: dict[str, str] = field(default_factory=dict)  # code -> why

    @property
    def applicable(self) -> bool:
        return self.fixed is not None


@dataclass
class RunSeries:
    """One run, as the JSON and the HTML report show it: enough to plot."""

    name: str
    role: str  # equivalence | noise | isolation | probe | timing
    variant: str
    status: str
    seconds: float
    steps: int
    losses: list[float]
    step_times: list[float]  # seconds since the first step, per step
    peak_memory_bytes: int | None
    device_peak_bytes: int | None
    cpu_seconds: float | None = None  # the run's processes, as their parent reaped them


@dataclass(frozen=True)
class Unfixed:
    """A finding without an applied fix, and why."""

    code: str
    row: int
    message: str
    why: str


@dataclass
class FindingCheck:
    """A static finding held against what the probe run saw."""

    code: str
    name: str
    row: int
    status: str  # "seen" | "not seen" | "not observable at run time"
    detail: str


@dataclass
class RuntimeFinding:
    """Something the run showed that no static finding names."""

    code: str | None  # the rule it maps to (None: no rule has that name yet)
    name: str
    file: str
    row: int | None
    detail: str


@dataclass
class Opinion:
    """The runtime second opinion."""

    steps: int
    device: str
    findings: list[FindingCheck] = field(default_factory=list)
    runtime_only: list[RuntimeFinding] = field(default_factory=list)
    patterns: list[PatternResult] = field(default_factory=list)
    configuration: list[str] = field(default_factory=list)
    problem: str | None = None  # the probe run did not complete


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
    python: str = ""
    torch: str = ""
    runs: list[RunSeries] = field(default_factory=list)
    noise_series: list[float] = field(default_factory=list)  # |perturbed - original| per pass
    unfixed: list[Unfixed] = field(default_factory=list)
    opinion: Opinion | None = None

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
