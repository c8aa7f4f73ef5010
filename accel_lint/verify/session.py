"""One verification: the runs in order, and who judges what.

1. the original, recorded (its final state is the reference, its initial
   weights are kept for alignment). When it stops with an error and some fixes
   declare that the original raises, the original with those fixes becomes the
   base every other run starts from, and those fixes are judged on it;
2. at once (independent, `jobs` at a time): the original again (are two
   identical runs bitwise equal?), the original perturbed (another thread
   count and every weight moved by one ulp: the noise floor), the fixed script
   with every fix, and, when a fix is judged statistically, both scripts with
   a few seed offsets;
3. when a fix fails its class on the combined run and several rules' fixes
   were applied, each failing rule's fixes alone (`isolate`);
4. timing (`speed`).

Everything a fix's rule declares (launcher, accelerator, invariant, causes) is
read from its `Verification`: nothing here depends on which rule it is.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from accel_lint.rule import Equivalence
from accel_lint.verify import compare as cmp
from accel_lint.verify import processes
from accel_lint.verify.invariants import judge_for
from accel_lint.verify.isolate import fixed_failed, isolate, problem_of
from accel_lint.verify.judge import Judge
from accel_lint.verify.launch import Progress, RunResult, RunSpec, Target, run_all
from accel_lint.verify.plan import Options, Planner
from accel_lint.verify.report import FixItem, Report
from accel_lint.verify.speed import time_fixes

# Runs specs `jobs` at a time (injectable: tests judge constructed runs).
Executor = Callable[[Sequence[RunSpec], int], list[RunResult]]


class Session:
    def __init__(
        self,
        target: Target,
        original: str,
        fixed_with: Callable[[frozenset[str]], str],
        fixes: Sequence[FixItem],
        options: Options,
        progress: Progress,
        *,
        display_name: str,
        executor: Executor | None = None,
    ) -> None:
        self.target = target
        self.options = options
        self.progress = progress
        self.fixes = list(fixes)
        self.planner = Planner(original, fixed_with, self.fixes, options)
        self.report = Report(display_name, options.steps, options.repeat, self.fixes)
        self.scratch = Path(".")
        self.executor = executor

    def run(self) -> Report:
        self.scratch = Path(tempfile.mkdtemp(prefix="accel-lint-verify-"))
        try:
            if self.fixes:
                self._verify()
        finally:
            processes.kill_all()
            shutil.rmtree(self.scratch, ignore_errors=True)
        return self.report

    def runs(self, specs: Sequence[RunSpec], jobs: int | None = None) -> list[RunResult]:
        jobs = jobs or self.options.jobs
        if self.executor is not None:
            return self.executor(specs, jobs)
        return run_all(self.target, specs, self.scratch, jobs, self.progress)

    # -- verification -------------------------------------------------------------------

    def _verify(self) -> None:
        planner = self.planner
        pending = list(self.fixes)
        reference = self.runs([planner.spec("original", None, save_state=True, dump_init=True)])[0]
        self.report.device = reference.device
        if not reference.ok:
            repaired = self._repair(reference, pending)
            if repaired is None:
                return
            reference, pending = repaired
            if not pending:
                return
        planner.reference = reference
        if reference.device == "cuda" and self.options.nproc is None:
            planner.nproc = max(1, int(reference.first.get("device_count", 1)))
        codes = frozenset(f.code for f in pending)
        statistical = any(f.equivalence is Equivalence.STATISTICAL for f in pending)
        state = reference.state_file
        other_threads = 2 if self.options.threads == 1 else 1
        specs = [
            planner.spec("original (repeat)", None, reference=state),
            planner.spec(
                f"original (noise: {other_threads} threads, weights moved 1 ulp)",
                None,
                reference=state,
                threads=other_threads,
                perturb=True,
                role="noise",
            ),
            planner.spec("fixed", codes),
        ]
        offsets = range(1, self.options.seeds) if statistical else range(0)
        specs += [planner.spec(f"original (seed +{k})", None, seed_offset=k) for k in offsets]
        specs += [planner.spec(f"fixed (seed +{k})", codes, seed_offset=k) for k in offsets]
        results = self.runs(specs)
        repeat, perturbed, combined = results[:3]
        seeded_original = [reference, *results[3 : 3 + len(offsets)]]
        combined_seeded = [combined, *results[3 + len(offsets) :]]
        for run in (repeat, perturbed, *seeded_original[1:]):
            if not run.ok:
                self._original_failed(run, pending)
                return
        noise = _noise(reference, repeat, perturbed)
        self.report.noise = noise
        if not noise.deterministic:
            self.report.notes.append(
                "the original is not deterministic: two identical runs differ (losses by up to "
                f"{cmp.fmt(noise.nondeterminism)}); exact fixes are judged against that noise"
            )
        judge = Judge(reference, noise, seeded_original)
        if not all(r.ok for r in combined_seeded):
            fixed_failed(combined_seeded, pending, planner, judge, self.runs, self.report)
        else:
            for item in pending:
                item.verdict = judge.judge(item, combined, combined_seeded)
            failing = [f for f in pending if not f.verdict or not f.verdict.holds]
            isolate(failing, pending, planner, judge, self.runs, self.report, combined)
        if self.report.problem is None and self.options.repeat > 0:
            time_fixes(codes, pending, planner, lambda s: self.runs(s, 1), self.report)

    def _repair(
        self, original: RunResult, pending: list[FixItem]
    ) -> tuple[RunResult, list[FixItem]] | None:
        """The original failed. Fixes whose invariant is that the original raises are
        judged on the original with their fixes applied, which then becomes the base
        of every other run; without such fixes nothing can be verified."""
        repairs = [
            f
            for f in pending
            if f.verification.invariant is not None
            and (j := judge_for(f.verification.invariant)) is not None
            and j.original_fails
        ]
        if original.status != "crashed" or not repairs:
            self._original_failed(original, pending)
            return None
        codes = frozenset(f.code for f in repairs)
        repaired = self.runs(
            [
                self.planner.spec(
                    f"original with the {'+'.join(sorted(codes))} fix",
                    codes,
                    save_state=True,
                    dump_init=True,
                )
            ]
        )[0]
        for item in repairs:
            item.verdict = Judge.intended(item, original, repaired)
        rest = [f for f in pending if f.code not in codes]
        if not repaired.ok:
            self._original_failed(repaired, rest)
            return None
        self.planner.base = codes
        self.planner.fixes = rest
        self.report.device = repaired.device
        if rest:
            self.report.notes.append(
                f"the original raises; the other fixes are judged on the original with the "
                f"{', '.join(sorted(codes))} fix applied"
            )
        return repaired, rest

    def _original_failed(self, run: RunResult, items: Sequence[FixItem]) -> None:
        what = {
            "needs-cuda": "not verifiable here: the script needs CUDA and this machine has no "
            "CUDA device",
            "no-steps": "not verifiable: the original never stepped an optimizer, so there is "
            "nothing to compare (is training behind an option that the arguments after `--` "
            "should set?)",
            "timeout": f"not verifiable: the original {run.message}",
        }.get(run.status, f"not verifiable: the original script failed ({run.message})")
        for item in items:
            item.verdict = cmp.Verdict(cmp.NOT_VERIFIABLE, what)
        self.report.problem = problem_of(run)


def _noise(reference: RunResult, repeat: RunResult, perturbed: RunResult) -> cmp.Noise:
    def diffs(run: RunResult) -> tuple[cmp.LossDiff, cmp.TensorDiff, cmp.TensorDiff]:
        d = run.first.get("diff")
        return (
            cmp.loss_diff(reference.losses, run.losses),
            cmp.tensor_diff(d, "param"),
            cmp.tensor_diff(d, "buffer"),
        )

    return cmp.Noise.measure(*diffs(perturbed), *diffs(repeat))
