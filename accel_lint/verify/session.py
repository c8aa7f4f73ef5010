"""One verification: the runs in order, and who judges what.

1. the original, recorded (its final state is the reference, its initial
   weights are kept for alignment). When it stops with an error and some fixes
   declare that the original raises, the original with those fixes becomes the
   base every other run starts from, and those fixes are judged on it;
2. at once (independent, `jobs` at a time): the original again (are two
   identical runs bitwise equal?), the original perturbed (another thread
   count and every weight moved by one ulp: the noise floor), the fixed script
   with every fix, the probe (a short run of the original for the runtime
   second opinion) and, when a fix is judged statistically, both scripts with
   a few seed offsets;
3. when a fix fails its class on the combined run and several rules' fixes
   were applied, each failing rule's fixes alone (`isolate`);
4. timing (`speed`): each rule's fixes alone and all of them, against the
   original, one run at a time.

Runs are forked by the warm interpreter when there is one (`warm`). Everything
a fix's rule declares (launcher, accelerator, invariant, causes, the torch
version from which it changes nothing) is read from its `Verification`:
nothing here depends on which rule it is.
"""

from __future__ import annotations

import re
import shutil
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path

from accel_lint.rule import Equivalence
from accel_lint.verify import compare as cmp
from accel_lint.verify import processes, speed
from accel_lint.verify.invariants import judge_for
from accel_lint.verify.isolate import fixed_failed, isolate, problem_of
from accel_lint.verify.judge import Judge
from accel_lint.verify.launch import Progress, RunResult, RunSpec, Target, run_all
from accel_lint.verify.opinion import StaticFinding, second_opinion
from accel_lint.verify.plan import Options, Planner
from accel_lint.verify.protocol import PROBE
from accel_lint.verify.report import FixItem, Report, RunSeries
from accel_lint.verify.warm import WarmInterpreter

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
        server: WarmInterpreter | None = None,
        findings: Sequence[StaticFinding] = (),
        code_of: Callable[[str], str | None] = lambda name: None,
        target_torch: tuple[int, int] | None = None,
    ) -> None:
        self.target = target
        self.options = options
        self.progress = progress
        self.fixes = list(fixes)
        self.planner = Planner(original, fixed_with, self.fixes, options)
        self.report = Report(display_name, options.steps, options.repeat, self.fixes)
        self.scratch = Path(".")
        self.executor = executor
        self.server = server
        self.findings = list(findings)
        self.code_of = code_of
        self.target_torch = target_torch

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
            results = self.executor(specs, jobs)
        else:
            results = run_all(
                self.target, specs, self.scratch, jobs, self.progress, server=self.server
            )
        self.report.runs += [series(r) for r in results]
        return results

    def _plan_total(self, device: str, pending: Sequence[FixItem], extra: int = 0) -> None:
        statistical = any(f.equivalence is Equivalence.STATISTICAL for f in pending)
        equivalence = 5 + (2 * (self.options.seeds - 1) if statistical else 0)
        timing = speed.plan(pending, device).runs_per_round * self.options.repeat
        self.progress.total(equivalence + timing + extra)

    # -- verification -------------------------------------------------------------------

    def _verify(self) -> None:
        planner = self.planner
        pending = list(self.fixes)
        self._plan_total("cpu", pending)
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
        self.report.torch = str(reference.first.get("torch_version", ""))
        if reference.device == "cuda" and self.options.nproc is None:
            planner.nproc = max(1, int(reference.first.get("device_count", 1)))
        self._plan_total(reference.device, pending, len(self.report.runs) - 1)
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
            planner.spec("original (runtime second opinion)", None, mode=PROBE, role="probe"),
        ]
        offsets = range(1, self.options.seeds) if statistical else range(0)
        specs += [planner.spec(f"original (seed +{k})", None, seed_offset=k) for k in offsets]
        specs += [planner.spec(f"fixed (seed +{k})", codes, seed_offset=k) for k in offsets]
        results = self.runs(specs)
        repeat, perturbed, combined, probe = results[:4]
        seeded_original = [reference, *results[4 : 4 + len(offsets)]]
        combined_seeded = [combined, *results[4 + len(offsets) :]]
        self.report.opinion = second_opinion(
            self.findings, probe, reference, self.target.script, self.code_of
        )
        for run in (repeat, perturbed, *seeded_original[1:]):
            if not run.ok:
                self._original_failed(run, pending)
                return
        noise = _noise(reference, repeat, perturbed)
        self.report.noise = noise
        self.report.noise_series = [abs(a - b) for a, b in zip(reference.losses, perturbed.losses)]
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
        self._installed_only(pending)
        if self.report.problem is None and self.options.repeat > 0:
            timing_plan = speed.plan(pending, reference.device)
            speed.time_fixes(pending, planner, lambda s: self.runs(s, 1), self.report, timing_plan)

    def _installed_only(self, items: Sequence[FixItem]) -> None:
        """A fix that changes nothing on the installed torch proves nothing about the
        older torch the project targets: say that the proof holds for this one only."""
        installed = _version(self.report.torch)
        target = self.target_torch
        for item in items:
            since = item.verification.noop_since
            if since is None or installed is None or item.verdict is None:
                continue
            if installed >= since and target is not None and target < since:
                item.verdict.notes.append(
                    f"holds for the installed torch {self.report.torch} only: from torch "
                    f"{since[0]}.{since[1]} on this fix changes nothing, and the project "
                    f"targets torch {target[0]}.{target[1]}, where it does"
                )

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


def series(run: RunResult) -> RunSeries:
    records = run.records
    first = records[0] if records else None
    times = first.get("step_times", []) if first else []
    peaks = [r["memory"]["device_peak_bytes"] for r in records]
    return RunSeries(
        name=run.spec.name,
        role=run.spec.role,
        variant=run.spec.variant,
        status=run.status,
        seconds=run.seconds,
        steps=run.steps,
        losses=run.losses,
        step_times=[t - times[0] for t in times],
        peak_memory_bytes=sum(int(r["memory"]["host_peak_bytes"]) for r in records) or None,
        device_peak_bytes=(
            sum(int(p) for p in peaks if p) if peaks and all(p is not None for p in peaks) else None
        ),
    )


def _version(text: str) -> tuple[int, int] | None:
    match = re.match(r"(\d+)\.(\d+)", text)
    return (int(match.group(1)), int(match.group(2))) if match else None


def _noise(reference: RunResult, repeat: RunResult, perturbed: RunResult) -> cmp.Noise:
    def diffs(run: RunResult) -> tuple[cmp.LossDiff, cmp.TensorDiff, cmp.TensorDiff]:
        d = run.first.get("diff")
        return (
            cmp.loss_diff(reference.losses, run.losses),
            cmp.tensor_diff(d, "param"),
            cmp.tensor_diff(d, "buffer"),
        )

    return cmp.Noise.measure(*diffs(perturbed), *diffs(repeat))
