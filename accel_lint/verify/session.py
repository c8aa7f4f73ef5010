"""One verification: plan the runs, judge every applied fix, isolate the culprit,
time both scripts.

The runs, in order:
1. the original, recorded (its final state is the reference, its initial
   weights are kept for alignment);
2. at once (independent, `jobs` at a time): the original again (are two
   identical runs bitwise equal?), the original perturbed (another thread
   count and every weight moved by one ulp: the noise floor), the fixed script
   with every fix, and, when a fix is judged statistically, both scripts with
   a few seed offsets;
3. when a fix fails its class on the combined run and several rules' fixes
   were applied, each failing rule's fixes alone, to name the one that broke
   equivalence;
4. timing: original and fixed alternating, `repeat` times each, step clock only.
"""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path

from accel_lint.verify import compare as cmp
from accel_lint.verify.launch import (
    Launch,
    Progress,
    RunResult,
    RunSpec,
    Target,
    kill_all,
    run_all,
)
from accel_lint.verify.timing import RunRate, Side, Speed, run_rate
from accel_lint.verify.timing import compare as compare_speed

# Fixes after which the script must be launched with torchrun (RULES.md ACL401).
TORCHRUN_AFTER_FIX = frozenset({"ACL401"})
# Fixes whose hazard is a parameter left without gradient (optimizer skips None grads).
ZERO_GRAD_FIXES = frozenset({"ACL301", "ACL302"})
# Fixes whose speed benefit needs an accelerator: on a CPU-only machine the
# verifier says so instead of printing a ratio that proves nothing.
NEEDS_ACCELERATOR = {
    "ACL102": "pinned memory only speeds up copies from the host to an accelerator",
    "ACL103": "non-blocking copies only overlap with compute on an accelerator",
    "ACL202": "the cuDNN autotuner exists only on CUDA",
    "ACL309": "fused optimizers are CUDA kernels",
    "ACL401": "DistributedDataParallel beats DataParallel with one process per GPU; on CPU, "
    "DataParallel is a plain call and DDP adds a second process and gloo all-reduces",
    "ACL402": "DataParallel runs its replicas in threads only on several CUDA devices",
}
BUSY_CORES = 0.5  # other processes' load during a timing run worth a note
_STRICTNESS = {cmp.EXACT: 0, cmp.CLOSE: 1, cmp.STATISTICAL: 2}


@dataclass
class FixItem:
    code: str
    message: str
    cls: str  # the equivalence class: the rule's, or the finding's own
    verdict: cmp.Verdict | None = None


@dataclass(frozen=True)
class Options:
    steps: int = 20
    repeat: int = 3
    warmup: int | None = None
    timeout: float = 600.0
    nproc: int | None = None
    torchrun: bool = False  # the original itself is launched with torchrun
    threads: int = 1
    seeds: int = 3
    jobs: int = 2

    @property
    def warmup_steps(self) -> int:
        return self.warmup if self.warmup is not None else max(1, min(5, self.steps // 4))


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
        """SPEC.md: 0 every fix holds, 1 one does not, 2 a run failed. A fix that could
        not be verified here is not a pass either (2)."""
        if self.problem is not None:
            return 2
        if self.combined_fails or any(
            f.verdict is not None and f.verdict.verdict == cmp.FAILS for f in self.fixes
        ):
            return 1
        if any(f.verdict is None or f.verdict.verdict != cmp.HOLDS for f in self.fixes):
            return 2
        return 0


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
    ) -> None:
        self.target = target
        self.original = original
        self.fixed_with = fixed_with
        self.fixes = list(fixes)
        self.options = options
        self.progress = progress
        self.report = Report(display_name, options.steps, options.repeat, self.fixes)
        self.scratch = Path(".")
        self.codes = tuple(dict.fromkeys(f.code for f in self.fixes))
        self.reference: RunResult | None = None
        self.noise: cmp.Noise | None = None
        self.seeded_original: list[RunResult] = []
        self.combined: RunResult | None = None
        self.nproc = options.nproc or 2
        self._texts: dict[frozenset[str], str] = {}

    def run(self) -> Report:
        self.scratch = Path(tempfile.mkdtemp(prefix="accel-lint-verify-"))
        try:
            if self.fixes:
                self._verify()
        finally:
            kill_all()
            shutil.rmtree(self.scratch, ignore_errors=True)
        return self.report

    # -- runs -------------------------------------------------------------------------

    def _launch(self, codes: frozenset[str]) -> Launch:
        torchrun = self.options.torchrun or bool(codes & TORCHRUN_AFTER_FIX)
        return Launch(torchrun=torchrun, nproc=self.nproc)

    def _spec(self, name: str, codes: frozenset[str] | None, **changes: object) -> RunSpec:
        if codes is None:
            text = self.original
        else:
            if codes not in self._texts:
                self._texts[codes] = self.fixed_with(codes)
            text = self._texts[codes]
        launch = self._launch(frozenset() if codes is None else codes)
        spec = RunSpec(name, text, launch=launch, threads=self.options.threads)
        reference = self.reference
        if reference is not None and codes is not None:
            spec = replace(spec, reference=reference.state_file, align_init=reference.init_dir)
        return replace(spec, **changes)  # type: ignore[arg-type]

    def _runs(self, specs: Sequence[RunSpec], jobs: int | None = None) -> list[RunResult]:
        return run_all(self.target, specs, self.scratch, jobs or self.options.jobs, self.progress)

    # -- verification -----------------------------------------------------------------

    def _verify(self) -> None:
        everything = frozenset(self.codes)
        reference = self._runs([self._spec("original", None, save_state=True, dump_init=True)])[0]
        self.report.device = reference.device
        if not reference.ok:
            self._original_failed(reference)
            return
        self.reference = reference
        if reference.device == "cuda" and self.options.nproc is None:
            self.nproc = max(1, int(reference.first.get("device_count", 1)))
        statistical = any(f.cls == cmp.STATISTICAL for f in self.fixes)
        state = reference.state_file
        other_threads = 2 if self.options.threads == 1 else 1
        specs = [
            self._spec("original (repeat)", None, reference=state),
            self._spec(
                f"original (noise: {other_threads} threads, weights moved 1 ulp)",
                None,
                reference=state,
                threads=other_threads,
                perturb=True,
            ),
            self._spec("fixed", everything),
        ]
        offsets = range(1, self.options.seeds) if statistical else range(0)
        specs += [self._spec(f"original (seed +{k})", None, seed_offset=k) for k in offsets]
        specs += [self._spec(f"fixed (seed +{k})", everything, seed_offset=k) for k in offsets]
        results = self._runs(specs)
        repeat, perturbed, combined = results[:3]
        self.combined = combined
        self.seeded_original = [reference, *results[3 : 3 + len(offsets)]]
        combined_seeded = [combined, *results[3 + len(offsets) :]]
        for run in (repeat, perturbed, *self.seeded_original[1:]):
            if not run.ok:
                self._original_failed(run)
                return
        self.noise = self._noise(reference, repeat, perturbed)
        self.report.noise = self.noise
        if not self.noise.deterministic:
            self.report.notes.append(
                "the original is not deterministic: two identical runs differ (losses by up to "
                f"{cmp._g(self.noise.nondeterminism)}); exact fixes are judged against that noise"
            )
        if not all(r.ok for r in combined_seeded):
            self._fixed_failed(combined_seeded)
        else:
            for item in self.fixes:
                item.verdict = self._judge(item, combined, combined_seeded)
            self._isolate([f for f in self.fixes if not f.verdict or not f.verdict.holds])
        if self.report.problem is None and self.options.repeat > 0:
            self._time(everything)

    def _noise(self, reference: RunResult, repeat: RunResult, perturbed: RunResult) -> cmp.Noise:
        def diffs(run: RunResult) -> tuple[cmp.LossDiff, cmp.TensorDiff, cmp.TensorDiff]:
            d = run.first.get("diff")
            return (
                cmp.loss_diff(reference.losses, run.losses),
                cmp.tensor_diff(d, "param"),
                cmp.tensor_diff(d, "buffer"),
            )

        return cmp.Noise.measure(*diffs(perturbed), *diffs(repeat))

    def _original_failed(self, run: RunResult) -> None:
        what = {
            "needs-cuda": "not verifiable here: the script needs CUDA and this machine has no "
            "CUDA device",
            "no-steps": "not verifiable: the original never stepped an optimizer, so there is "
            "nothing to compare (is training behind an option that the arguments after `--` "
            "should set?)",
            "timeout": f"not verifiable: the original {run.message}",
        }.get(run.status, f"not verifiable: the original script failed ({run.message})")
        for item in self.fixes:
            item.verdict = cmp.Verdict(cmp.NOT_VERIFIABLE, what)
        self.report.problem = Problem(
            run.spec.name, run.status, run.message or run.status, run.output
        )

    def _fixed_failed(self, runs: Sequence[RunResult]) -> None:
        """The fixed script failed where the original ran: find which rule's fixes
        break it by running each rule's fixes alone."""
        failed = next(r for r in runs if not r.ok)
        self.report.problem = Problem(
            failed.spec.name, failed.status, failed.message or failed.status, failed.output
        )
        if len(self.codes) == 1:
            for item in self.fixes:
                item.verdict = self._failed_run_verdict(failed)
            return
        alone = self._runs(
            [self._spec(f"fixed ({code} only)", frozenset({code})) for code in self.codes]
        )
        for code, run in zip(self.codes, alone):
            for item in self.fixes:
                if item.code != code:
                    continue
                if run.ok:
                    item.verdict = self._judge(item, run, [run])
                else:
                    item.verdict = self._failed_run_verdict(run)
        culprits = [code for code, run in zip(self.codes, alone) if not run.ok]
        if culprits:
            first = next(r for r in alone if not r.ok)
            self.report.problem = Problem(
                first.spec.name, first.status, first.message or first.status, first.output
            )

    def _failed_run_verdict(self, run: RunResult) -> cmp.Verdict:
        what = "timed out" if run.status == "timeout" else "failed"
        return cmp.Verdict(
            cmp.FAILS, f"the fixed script {what} where the original ran: {run.message}"
        )

    def _isolate(self, failing: list[FixItem]) -> None:
        """Several rules' fixes were applied and some fail together: judge each
        failing rule's fixes alone, which names the fix that broke equivalence."""
        if not failing or len(self.codes) < 2:
            return
        codes = list(dict.fromkeys(f.code for f in failing))
        specs: list[RunSpec] = []
        plan: list[tuple[str, int]] = []
        for code in codes:
            group = frozenset({code})
            items = [f for f in self.fixes if f.code == code]
            seeded = self._group_class(items) == cmp.STATISTICAL
            start = len(specs)
            specs.append(self._spec(f"fixed ({code} only)", group))
            if seeded:
                specs += [
                    self._spec(f"fixed ({code} only, seed +{k})", group, seed_offset=k)
                    for k in range(1, self.options.seeds)
                ]
            plan.append((code, start))
        results = self._runs(specs)
        held_alone = True
        for index, (code, start) in enumerate(plan):
            end = plan[index + 1][1] if index + 1 < len(plan) else len(results)
            runs = results[start:end]
            items = [f for f in self.fixes if f.code == code]
            if not all(r.ok for r in runs):
                failed = next(r for r in runs if not r.ok)
                self.report.problem = Problem(
                    failed.spec.name, failed.status, failed.message or failed.status, failed.output
                )
                for item in items:
                    item.verdict = self._failed_run_verdict(failed)
                held_alone = False
                continue
            group_class = self._group_class(items)
            for item in items:
                verdict = self._judge(item, runs[0], runs, cls=group_class)
                if group_class != item.cls:
                    verdict.notes.append(
                        f"judged as {group_class} together with the other {code} fix(es) "
                        "of this script"
                    )
                item.verdict = verdict
                held_alone = held_alone and verdict.holds
        if held_alone:
            self._check_combination()

    def _check_combination(self) -> None:
        """Every rule's fixes hold alone: the combined run must still hold the
        weakest class among them (an interaction would break it)."""
        classes = [f.cls for f in self.fixes if f.cls in _STRICTNESS]
        if not classes or any(f.cls == cmp.INTENDED for f in self.fixes):
            return
        weakest = max(classes, key=lambda c: _STRICTNESS[c])
        if weakest == cmp.STATISTICAL:
            return  # the combined seeded runs were judged with the statistical fixes
        if self.combined is None:
            return
        verdict = self._judge(FixItem("", "", weakest), self.combined, [self.combined])
        if not verdict.holds:
            self.report.combined_fails = (
                f"the fixes hold one by one but not together: {verdict.reason}"
            )

    @staticmethod
    def _group_class(items: Sequence[FixItem]) -> str:
        ranked = [f.cls for f in items if f.cls in _STRICTNESS]
        if len(ranked) != len(items) or not ranked:
            return items[0].cls
        return max(ranked, key=lambda c: _STRICTNESS[c])

    def _judge(
        self,
        item: FixItem,
        run: RunResult,
        seeded: Sequence[RunResult],
        *,
        cls: str | None = None,
    ) -> cmp.Verdict:
        assert self.reference is not None and self.noise is not None
        reference, noise = self.reference, self.noise
        cls = cls or item.cls
        loss = cmp.loss_diff(reference.losses, run.losses)
        record = run.first
        diff = record.get("diff")
        init = record.get("init", [])
        aligned = any(e.get("aligned") for e in init)
        params = cmp.tensor_diff(diff, "param")
        # BatchNorm's running mean absorbs a removed conv bias (ACL201): compare
        # running means only when the parameter set is unchanged.
        exclude = [
            r["name"]
            for r in (diff or {}).get("tensors", [])
            if r["name"].endswith(".running_mean")
        ]
        buffers = cmp.tensor_diff(diff, "buffer", exclude if aligned and params.missing else ())
        if cls == cmp.EXACT and noise.deterministic:
            verdict = cmp.judge_exact(loss, params, buffers)
        elif cls in (cmp.EXACT, cmp.CLOSE):
            verdict = cmp.judge_close(loss, params, buffers, noise, aligned=aligned)
        elif cls == cmp.STATISTICAL:
            verdict = cmp.judge_statistical(_windows(self.seeded_original), _windows(seeded), loss)
            verdict.max_param_diff = params.max_abs
        elif cls == cmp.INTENDED:
            verdict = self._invariant(item.code, reference, run)
        else:
            verdict = cmp.Verdict(cmp.NOT_VERIFIABLE, f"unknown equivalence class {cls!r}")
        if verdict.max_param_diff is None and diff:
            verdict.max_param_diff = params.max_abs
        if aligned and params.missing and exclude:
            verdict.notes.append("BatchNorm running means absorb the removed biases: not compared")
        if verdict.verdict == cmp.FAILS and run.ok:
            cause = self._cause(item, run, loss)
            if cause:
                verdict.reason = f"{verdict.reason}; cause: {cause}"
        return verdict

    def _invariant(self, code: str, reference: RunResult, run: RunResult) -> cmp.Verdict:
        if code == "ACL404":
            return cmp.judge_epoch_reshuffle(
                reference.records, run.records, reference.losses, run.losses
            )
        if code == "ACL403":
            return cmp.judge_rank0_save(
                reference.records, run.records, reference.losses, run.losses
            )
        return cmp.Verdict(
            cmp.NOT_VERIFIABLE, f"no invariant is known for {code}'s intended change"
        )

    def _cause(self, item: FixItem, run: RunResult, loss: cmp.LossDiff) -> str | None:
        assert self.reference is not None
        if item.code in ZERO_GRAD_FIXES:
            cause = cmp.zero_grad_cause(self.reference.first.get("grads"))
            if cause:
                return cause
        init = run.first.get("init", [])
        return cmp.init_cause(init) or cmp.first_pass_cause(loss, init)

    # -- timing -----------------------------------------------------------------------

    def _time(self, codes: frozenset[str]) -> None:
        """Alternate original and fixed, one run at a time, step clock only."""
        warmup = self.options.warmup_steps
        sides: dict[str, list[RunRate]] = {"original": [], "fixed": []}
        device_peaks: dict[str, list[int]] = {"original": [], "fixed": []}
        others: list[float] = []
        for i in range(self.options.repeat):
            for side, side_codes in (("original", None), ("fixed", codes)):
                name = f"timing {i + 1}/{self.options.repeat}: {side}"
                run = self._runs(
                    [self._spec(name, side_codes, mode="time", reference=None, align_init=None)],
                    jobs=1,
                )[0]
                if not run.ok:
                    self.report.problem = Problem(
                        name, run.status, run.message or run.status, run.output
                    )
                    return
                record = run.first
                rate = run_rate(
                    record.get("step_times", []),
                    warmup,
                    peak_memory_bytes=sum(int(r["memory"]["host_peak_bytes"]) for r in run.records),
                    first_step_s=record.get("first_step_s"),
                )
                if rate is None:
                    self.report.notes.append(
                        f"timing skipped: {run.steps} steps leave no steady state after "
                        f"{warmup} warm-up "
                        "steps (raise --steps)"
                    )
                    return
                sides[side].append(rate)
                peak = [r["memory"].get("device_peak_bytes") for r in run.records]
                if all(p is not None for p in peak):
                    device_peaks[side].append(sum(int(p) for p in peak))
                if run.other_load is not None:
                    others.append(run.other_load)
        original, fixed = Side(tuple(sides["original"])), Side(tuple(sides["fixed"]))
        timing = Timing(
            original,
            fixed,
            compare_speed(original, fixed),
            max(device_peaks["original"], default=None),
            max(device_peaks["fixed"], default=None),
        )
        if others and max(others) > BUSY_CORES:
            timing.notes.append(
                f"other processes kept up to {max(others):.1f} of {_cpu_count()} cores busy during "
                "timing: the rates are noisier than on a quiet machine"
            )
        if self.report.device != "cuda":
            absent = [c for c in self.codes if c in NEEDS_ACCELERATOR]
            for code in absent:
                timing.notes.append(
                    f"{code}: not measurable on this machine: {NEEDS_ACCELERATOR[code]}"
                )
            timing.applicable = len(absent) < len(self.codes)
        if timing.speed.claim == "noise unknown":
            timing.notes.append("one timing repeat cannot show the noise: use --repeat 2 or more")
        self.report.timing = timing


def _windows(runs: Sequence[RunResult]) -> list[float]:
    return [w for w in (cmp.window_mean(r.losses) for r in runs) if w is not None]


def _cpu_count() -> int:
    import os

    return os.cpu_count() or 1
