"""One verification: the runs in order, and who judges what.

1. the original, recorded (its final state is the reference, its initial
   weights are kept for alignment). When it stops with an error and some fixes
   declare that the original raises, the original with those fixes becomes the
   base every other run starts from, and those fixes are judged on it;
2. at once (independent, `jobs` at a time): the original again, as the probe
   of the runtime second opinion (are two identical runs bitwise equal?), the
   original perturbed (another thread count and every weight moved by one ulp:
   the noise floor), the fixed script with every fix, the fixed script with
   only the exact fixes when others are applied too (so that they can be held
   to bitwise equality), and, when a fix is judged statistically, both scripts
   with a few seed offsets;
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
        self.total = 0

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
        self._planned(specs)
        if self.executor is not None:
            results = self.executor(specs, jobs)
        else:
            results = run_all(
                self.target, specs, self.scratch, jobs, self.progress, server=self.server
            )
        self.report.runs += [series(r) for r in results]
        for result in results:
            for write in result.refused_writes:
                self.report.refuse(result.spec.name, write["path"], write["resolves_to"])
        return results

    def _planned(self, specs: Sequence[RunSpec]) -> None:
        """Runs no plan foresaw (isolating a culprit, repairing the original) join
        the total that "run k of N" shows."""
        unplanned = sum(1 for spec in specs if spec.role in ("isolation", "repair"))
        if unplanned:
            self.total += unplanned
            self.progress.total(self.total)

    def _plan_total(self, device: str, pending: Sequence[FixItem], *, started: bool) -> None:
        """The runs still to come: the equivalence batch (unless under way) and timing."""
        statistical = any(f.equivalence is Equivalence.STATISTICAL for f in pending)
        batch = (
            3 + bool(exact_group(pending)) + (2 * (self.options.seeds - 1) if statistical else 0)
        )
        timing = speed.plan(pending, device).runs_per_round * self.options.repeat
        self.total = len(self.report.runs) + (0 if started else 1) + batch + timing
        self.progress.total(self.total)

    # -- verification -------------------------------------------------------------------

    def _verify(self) -> None:
        planner = self.planner
        pending = list(self.fixes)
        self._plan_total("cpu", pending, started=False)
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
        self._plan_total(reference.device, pending, started=True)
        codes = frozenset(f.code for f in pending)
        statistical = any(f.equivalence is Equivalence.STATISTICAL for f in pending)
        exact = exact_group(pending)
        state = reference.state_file
        other_threads = 2 if self.options.threads == 1 else 1
        specs = [
            # the repeat that shows whether two identical runs agree is also the probe
            planner.spec(
                "original (repeat, runtime second opinion)",
                None,
                reference=state,
                mode=PROBE,
                role="probe",
            ),
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
        if exact:
            specs.append(planner.spec(f"fixed (exact fixes: {'+'.join(sorted(exact))})", exact))
        offsets = range(1, self.options.seeds) if statistical else range(0)
        specs += [planner.spec(f"original (seed +{k})", None, seed_offset=k) for k in offsets]
        specs += [planner.spec(f"fixed (seed +{k})", codes, seed_offset=k) for k in offsets]
        results = self.runs(specs)
        repeat, perturbed, combined = results[:3]
        exact_run = results[3] if exact else None
        rest = results[4 if exact else 3 :]
        seeded_original = [reference, *rest[: len(offsets)]]
        combined_seeded = [combined, *rest[len(offsets) :]]
        self.report.opinion = second_opinion(
            self.findings, repeat, reference, self.target.script, self.code_of
        )
        for run in (repeat, perturbed, *seeded_original[1:]):
            if not run.ok:
                self._original_failed(run, pending)
                return
        noise = _noise(reference, repeat, perturbed)
        if not noise.deterministic:
            # the probe's own hooks must not be what made it differ: ask a plain repeat
            plain = self.runs([planner.spec("original (repeat)", None, reference=state)])[0]
            if plain.ok:
                noise = _noise(reference, plain, perturbed)
        self.report.noise = noise
        self.report.noise_series = [abs(a - b) for a, b in zip(reference.losses, perturbed.losses)]
        if not noise.deterministic:
            self.report.notes.append(
                "the original is not deterministic: two identical runs differ (losses by up to "
                f"{cmp.fmt(noise.nondeterminism)}); exact fixes are judged against that noise"
            )
        judge = Judge(reference, noise, seeded_original)
        runs_ok = all(r.ok for r in combined_seeded) and (exact_run is None or exact_run.ok)
        if not runs_ok:
            failed = [*combined_seeded, *([exact_run] if exact_run else [])]
            fixed_failed(failed, pending, planner, judge, self.runs, self.report)
        else:
            for item in pending:
                # exact fixes are judged where only exact fixes were applied: a close
                # fix beside them would make every loss merely close
                run = exact_run if exact_run is not None and item.code in exact else combined
                item.verdict = judge.judge(item, run, combined_seeded)
            failing = [f for f in pending if not f.verdict or not f.verdict.holds]
            isolate(failing, pending, planner, judge, self.runs, self.report, combined)
        self._installed_only(pending)
        if self.report.problem is None and self.options.repeat > 0:
            timing_plan = speed.plan(pending, reference.device)
            speed.time_fixes(
                pending,
                planner,
                lambda s: self.runs(s, len(s)),
                self.report,
                timing_plan,
                paired=self._pairable(reference, combined, timing_plan),
            )

    def _pairable(self, reference: RunResult, fixed: RunResult, timing_plan: speed.Plan) -> bool:
        """Timing runs may go two at a time, each on a core of its own: on a CPU with
        a core per thread of both, when `--jobs` allows two, and when neither side
        starts processes of its own (DataLoader workers or torchrun ranks, which
        need the cores the other run would take)."""
        options = self.options
        if reference.device != "cpu" or options.jobs < 2:
            return False
        if len(speed.available_cores()) < 2 * options.threads:
            return False
        if any(self.planner.launch(codes).torchrun for _, codes in timing_plan.variants):
            return False
        loaders = [
            lo for run in (reference, fixed) for r in run.records for lo in r.get("loaders", [])
        ]
        return all(lo["num_workers"] == 0 for lo in loaders)

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
                    role="repair",
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


def exact_group(items: Sequence[FixItem]) -> frozenset[str]:
    """The rules all of whose fixes are exact, when other rules' fixes are applied
    too: run together on their own, they can be held to bitwise equality."""
    codes = {f.code for f in items}
    exact = {
        code
        for code in codes
        if all(f.equivalence is Equivalence.EXACT for f in items if f.code == code)
    }
    return frozenset(exact) if exact and exact != codes else frozenset()


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
        cpu_seconds=run.cpu_seconds,
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
