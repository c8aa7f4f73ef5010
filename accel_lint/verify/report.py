"""What a verification found: one item per applied fix with its verdict, the
noise floor, the timing, and what stopped a run. Filled by the session, read
by the table, the JSON and the HTML report."""

from __future__ import annotations

import difflib
import re
from collections.abc import Callable, Sequence
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
    diff: str = ""  # the unified diff of this fix (its rule's hunks at its place)


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
    hint: str | None = None  # what to do about it, when the failure says (said once)


@dataclass(frozen=True)
class RefusedWrite:
    """A write the runner refused because it resolved outside the run's copy of the
    script's folder (a link out of it): the user's file was not touched, but the
    script writes outside its folder. Said even when the script caught the error."""

    run: str  # the first run that tried it
    path: str  # as the script named it
    resolves_to: str

    def sentence(self) -> str:
        return (
            f"the script tried to write outside its folder: `{self.path}` resolves to "
            f"`{self.resolves_to}`, outside the run's copy; the write was refused "
            f"(run `{self.run}`; the script's own files are never changed)"
        )


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
    command: str = ""  # how verify was called, the script's arguments included
    refused_writes: list[RefusedWrite] = field(default_factory=list)
    version: str = ""  # accel-lint's

    def refuse(self, run: str, path: str, resolves_to: str) -> None:
        """Record a refused write, once per path and target (every run tries the same)."""
        if not any(w.path == path and w.resolves_to == resolves_to for w in self.refused_writes):
            self.refused_writes.append(RefusedWrite(run, path, resolves_to))

    def summary(self) -> str:
        """One sentence: how many fixes were verified and how they came out, and how
        many could not be verified (never "N verified: N not verifiable")."""
        total = len(self.fixes)
        unsafe = sum(1 for f in self.fixes if f.applicability == "unsafe")
        counts: dict[str, int] = {}
        for item in self.fixes:
            name = item.verdict.verdict if item.verdict else cmp.NOT_VERIFIABLE
            counts[name] = counts.get(name, 0) + 1
        unverified = counts.pop(cmp.NOT_VERIFIABLE, 0)
        verified = total - unverified
        if not verified:
            return f"could not verify {_fixes(total)} ({unsafe} unsafe)"
        text = f"{_fixes(verified)} verified ({unsafe} of {_fixes(total)} unsafe): " + ", ".join(
            f"{n} {verdict}" for verdict, n in counts.items()
        )
        if unverified:
            text += f"; could not verify {_fixes(unverified)}"
        return text

    def shared_reason(self) -> str | None:
        """The one reason every fix shares when a run failed for all of them (the
        original did not run): said once, not once per fix."""
        reasons = {f.verdict.reason if f.verdict else None for f in self.fixes}
        if self.problem is None or len(reasons) != 1:
            return None
        return next(iter(reasons))

    @property
    def steps_run(self) -> int | None:
        """The optimizer steps the original really made (a script may end before
        `--steps`): those of its first completed run."""
        first = next((r for r in self.runs if r.status == "ok" and r.variant == "original"), None)
        return first.steps if first is not None else None

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


def _fixes(n: int) -> str:
    return f"{n} fix{'es' if n != 1 else ''}"


def attach_diffs(
    items: Sequence[FixItem], original: str, fixed_by: Callable[[frozenset[str]], str]
) -> None:
    """Give each fix the unified diff of its change: its rule's fixes applied alone,
    hunk by hunk, each hunk to the fix whose line it covers (a hunk elsewhere, an
    import the fixes need, to the rule's first fix)."""
    by_code: dict[str, list[FixItem]] = {}
    for item in items:
        by_code.setdefault(item.code, []).append(item)
    every = frozenset(by_code)
    for code, own in by_code.items():
        filename = own[0].filename or "script"
        before, after = original, fixed_by(frozenset({code}))
        if after == original:
            # a fix that applies only once another one has (non_blocking after
            # pin_memory): what it adds to the others
            before, after = fixed_by(every - {code}), fixed_by(every)
        lines = difflib.unified_diff(
            before.splitlines(keepends=True), after.splitlines(keepends=True), n=2
        )
        hunks: list[list[str]] = []
        for line in list(lines)[2:]:  # the file header, written per fix below
            if line.startswith("@@"):
                hunks.append([])
            if hunks:
                hunks[-1].append(line if line.endswith("\n") else line + "\n")
        for hunk in hunks:
            match = re.match(r"@@ -(\d+)(?:,(\d+))?", hunk[0])
            start = int(match.group(1)) if match else 0
            length = int(match.group(2)) if match and match.group(2) is not None else 1
            end = start + max(length, 1) - 1
            owner = next((i for i in own if i.row is not None and start <= i.row <= end), own[0])
            if not owner.diff:
                owner.diff = f"--- {filename}\n+++ {filename} (fixed)\n"
            owner.diff += "".join(hunk)
