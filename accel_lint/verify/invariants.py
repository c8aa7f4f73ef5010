"""Judges for intended changes: one per `Invariant`, each a pure function of what
the original's and the fixed script's processes recorded.

A rule whose fix deliberately changes behaviour names its invariant in its
`Verification`; the session looks the judge up here and never asks which rule
it is judging. A judge whose invariant is about a script that cannot run as it
is (`original_fails`) receives the original's failed run.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from accel_lint.rule import Invariant
from accel_lint.verify.compare import FAILS, HOLDS, NOT_VERIFIABLE, Verdict, divergence, loss_diff
from accel_lint.verify.launch import RunResult
from accel_lint.verify.protocol import Record


@dataclass(frozen=True)
class InvariantJudge:
    judge: Callable[[RunResult, RunResult], Verdict]
    original_fails: bool = False  # the original is expected to stop with an error


def judge_epoch_reshuffle(original: RunResult, fixed: RunResult) -> Verdict:
    return epoch_reshuffle(original.records, fixed.records, original.losses, fixed.losses)


def epoch_reshuffle(
    original: Sequence[Record],
    fixed: Sequence[Record],
    original_losses: Sequence[float],
    fixed_losses: Sequence[float],
) -> Verdict:
    """Epoch 0 sees the original's order (so the losses up to the second epoch are
    bitwise equal); each later epoch sees a new order, where the original repeats
    epoch 0's. `original`/`fixed`: each rank's record."""
    loss = loss_diff(original_losses, fixed_losses)
    numbers = (loss.max_abs, None)
    checked_epochs = 0
    boundary: int | None = None
    for rank_a, rank_b in zip(original, fixed):
        orders_a = [s for s in rank_a.get("samplers", []) if s["sampler"] == 0]
        orders_b = [s for s in rank_b.get("samplers", []) if s["sampler"] == 0]
        if not orders_a or not orders_b:
            return Verdict(
                NOT_VERIFIABLE, "no DistributedSampler was iterated before the stop", *numbers
            )
        if orders_a[0]["order"] != orders_b[0]["order"]:
            return Verdict(FAILS, "epoch 0 sees a different order than the original's", *numbers)
        seen = {orders_b[0]["order"]}
        for later in orders_b[1:]:
            if later["order"] in seen:
                return Verdict(
                    FAILS,
                    f"epoch {len(seen)} repeats an earlier epoch's order: "
                    "the sampler is not reshuffled",
                    *numbers,
                )
            seen.add(later["order"])
        checked_epochs = max(checked_epochs, len(orders_b) - 1)
        if len(orders_b) > 1:
            edge = int(orders_b[1]["backward"])
            boundary = edge if boundary is None else min(boundary, edge)
    if checked_epochs == 0 or boundary is None:
        return Verdict(
            NOT_VERIFIABLE,
            "the run stopped inside epoch 0, so no reshuffled epoch was seen: "
            "raise --steps past one epoch",
            *numbers,
        )
    first_epoch = loss_diff(original_losses[:boundary], fixed_losses[:boundary])
    if not first_epoch.equal:
        return Verdict(
            FAILS, f"epoch 0 should be unchanged, but its {divergence(first_epoch)}", *numbers
        )
    repeats = all(
        len({s["order"] for s in r.get("samplers", []) if s["sampler"] == 0}) == 1 for r in original
    )
    notes = [
        f"epoch 0 bitwise equal ({boundary} backward passes); "
        f"{checked_epochs} later epoch(s) reshuffled"
    ]
    if repeats:
        notes.append("the original repeated epoch 0's order")
    return Verdict(HOLDS, None, *numbers, notes=notes)


def _saves_by_file(records: Sequence[Record]) -> dict[tuple[str, int], dict[int, Any]]:
    """(path, step) -> rank -> the save event."""
    table: dict[tuple[str, int], dict[int, Any]] = {}
    for r in records:
        rank = int(r.get("rank") or 0)
        for s in r.get("saves", []):
            table.setdefault((s["path"], int(s["step"])), {})[rank] = s
    return table


def judge_rank0_save(original: RunResult, fixed: RunResult) -> Verdict:
    return rank0_save(original.records, fixed.records, original.losses, fixed.losses)


def rank0_save(
    original: Sequence[Record],
    fixed: Sequence[Record],
    original_losses: Sequence[float],
    fixed_losses: Sequence[float],
) -> Verdict:
    """Each file the original saved is written once, by rank 0, with the content the
    original's rank 0 wrote; training itself is unchanged."""
    loss = loss_diff(original_losses, fixed_losses)
    numbers = (loss.max_abs, None)
    before, after = _saves_by_file(original), _saves_by_file(fixed)
    if not before:
        return Verdict(
            NOT_VERIFIABLE,
            "the original saved nothing before the stop: raise --steps past the first save",
            *numbers,
        )
    for (path, step), writers in sorted(before.items()):
        written = after.get((path, step))
        if not written:
            return Verdict(
                FAILS,
                f"{path} (saved after step {step} by the original) is no longer written",
                *numbers,
            )
        if set(written) != {0}:
            ranks = ", ".join(str(r) for r in sorted(written))
            return Verdict(
                FAILS, f"{path} is still written by ranks {ranks} after step {step}", *numbers
            )
        if 0 in writers and written[0]["content"] != writers[0]["content"]:
            return Verdict(
                FAILS,
                f"{path} saved after step {step} has other content "
                "than the original's rank 0 wrote",
                *numbers,
            )
    if not loss.equal:
        return Verdict(FAILS, f"training changed: {divergence(loss)}", *numbers)
    most = max(len(w) for w in before.values())
    return Verdict(
        HOLDS,
        None,
        *numbers,
        notes=[
            f"{len(before)} save(s) written once by rank 0 with the original's content "
            f"(the original wrote each {most}x)"
        ],
    )


def judge_original_raises(original: RunResult, fixed: RunResult) -> Verdict:
    """The original stops with an error before its stop; the fixed script runs
    to the stop."""
    error = original.error
    if original.ok or error is None:
        return Verdict(
            NOT_VERIFIABLE,
            "the original did not raise before the stop, so the fix's intended change was "
            "not exercised here",
        )
    raised = f"{error['type']}: {_first_line(str(error['message']))}"
    if not fixed.ok:
        return Verdict(
            FAILS, f"the original raised {raised}; the fixed script fails too: {fixed.message}"
        )
    return Verdict(
        HOLDS,
        None,
        notes=[f"the original raised {raised}; the fixed script ran {fixed.steps} steps"],
    )


def _first_line(text: str, limit: int = 160) -> str:
    line = text.strip().splitlines()[0] if text.strip() else ""
    return line if len(line) <= limit else line[: limit - 3] + "..."


def judge_bare_checkpoint(original: RunResult, fixed: RunResult) -> Verdict:
    return bare_checkpoint(original.records, fixed.records, original.losses, fixed.losses)


def bare_checkpoint(
    original: Sequence[Record],
    fixed: Sequence[Record],
    original_losses: Sequence[float],
    fixed_losses: Sequence[float],
) -> Verdict:
    """Every state dict the fixed script saves loads into the bare model with
    strict=True, holds the tensors the original saved under the same names (wrapper
    prefixes aside), and training itself is unchanged."""
    loss = loss_diff(original_losses, fixed_losses)
    numbers = (loss.max_abs, None)
    before, after = _saves_by_file(original), _saves_by_file(fixed)
    dicts_before = sum(len(s["state_dicts"]) for w in before.values() for s in w.values())
    if not dicts_before:
        return Verdict(
            NOT_VERIFIABLE,
            "the original saved no state dict before the stop: raise --steps past the first save",
            *numbers,
        )
    checked = 0
    prefixed = 0
    models: set[str] = set()
    for (path, step), writers in sorted(before.items()):
        written = after.get((path, step))
        if not written:
            return Verdict(
                FAILS,
                f"{path} (saved after step {step} by the original) is no longer written",
                *numbers,
            )
        for rank, save in sorted(writers.items()):
            mine = written.get(rank)
            if mine is None:
                continue
            theirs, ours = save["state_dicts"], mine["state_dicts"]
            if len(theirs) != len(ours):
                return Verdict(
                    FAILS, f"{path} saved after step {step} holds other state dicts", *numbers
                )
            for a, b in zip(theirs, ours):
                prefixed += int(a["prefixed"])
                if b["loads_into"] is None:
                    return Verdict(
                        FAILS,
                        f"{path} saved after step {step} does not load into the bare model "
                        f"with strict=True ({b['prefixed']} of {b['keys']} keys carry a "
                        "wrapper prefix)",
                        *numbers,
                    )
                if a["values"] != b["values"]:
                    return Verdict(
                        FAILS,
                        f"{path} saved after step {step} holds other tensors than the "
                        "original's (names compared without wrapper prefixes)",
                        *numbers,
                    )
                models.add(b["loads_into"])
                checked += 1
    if not loss.equal:
        return Verdict(FAILS, f"training changed: {divergence(loss)}", *numbers)
    note = (
        f"{checked} saved state dict(s) load into {', '.join(sorted(models))} with "
        "strict=True and hold the original's tensors"
    )
    if prefixed:
        note += f"; the original's carried {prefixed} keys with a wrapper prefix"
    return Verdict(HOLDS, None, *numbers, notes=[note])


def judge_unscaled_clip(original: RunResult, fixed: RunResult) -> Verdict:
    return unscaled_clip(original.records, fixed.records, original.losses, fixed.losses)


# a power-of-two scale divides exactly: the norms agree to rounding of the norm itself
CLIP_REL = 1e-6


def unscaled_clip(
    original: Sequence[Record],
    fixed: Sequence[Record],
    original_losses: Sequence[float],
    fixed_losses: Sequence[float],
) -> Verdict:
    """Every clipping call of the fixed script sees gradients the scaler has
    unscaled: at the first call, the norm it sees is the original's divided by the
    scale the original's gradients carried."""
    loss = loss_diff(original_losses, fixed_losses)
    numbers = (loss.max_abs, None)
    clips_a = [c for r in original[:1] for c in r.get("clips", [])]
    clips_b = [c for r in fixed[:1] for c in r.get("clips", [])]
    if not clips_a or not clips_b:
        return Verdict(
            NOT_VERIFIABLE,
            "no gradient clipping happened before the stop: raise --steps",
            *numbers,
        )
    scaled = [c for c in clips_b if c["unscaled"] is False]
    if scaled:
        first = scaled[0]
        return Verdict(
            FAILS,
            f"clipping at step {first['step'] + 1} still sees gradients scaled by "
            f"{first['scale']:g}",
            *numbers,
        )
    if all(c["scale"] is None for c in clips_b):
        return Verdict(
            NOT_VERIFIABLE,
            "no enabled GradScaler scaled the gradients that were clipped "
            "(a disabled scaler: on this device the fix changes nothing)",
            *numbers,
        )
    a, b = clips_a[0], clips_b[0]
    notes = [f"{len(clips_b)} clipping call(s) saw unscaled gradients"]
    if a["unscaled"] is False and a["scale"]:
        true_norm = a["norm"] / a["scale"]
        if abs(b["norm"] - true_norm) > CLIP_REL * max(abs(true_norm), 1e-30):
            return Verdict(
                FAILS,
                f"the first clipping call sees a gradient norm of {b['norm']:.6g}, not the "
                f"original's {a['norm']:.6g} / {a['scale']:g} = {true_norm:.6g}",
                *numbers,
            )
        notes.append(
            f"the original clipped gradients scaled by {a['scale']:g} (norm {a['norm']:.4g}; "
            f"true norm {true_norm:.4g}, which the fixed script clips)"
        )
    first_loss = loss_diff(original_losses[:1], fixed_losses[:1])
    if not first_loss.equal:
        return Verdict(
            FAILS, "the first loss differs: the fix changed more than the clipping", *numbers
        )
    return Verdict(HOLDS, None, *numbers, notes=notes)


def judge_window_gradients(original: RunResult, fixed: RunResult) -> Verdict:
    return window_gradients(original.records, fixed.records)


def _zero(values: Sequence[float]) -> bool:
    return all(v == 0.0 for v in values)


def _zeroed_inside(window: Any) -> int:
    """Backward passes of the window (after its first) that started from zeroed
    gradients although the previous one had left some."""
    micro = window["micro"]
    return sum(
        1
        for prev, cur in zip(micro, micro[1:])
        if _zero(cur["before"]) and not _zero(prev["after"])
    )


def window_gradients(original: Sequence[Record], fixed: Sequence[Record]) -> Verdict:
    """At each optimizer step of the fixed script, the gradients are the sum over the
    window's micro-batches: each backward pass of a window starts from the gradients
    the previous one left (recorded as projections before and after every pass: the
    same tensors give bitwise the same numbers), so what the step sees is their sum.
    The original, zeroing on every micro-batch, starts each one from zero."""
    windows = [w for r in fixed[:1] for w in r.get("grad_windows", [])]
    several = [w for w in windows if len(w["micro"]) > 1]
    if not several:
        return Verdict(
            NOT_VERIFIABLE,
            "no optimizer step followed more than one backward pass before the stop "
            "(or the model is too large to record its gradients): raise --steps",
        )
    changed = 0
    for window in several:
        if _zeroed_inside(window):
            return Verdict(
                FAILS,
                f"the gradients are zeroed inside the window of step {window['step'] + 1}: "
                "the step sees the last micro-batches' gradients only",
            )
        micro = window["micro"]
        changed += sum(1 for a, b in zip(micro, micro[1:]) if a["after"] != b["before"])
    if changed:
        return Verdict(
            NOT_VERIFIABLE,
            f"the gradients were changed between backward passes of a window {changed} "
            "time(s) (a clip or an unscale_ on every micro-batch), so the step does not see "
            "the window's sum: judge this fix together with the one that moves that call",
        )
    notes = [
        f"{len(windows)} step(s): each sees the sum of its window's backward passes "
        f"({len(several)} window(s) of more than one, none zeroed inside)"
    ]
    before = [w for r in original[:1] for w in r.get("grad_windows", []) if len(w["micro"]) > 1]
    zeroed = sum(1 for w in before if _zeroed_inside(w))
    if zeroed:
        notes.append(
            f"the original zeroed the gradients inside {zeroed} of {len(before)} window(s)"
        )
    return Verdict(HOLDS, None, notes=notes)


def judge_constant_scale(original: RunResult, fixed: RunResult) -> Verdict:
    """The loss scale is the same for every micro-batch of a window in the fixed run;
    the original raised, or changed the scale inside a window."""
    if not fixed.ok:
        return Verdict(FAILS, f"the fixed script fails: {fixed.message}")
    scales = [s for r in fixed.records[:1] for s in r.get("scales", [])]
    if not scales:
        return Verdict(
            NOT_VERIFIABLE,
            "no enabled GradScaler scaled a loss before the stop (a scaler that is off "
            'on this machine: GradScaler("cuda") without CUDA)',
        )
    windows = _scales_by_step(scales)
    for step, values in sorted(windows.items()):
        if len(set(values)) > 1:
            return Verdict(
                FAILS,
                f"the scale changes inside the window of step {step + 1}: "
                + ", ".join(f"{v:g}" for v in values),
            )
    notes = [f"the scale is constant inside each of {len(windows)} window(s)"]
    error = original.error
    if not original.ok and error is not None:
        notes.append(f"the original raised {error['type']}: {_first_line(str(error['message']))}")
    else:
        before = _scales_by_step([s for r in original.records[:1] for s in r.get("scales", [])])
        changed = sum(1 for values in before.values() if len(set(values)) > 1)
        if not changed:
            return Verdict(
                NOT_VERIFIABLE,
                "the original neither raised nor changed the scale inside a window before "
                "the stop, so the fix's intended change was not exercised here",
                notes=notes,
            )
        notes.append(f"the original changed the scale inside {changed} window(s)")
    return Verdict(HOLDS, None, notes=notes)


def _scales_by_step(scales: Sequence[Any]) -> dict[int, list[float]]:
    out: dict[int, list[float]] = {}
    for s in scales:
        out.setdefault(int(s["step"]), []).append(float(s["scale"]))
    return out


def judge_one_clip_per_step(original: RunResult, fixed: RunResult) -> Verdict:
    return one_clip_per_step(original.records, fixed.records, fixed.steps)


def one_clip_per_step(original: Sequence[Record], fixed: Sequence[Record], steps: int) -> Verdict:
    """Before each optimizer step of the fixed run, exactly one clipping call (clips
    are recorded with the number of steps made before them)."""
    clips = [c for r in fixed[:1] for c in r.get("clips", [])]
    if not clips or not steps:
        return Verdict(NOT_VERIFIABLE, "no gradient clipping happened before the stop")
    per_step: dict[int, int] = {}
    for c in clips:
        per_step[int(c["step"])] = per_step.get(int(c["step"]), 0) + 1
    for step in range(steps):
        count = per_step.get(step, 0)
        if count != 1:
            return Verdict(FAILS, f"{count} clipping call(s) before step {step + 1}, not one")
    notes = [f"one clipping call before each of {steps} step(s)"]
    before = [c for r in original[:1] for c in r.get("clips", [])]
    if before:
        counts: dict[int, int] = {}
        for c in before:
            counts[int(c["step"])] = counts.get(int(c["step"]), 0) + 1
        notes.append(f"the original clipped up to {max(counts.values())} times per step")
    return Verdict(HOLDS, None, notes=notes)


# `binary_cross_entropy_with_logits` in float32 against binary cross-entropy on the
# sigmoid in float64: float32 rounding of a loss of order one
LOGITS_REL = 1e-4
LOGITS_ABS = 1e-6


def judge_raises_then_close(original: RunResult, fixed: RunResult) -> Verdict:
    """The original raises; the fixed script runs, and each of its losses on logits is
    close to binary cross-entropy on the sigmoid of the same logits in float64. Where
    the original runs (CUDA autocast unavailable: it is then disabled) the raise is not
    verifiable here; the fixed losses are then compared to the original's float32 ones,
    unless CPU autocast ran the original's binary cross-entropy on bfloat16 or float16
    probabilities (they are then no float32 losses: only said how far they are)."""
    if not fixed.ok:
        return Verdict(FAILS, f"the fixed script fails: {fixed.message}")
    calls = [c for r in fixed.records[:1] for c in r.get("logits_losses", [])]
    checked = [(c["value"], c["reference"]) for c in calls if c["reference"] is not None]
    for value, ref in checked:
        if abs(value - ref) > LOGITS_REL * abs(ref) + LOGITS_ABS:
            return Verdict(
                FAILS,
                f"a loss on logits is {value:.8g}, binary cross-entropy on their "
                f"sigmoid in float64 {ref:.8g}",
            )
    notes = []
    if checked:
        notes.append(
            f"{len(checked)} loss(es) on logits within {LOGITS_REL:g} of binary "
            "cross-entropy on the sigmoid in float64"
        )
    error = original.error
    if not original.ok and error is not None:
        notes.insert(
            0,
            f"the original raised {error['type']}: {_first_line(str(error['message']))}; "
            f"the fixed script ran {fixed.steps} steps",
        )
        if not checked:
            return Verdict(
                NOT_VERIFIABLE,
                "the fixed script computed no loss on logits before the stop",
                notes=notes,
            )
        return Verdict(HOLDS, None, notes=notes)
    loss = loss_diff(original.losses, fixed.losses)
    lowered = _lowered_probabilities(original.records)
    if lowered:
        # CPU autocast: the original ran, on probabilities rounded to a 16-bit float,
        # so its losses are no float32 losses to hold the fixed ones to
        notes.append(
            f"the original's losses (binary cross-entropy on {lowered} probabilities) "
            f"differ from the fixed ones by up to {loss.max_rel:.2g} (relative)"
        )
        return Verdict(
            NOT_VERIFIABLE,
            "the original did not raise here: CUDA autocast cannot run on this machine, and "
            f"CPU autocast ran binary cross-entropy on {lowered} probabilities (it refuses "
            "nothing), so the original's losses are not float32's",
            loss.max_abs,
            notes=notes,
        )
    close = loss.max_rel <= LOGITS_REL or loss.max_abs <= LOGITS_ABS
    if loss.count_a and loss.count_b and not close:
        return Verdict(
            FAILS,
            f"the original ran here in float32 and the fixed losses are not close to it: "
            f"{divergence(loss)}",
            loss.max_abs,
        )
    notes.append(
        f"the fixed losses are within {loss.max_rel:.2g} (relative) of the original's "
        "float32 losses"
    )
    return Verdict(
        NOT_VERIFIABLE,
        "the original did not raise here: CUDA autocast cannot run on this machine "
        "(it is disabled without CUDA; CPU autocast runs binary cross-entropy in float32)",
        loss.max_abs,
        notes=notes,
    )


def _lowered_probabilities(records: Sequence[Record]) -> str:
    """The dtypes other than float32/float64 of the probabilities the run's
    `binary_cross_entropy` calls saw (CPU autocast's), joined; empty when none."""
    dtypes = {d for r in records[:1] for d in r.get("probability_losses", {})}
    return ", ".join(sorted(dtypes - {"float32", "float64"}))


JUDGES: Mapping[Invariant, InvariantJudge] = {
    Invariant.EPOCH_RESHUFFLE: InvariantJudge(judge_epoch_reshuffle),
    Invariant.RANK0_SAVE: InvariantJudge(judge_rank0_save),
    Invariant.ORIGINAL_RAISES: InvariantJudge(judge_original_raises, original_fails=True),
    Invariant.BARE_CHECKPOINT: InvariantJudge(judge_bare_checkpoint),
    Invariant.UNSCALED_CLIP: InvariantJudge(judge_unscaled_clip),
    Invariant.WINDOW_GRADIENTS: InvariantJudge(judge_window_gradients),
    Invariant.CONSTANT_SCALE: InvariantJudge(judge_constant_scale, original_fails=True),
    Invariant.ONE_CLIP_PER_STEP: InvariantJudge(judge_one_clip_per_step),
    Invariant.RAISES_THEN_CLOSE: InvariantJudge(judge_raises_then_close, original_fails=True),
}


def judge_for(invariant: Invariant) -> InvariantJudge | None:
    return JUDGES.get(invariant)
