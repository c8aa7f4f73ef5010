"""ACL305 clip-scaled-gradients: gradients clipped between `scaler.scale(loss).backward()`
and `scaler.step(optimizer)` without `scaler.unscale_(optimizer)` first: the clip
threshold is compared with gradients multiplied by the loss scale. Page: rules/ACL305.md

The scaler is a GradScaler the file builds (followed into the functions it is passed
to), or an object the file only receives (a parameter, an attribute set elsewhere)
that the same function drives through GradScaler's whole protocol: `.scale(loss)
.backward()`, `.step(optimizer)` and `.update()`. The three calls and the clip are
read in source order within one function; a clip in a branch that excludes the
scaled backward (`if scaler: ... else: clip`) is not between them.
"""

from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite
from accel_lint.facts.precision import Precision, Scaler
from accel_lint.facts.tree import Tree
from accel_lint.names import LOCAL, BindingKind, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import CLIP_GRAD, GRAD_SCALER


@dataclass(frozen=True)
class _Step:
    """The scaled backward, the clip and the scaler step around it, in one function."""

    backward: CallSite
    clip: CallSite
    step: CallSite
    receiver: cst.BaseExpression  # the scaler, as the step call names it
    scaler: Scaler | None  # None for a scaler the file only receives


class ClipScaledGradients(Rule):
    code = "ACL305"
    name = "clip-scaled-gradients"
    summary = "Gradients clipped after scaler.scale(loss).backward() without scaler.unscale_()"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.UNSCALED_CLIP)

    def finish(self) -> None:
        clips = self.facts.calls_resolving_to(CLIP_GRAD)
        if not clips:
            return
        self.precision = Precision.of(self.facts)
        self.tree = Tree.of(self.facts)
        graph = CallGraph.of(self.facts)
        # per function: where each call is, and where the scaled backward passes are
        # (looked up by bisection: scanning back from every clip is quadratic)
        indexed: dict[cst.FunctionDef | None, tuple[dict[int, int], list[int]]] = {}
        for clip in clips:
            calls = graph.by_function.get(clip.function, [])
            if clip.function not in indexed:
                indexed[clip.function] = (
                    {id(s.node): i for i, s in enumerate(calls)},
                    [i for i, s in enumerate(calls) if _scaled_backward(s) is not None],
                )
            positions, scaled = indexed[clip.function]
            found = self._around(clip, calls, positions[id(clip.node)], scaled)
            if found is not None:
                self._report(found, calls)

    # -- the scaled step around a clip ---------------------------------------------------

    def _around(
        self, clip: CallSite, calls: list[CallSite], index: int, scaled: list[int]
    ) -> _Step | None:
        """The scaled step around the clip at `calls[index]`; `scaled` holds the
        indices of the scaled backward passes, in order."""
        before = bisect_left(scaled, index) - 1
        if before < 0:
            return None
        backward = calls[scaled[before]]
        if _exclusive(backward, clip):
            return None
        receiver = _scaled_backward(backward)
        assert receiver is not None
        key = code_for(receiver)
        between = calls[scaled[before] + 1 : index]
        if any(_method_on(s, "unscale_", key) for s in between):
            return None
        step = next(
            (s for s in calls[index + 1 :] if _method_on(s, "step", key) and s.node.args), None
        )
        if step is None or _exclusive(step, clip):
            return None
        scaler = self._scaler(receiver, clip, calls, key)
        if scaler is False:
            return None
        return _Step(backward, clip, step, receiver, scaler if isinstance(scaler, Scaler) else None)

    def _scaler(
        self, receiver: cst.BaseExpression, clip: CallSite, calls: list[CallSite], key: str
    ) -> Scaler | bool:
        """The file's GradScaler this receiver is; True for an object the function only
        receives but drives as a GradScaler; False when it is something else."""
        scaler = self.precision.scaler_of(receiver)
        if scaler is not None:
            return scaler
        root = receiver
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return False
        scope = clip.scope
        names = qualified_names(receiver, scope)
        if names and LOCAL not in names:
            return False  # another module's object
        if isinstance(receiver, cst.Name):
            bindings = scope.lookup(receiver.value) or []
            if any(
                b.kind is not BindingKind.LOCAL or (b.value is not None and not _none(b.value))
                for b in bindings
            ):
                # built here by something that is not torch's GradScaler
                return any(
                    isinstance(b.value, cst.Call)
                    and qualified_names(b.value.func, b.scope or scope) <= GRAD_SCALER
                    for b in bindings
                )
        elif isinstance(receiver, cst.Attribute):
            built = [
                a.value
                for a in self.facts.attribute_assignments.get(receiver.attr.value, [])
                if a.receiver == "self"
            ]
            if any(not _none(v) for v in built):
                return False  # built here, and not a GradScaler we followed
        return any(_method_on(s, "update", key) for s in calls)

    # -- report and fix ------------------------------------------------------------------

    def _report(self, found: _Step, calls: list[CallSite]) -> None:
        key = code_for(found.receiver)
        optimizer = found.step.node.args[0].value
        message = (
            f"gradients are clipped while still multiplied by the loss scale: call "
            f"`{key}.unscale_({code_for(optimizer)})` before clipping, or the threshold "
            "applies to scaled gradients"
        )
        reason = self._no_fix(found, calls, optimizer)
        if reason is not None:
            self.report(found.clip.node, message, no_fix_reason=reason)
            return
        statement = self.tree.statement_of(found.clip.node)
        assert isinstance(statement, cst.SimpleStatementLine)
        text = f"{key}.unscale_({code_for(optimizer)})"
        new = cst.SimpleStatementLine(
            body=[cst.Expr(cst.parse_expression(text))], leading_lines=statement.leading_lines
        )
        fix = Fix(
            f"Insert `{text}` before the clip",
            {statement: cst.FlattenSentinel([new, statement.with_changes(leading_lines=())])},
        )
        self.report(found.clip.node, message, fix)

    def _no_fix(
        self, found: _Step, calls: list[CallSite], optimizer: cst.BaseExpression
    ) -> str | None:
        key = code_for(found.receiver)
        later = calls[calls.index(found.clip) + 1 : calls.index(found.step)]
        if any(_method_on(s, "unscale_", key) for s in later):
            return "`unscale_()` is called after the clip: move it before the clip"
        if not _plain(optimizer):
            return "the optimizer passed to `step()` is not a plain name to repeat"
        statement = self.tree.statement_of(found.clip.node)
        if not isinstance(statement, cst.SimpleStatementLine) or not isinstance(
            self.tree.parent(statement), (cst.IndentedBlock, cst.Module)
        ):
            return "the clip is not a statement of its own"
        if len(statement.body) != 1:
            return "the clip shares its line with other statements"
        sure = found.scaler is not None and not found.scaler.maybe_none
        if not sure and not _guards_include(found.clip, found.backward):
            return (
                f"`{key}` may be None where the clip runs; call `unscale_()` under the test "
                "that guards the scaled backward"
            )
        return None


def _scaled_backward(site: CallSite) -> cst.BaseExpression | None:
    """`<scaler>` for `<scaler>.scale(loss).backward(...)`."""
    func = site.node.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "backward":
        return None
    inner = func.value
    if (
        isinstance(inner, cst.Call)
        and isinstance(inner.func, cst.Attribute)
        and inner.func.attr.value == "scale"
    ):
        return inner.func.value
    return None


def _method_on(site: CallSite, method: str, receiver: str) -> bool:
    func = site.node.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == method
        and code_for(func.value) == receiver
    )


def _exclusive(a: CallSite, b: CallSite) -> bool:
    """The two calls sit in opposite branches of one `if`."""
    tests = {id(test): positive for test, positive in a.guards}
    return any(id(test) in tests and tests[id(test)] != positive for test, positive in b.guards)


def _guards_include(site: CallSite, other: CallSite) -> bool:
    """Every test guarding `other` guards `site` the same way."""
    mine = {(id(test), positive) for test, positive in site.guards}
    return all((id(test), positive) in mine for test, positive in other.guards)


def _plain(expr: cst.BaseExpression) -> bool:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        if isinstance(expr, cst.Subscript) and not all(
            isinstance(e.slice, cst.Index) and isinstance(e.slice.value, (cst.Integer, cst.Name))
            for e in expr.slice
        ):
            return False
        expr = expr.value
    return isinstance(expr, cst.Name)


def _none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"
