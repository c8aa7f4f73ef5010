"""Judging one fix: by its equivalence class against the reference run and the
noise floor, or by its invariant; and naming the cause of a failure when the
fix's rule declares one the verifier can diagnose."""

from __future__ import annotations

from collections.abc import Sequence

from accel_lint.rule import Cause, Equivalence
from accel_lint.verify import compare as cmp
from accel_lint.verify.invariants import judge_for
from accel_lint.verify.launch import RunResult
from accel_lint.verify.report import FixItem

STRICTNESS = {Equivalence.EXACT: 0, Equivalence.CLOSE: 1, Equivalence.STATISTICAL: 2}


class Judge:
    def __init__(
        self, reference: RunResult, noise: cmp.Noise, seeded_original: Sequence[RunResult]
    ) -> None:
        self.reference = reference
        self.noise = noise
        self.seeded_original = list(seeded_original)

    def judge(
        self,
        item: FixItem,
        run: RunResult,
        seeded: Sequence[RunResult],
        *,
        cls: Equivalence | None = None,
    ) -> cmp.Verdict:
        reference, noise = self.reference, self.noise
        cls = cls or item.equivalence
        loss = cmp.loss_diff(reference.losses, run.losses)
        record = run.first
        diff = record.get("diff")
        init = record.get("init", [])
        aligned = any(e.get("aligned") for e in init)
        params = cmp.tensor_diff(diff, "param")
        # BatchNorm's running mean absorbs a removed conv bias: compare running
        # means only when the parameter set is unchanged
        rows = diff["tensors"] if diff else []
        exclude = [r["name"] for r in rows if r["name"].endswith(".running_mean")]
        buffers = cmp.tensor_diff(diff, "buffer", exclude if aligned and params.missing else ())
        if cls is Equivalence.EXACT and noise.deterministic:
            verdict = cmp.judge_exact(loss, params, buffers)
        elif cls in (Equivalence.EXACT, Equivalence.CLOSE):
            verdict = cmp.judge_close(loss, params, buffers, noise, aligned=aligned)
        elif cls is Equivalence.STATISTICAL:
            verdict = cmp.judge_statistical(windows(self.seeded_original), windows(seeded), loss)
            verdict.max_param_diff = params.max_abs
        else:
            verdict = self.intended(item, reference, run)
        if verdict.max_param_diff is None and diff:
            verdict.max_param_diff = params.max_abs
        if aligned and params.missing and exclude:
            verdict.notes.append("BatchNorm running means absorb the removed biases: not compared")
        syncs = ddp_sync_note(reference, run)
        if syncs:
            verdict.notes.append(syncs)
        if verdict.verdict == cmp.FAILS and run.ok:
            cause = self.cause(item, run, loss)
            if cause:
                verdict.reason = f"{verdict.reason}; cause: {cause}"
        return verdict

    @staticmethod
    def intended(item: FixItem, original: RunResult, fixed: RunResult) -> cmp.Verdict:
        invariant = item.verification.invariant
        judge = judge_for(invariant) if invariant is not None else None
        if judge is None:
            return cmp.Verdict(
                cmp.NOT_VERIFIABLE, f"no judge is known for the invariant {invariant}"
            )
        return judge.judge(original, fixed)

    def cause(self, item: FixItem, run: RunResult, loss: cmp.LossDiff) -> str | None:
        if Cause.PARAMS_WITHOUT_GRAD in item.verification.causes:
            cause = cmp.zero_grad_cause(self.reference.first.get("grads"))
            if cause:
                return cause
        init = run.first.get("init", [])
        return cmp.init_cause(init) or cmp.first_pass_cause(loss, init)


def ddp_sync_note(original: RunResult, fixed: RunResult) -> str | None:
    """How often DDP all-reduced the gradients, when the fix changed it (rank 0's
    count; every rank all-reduces together)."""
    before, after = original.first.get("ddp_syncs"), fixed.first.get("ddp_syncs")
    if before is None or after is None or before == after:
        return None
    steps_before, steps_after = original.first["steps"], fixed.first["steps"]
    if not steps_before or not steps_after:
        return f"DDP gradient all-reduces: {before} -> {after}"
    return (
        f"DDP gradient all-reduces per optimizer step: {before / steps_before:.3g} -> "
        f"{after / steps_after:.3g} ({before} -> {after} in {steps_after} steps)"
    )


def group_class(items: Sequence[FixItem]) -> Equivalence:
    """The weakest class among one rule's fixes (judged together when run alone)."""
    ranked = [f.equivalence for f in items if f.equivalence in STRICTNESS]
    if len(ranked) != len(items) or not ranked:
        return items[0].equivalence
    return max(ranked, key=lambda c: STRICTNESS[c])


def windows(runs: Sequence[RunResult]) -> list[float]:
    return [w for w in (cmp.window_mean(r.losses) for r in runs) if w is not None]
