"""Equivalence classes: does a fixed run compute what the original computed?

Pure functions over what the runs recorded (loss lists, per-tensor difference
rows, gradient diagnostics); no torch, no processes, no rule modules. How the
thresholds were chosen: docs/verifier.md, "Judging a fix".
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from accel_lint.verify.protocol import DiffRecord, GradRecord, InitEvent

HOLDS, FAILS, NOT_VERIFIABLE = "holds", "fails", "not-verifiable"

# close: a fixed tolerance does not work (after 64 steps 1 vs 2 threads moves a
# random-label CNN's parameters by a relative 0.12, a well-conditioned MLP's by
# 4e-7), so the bound is a multiple of the script's own noise floor.
CLOSE_FACTOR = 5.0
CLOSE_ABS = 1e-6  # absolute slack: relative to the loss scale, and on relative norms
EARLY_STEPS = 5  # the first losses must agree tightly even when chaos grows later
EARLY_REL = 1e-4
# statistical: |mean(fixed) - mean(original)| within 3 pooled standard deviations
# of the trailing-window mean loss across seed offsets.
STATISTICAL_Z = 3.0


@dataclass(frozen=True)
class LossDiff:
    count_a: int
    count_b: int
    first: int | None  # first backward pass whose losses differ; None when all equal
    max_abs: float
    max_rel: float
    early_rel: float  # largest relative difference over the first EARLY_STEPS passes
    scale: float  # largest |loss| seen, for absolute slack

    @property
    def equal(self) -> bool:
        return self.first is None and self.count_a == self.count_b


def loss_diff(a: Sequence[float], b: Sequence[float]) -> LossDiff:
    """Losses compared per backward pass, aligned by index."""
    n = min(len(a), len(b))
    first: int | None = None
    max_abs = max_rel = early = 0.0
    for i in range(n):
        x, y = a[i], b[i]
        if x == y or (math.isnan(x) and math.isnan(y)):
            continue
        if first is None:
            first = i
        d = abs(x - y) if math.isfinite(x) and math.isfinite(y) else math.inf
        rel = d / max(abs(x), abs(y), 1e-12)
        max_abs, max_rel = max(max_abs, d), max(max_rel, rel)
        if i < EARLY_STEPS:
            early = max(early, rel)
    if first is None and len(a) != len(b):
        first = n
    scale = max((abs(v) for v in (*a, *b) if math.isfinite(v)), default=0.0)
    return LossDiff(len(a), len(b), first, max_abs, max_rel, early, scale)


@dataclass(frozen=True)
class TensorDiff:
    """One kind (parameters or buffers) of a run's final state against the reference."""

    compared: int = 0
    unequal: int = 0
    max_abs: float = 0.0
    worst: str | None = None  # the tensor with the largest relative norm of difference
    worst_rel: float = 0.0
    shape_mismatch: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()  # in the reference only
    extra: tuple[str, ...] = ()  # in this run only
    rel_norms: Mapping[str, float] = field(default_factory=dict)  # per compared tensor

    @property
    def equal(self) -> bool:
        return self.unequal == 0 and not self.shape_mismatch and not self.missing and not self.extra


def tensor_diff(diff: DiffRecord | None, kind: str, exclude: Iterable[str] = ()) -> TensorDiff:
    """Summarise the runner's per-tensor rows of one kind, leaving out `exclude`."""
    if not diff:
        return TensorDiff()
    skip = set(exclude)
    rows = [r for r in diff.get("tensors", []) if r["kind"] == kind and r["name"] not in skip]
    unequal = [r for r in rows if not r["equal"]]
    rels = {r["name"]: r["rel_norm"] for r in rows if r["shape"] and r["rel_norm"] is not None}
    sized = [r for r in unequal if r["name"] in rels]
    worst = max(sized, key=lambda r: rels[r["name"]], default=None)
    return TensorDiff(
        compared=len(rows),
        unequal=len(unequal),
        max_abs=max((r["max_abs"] or 0.0 for r in sized), default=0.0),
        worst=worst["name"] if worst else None,
        worst_rel=rels[worst["name"]] if worst else 0.0,
        shape_mismatch=tuple(sorted(r["name"] for r in unequal if not r["shape"])),
        missing=tuple(sorted(n for n, k in diff.get("missing", []) if k == kind and n not in skip)),
        extra=tuple(sorted(n for n, k in diff.get("extra", []) if k == kind and n not in skip)),
        rel_norms=rels,
    )


@dataclass(frozen=True)
class Noise:
    """How far a harmless perturbation of the original moves its results."""

    loss: float  # largest loss difference
    early_rel: float  # largest relative loss difference over the first passes
    param_rel: float  # largest relative norm of a parameter's difference
    buffer_rel: float
    deterministic: bool = True  # two identical runs of the original agreed bitwise
    nondeterminism: float = 0.0  # their largest loss difference when they did not
    param_worst: str | None = None  # the parameter the perturbation moved most
    # per tensor: a bias that a BatchNorm cancels gets no real gradient and moves
    # most under noise; when the fix removes it, it must not set the floor for the rest
    param_rels: Mapping[str, float] = field(default_factory=dict)
    buffer_rels: Mapping[str, float] = field(default_factory=dict)

    def floor(self, kind: str, names: Iterable[str]) -> float:
        """The floor over the tensors a fixed run is compared on."""
        rels = self.param_rels if kind == "param" else self.buffer_rels
        if not rels:
            return self.param_rel if kind == "param" else self.buffer_rel
        return max((rels.get(n, 0.0) for n in names), default=0.0)

    @staticmethod
    def measure(
        perturbed: LossDiff,
        params: TensorDiff,
        buffers: TensorDiff,
        repeat: LossDiff | None = None,
        repeat_params: TensorDiff | None = None,
        repeat_buffers: TensorDiff | None = None,
    ) -> Noise:
        """The floor from the perturbed run; when two identical runs of the original
        already disagree, the floor is the larger of the two."""
        noise = Noise(
            perturbed.max_abs,
            perturbed.early_rel,
            params.worst_rel,
            buffers.worst_rel,
            param_worst=params.worst,
            param_rels=params.rel_norms,
            buffer_rels=buffers.rel_norms,
        )
        if repeat is None:
            return noise
        deterministic = (
            repeat.equal
            and (repeat_params is None or repeat_params.equal)
            and (repeat_buffers is None or repeat_buffers.equal)
        )
        if deterministic:
            return noise
        return Noise(
            max(noise.loss, repeat.max_abs),
            max(noise.early_rel, repeat.early_rel),
            max(noise.param_rel, repeat_params.worst_rel if repeat_params else 0.0),
            max(noise.buffer_rel, repeat_buffers.worst_rel if repeat_buffers else 0.0),
            deterministic=False,
            nondeterminism=repeat.max_abs,
            param_worst=noise.param_worst,
            param_rels=_merge_max(
                noise.param_rels, repeat_params.rel_norms if repeat_params else {}
            ),
            buffer_rels=_merge_max(
                noise.buffer_rels, repeat_buffers.rel_norms if repeat_buffers else {}
            ),
        )


def _merge_max(a: Mapping[str, float], b: Mapping[str, float]) -> dict[str, float]:
    return {n: max(a.get(n, 0.0), b.get(n, 0.0)) for n in {*a, *b}}


@dataclass
class Verdict:
    verdict: str
    reason: str | None = None
    max_loss_diff: float | None = None
    max_param_diff: float | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def holds(self) -> bool:
        return self.verdict == HOLDS


def fmt(value: float) -> str:
    return "0" if value == 0 else f"{value:.2g}"


def divergence(loss: LossDiff) -> str:
    first = (loss.first or 0) + 1  # people count passes from 1
    return f"losses differ from backward pass {first} on, by up to {fmt(loss.max_abs)}"


def _count_mismatch(loss: LossDiff) -> Verdict | None:
    if loss.count_a == loss.count_b:
        return None
    return Verdict(
        FAILS,
        f"the fixed run made {loss.count_b} backward passes where the original made {loss.count_a}",
        loss.max_abs,
    )


def judge_exact(loss: LossDiff, params: TensorDiff, buffers: TensorDiff) -> Verdict:
    """Per-step losses and final parameters and buffers bitwise equal."""
    numbers = (loss.max_abs, params.max_abs)
    mismatch = _count_mismatch(loss)
    if mismatch is not None:
        return mismatch
    if not loss.equal:
        return Verdict(FAILS, divergence(loss) + " (exact: they must be bitwise equal)", *numbers)
    for kind, diff in (("parameters", params), ("buffers", buffers)):
        if diff.missing or diff.extra or diff.shape_mismatch:
            return Verdict(FAILS, f"the {kind} differ: {_set_change(diff)}", *numbers)
        if diff.unequal:
            return Verdict(
                FAILS,
                f"losses are bitwise equal but {diff.unequal} final {kind} are not "
                f"(worst {diff.worst}: relative difference {fmt(diff.worst_rel)})",
                *numbers,
            )
    return Verdict(
        HOLDS,
        None,
        *numbers,
        notes=[
            f"bitwise equal: {loss.count_a} losses, {params.compared} parameters, "
            f"{buffers.compared} buffers"
        ],
    )


def judge_close(
    loss: LossDiff,
    params: TensorDiff,
    buffers: TensorDiff,
    noise: Noise,
    *,
    aligned: bool = False,
    factor: float = CLOSE_FACTOR,
) -> Verdict:
    """Equal up to floating-point reordering: within `factor` times the noise floor.
    Parameters missing on one side are accepted only when the runs' initial
    weights were aligned because the fix changed the parameter set."""
    numbers = (loss.max_abs, params.max_abs)
    mismatch = _count_mismatch(loss)
    if mismatch is not None:
        return mismatch
    notes: list[str] = []
    if params.shape_mismatch or buffers.shape_mismatch:
        names = params.shape_mismatch + buffers.shape_mismatch
        return Verdict(FAILS, f"tensors changed shape: {', '.join(names[:4])}", *numbers)
    if params.missing or params.extra or buffers.missing or buffers.extra:
        if not aligned:
            return Verdict(
                FAILS, f"the parameters differ: {_set_change(params, buffers)}", *numbers
            )
        notes.append(
            f"the fix changed the parameters ({_set_change(params, buffers)}); "
            "both runs started from the same initial weights"
        )
    loss_bound = factor * noise.loss + CLOSE_ABS * (1.0 + loss.scale)
    if loss.max_abs > loss_bound:
        return Verdict(
            FAILS,
            f"{divergence(loss)}: more than {factor:g}x the noise floor ({fmt(noise.loss)})",
            *numbers,
        )
    early_bound = max(EARLY_REL, factor * noise.early_rel)
    if loss.early_rel > early_bound:
        return Verdict(
            FAILS,
            f"the first {EARLY_STEPS} losses already differ by a relative {fmt(loss.early_rel)} "
            f"(allowed {fmt(early_bound)})",
            *numbers,
        )
    param_floor = noise.floor("param", params.rel_norms)
    for kind, diff, floor in (
        ("parameter", params, param_floor),
        ("buffer", buffers, noise.floor("buffer", buffers.rel_norms)),
    ):
        bound = factor * floor + CLOSE_ABS
        if diff.worst_rel > bound:
            return Verdict(
                FAILS,
                f"{kind} {diff.worst} differs by a relative {fmt(diff.worst_rel)}: more than "
                f"{factor:g}x the noise floor ({fmt(floor)})",
                *numbers,
            )
    if loss.equal and params.equal and buffers.equal:
        notes.append("bitwise equal")
    else:
        notes.append(
            f"losses within {fmt(loss.max_abs)} (noise floor {fmt(noise.loss)}), "
            f"parameters within a relative {fmt(params.worst_rel)} "
            f"(noise floor {fmt(param_floor)})"
        )
    return Verdict(HOLDS, None, *numbers, notes=notes)


def _set_change(*diffs: TensorDiff) -> str:
    missing = [n for d in diffs for n in d.missing]
    extra = [n for d in diffs for n in d.extra]
    parts = []
    if missing:
        parts.append(f"{len(missing)} removed ({_names(missing)})")
    if extra:
        parts.append(f"{len(extra)} added ({_names(extra)})")
    return ", ".join(parts) or "shapes differ"


def _names(names: Sequence[str], limit: int = 3) -> str:
    shown = ", ".join(names[:limit])
    return shown + (f", and {len(names) - limit} more" if len(names) > limit else "")


def window_mean(losses: Sequence[float]) -> float | None:
    """Mean loss over the trailing half of the run (the part past the first steps)."""
    if not losses:
        return None
    tail = losses[len(losses) // 2 :]
    return sum(tail) / len(tail)


def judge_statistical(
    original: Sequence[float], fixed: Sequence[float], loss: LossDiff | None = None
) -> Verdict:
    """`original`, `fixed`: trailing-window mean losses, one per seed offset."""
    numbers = (loss.max_abs if loss else None, None)
    if len(original) < 2 or not fixed:
        return Verdict(
            NOT_VERIFIABLE,
            "needs at least two seeds of the original and one of the fixed run",
            *numbers,
        )
    mo, mf = _mean(original), _mean(fixed)
    squares = sum((x - mo) ** 2 for x in original) + sum((y - mf) ** 2 for y in fixed)
    dof = len(original) + len(fixed) - 2
    sd = math.sqrt(squares / dof) if dof > 0 else 0.0
    summary = (
        f"trailing mean loss {mf:.4g} (fixed) against {mo:.4g} \u00b1 {sd:.2g} (original) "
        f"over {len(original)} seeds"
    )
    if sd == 0.0:
        if abs(mf - mo) <= 1e-9 * (1.0 + abs(mo)):
            return Verdict(
                HOLDS, None, *numbers, notes=[summary + "; the loss does not depend on the seed"]
            )
        return Verdict(
            FAILS,
            summary + "; the original does not vary with the seed, the fixed run differs",
            *numbers,
        )
    z = (mf - mo) / sd
    if abs(z) > STATISTICAL_Z:
        return Verdict(
            FAILS,
            f"{summary}: {abs(z):.1f} standard deviations apart (at most {STATISTICAL_Z:g})",
            *numbers,
        )
    return Verdict(HOLDS, None, *numbers, notes=[f"{summary} (z = {z:+.2f})"])


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


# -- causes -----------------------------------------------------------------------------


def zero_grad_cause(grads: GradRecord | None) -> str | None:
    """Name the parameters that reached a step with an all-zero gradient in the
    original run: where a fix sets gradients to None instead of zero, the optimizer
    skips them there (no momentum, no weight decay) and the runs part."""
    if not grads:
        return None
    zero = grads["zero"]
    if not zero:
        return None
    steps = grads["steps"]
    first = grads["first_zero"]
    names = sorted(zero, key=lambda n: (-zero[n], n))
    worst = names[0]
    return (
        f"in the original run {len(names)} parameter(s) had an all-zero gradient on some steps "
        f"({_names(names)}; {worst}: {zero[worst]} of {steps} steps, "
        f"first at step {first.get(worst, 0) + 1}). "
        "With set_to_none=True their gradient is None there, and the optimizer skips them "
        "(no momentum or weight-decay update) where the original applied one"
    )


def init_cause(events: Sequence[InitEvent]) -> str | None:
    """When the fixed run started from other initial weights than the original."""
    for event in events:
        differs: Sequence[str] = event.get("differs", ())
        if not event.get("aligned") and differs:
            return (
                f"the fixed run starts from other initial weights ({_names(list(differs))}): "
                "the fix "
                "changed how the random generator is consumed before the optimizer was built"
            )
    return None


def first_pass_cause(loss: LossDiff, events: Sequence[InitEvent]) -> str | None:
    if loss.first == 0 and events and not any(e.get("differs") for e in events):
        return (
            "the initial weights are identical but the first loss differs: the fix changed the "
            "first batch or the forward computation"
        )
    return None
