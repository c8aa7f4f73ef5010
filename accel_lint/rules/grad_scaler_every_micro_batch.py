"""ACL319 grad-scaler-every-micro-batch: gradient accumulation with a GradScaler whose
`update()` or `unscale_()` runs on every micro-batch while `scaler.step(opt)` runs once
per window. Page: rules/ACL319.md

The accumulation and the calls run on each of its iterations come from `Loops`; the
scaler is the receiver of the step (`scaler.step(opt)`), a GradScaler of the file
(`Precision`) or a name that says it is one. The fix moves the call into the block
that steps: `unscale_` before the first clip there (or the step), `update` after the
step.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for, move_statement
from accel_lint.facts.file import CallSite
from accel_lint.facts.loops import Accumulation, Loops, StepBlock
from accel_lint.facts.precision import Precision
from accel_lint.facts.syntax import descendants, last_name
from accel_lint.names import resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import CLIP_GRAD

_METHODS = ("update", "unscale_")


class GradScalerEveryMicroBatch(Rule):
    code = "ACL319"
    name = "grad-scaler-every-micro-batch"
    summary = "Gradient accumulation that updates or unscales the GradScaler on every micro-batch"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.CONSTANT_SCALE)

    def finish(self) -> None:
        loops = Loops.of(self.facts)
        reported: set[int] = set()
        for accumulation in loops.accumulations():
            scaler = self._scaler(accumulation)
            if scaler is None or _is_one(accumulation.every):
                continue
            for site in loops.every_iteration(accumulation):
                func = site.node.func
                if id(site.node) in reported or not isinstance(func, cst.Attribute):
                    continue
                if func.attr.value in _METHODS and func.value.deep_equals(scaler):
                    reported.add(id(site.node))
                    self._report(loops, site, accumulation, func.attr.value)

    def _scaler(self, accumulation: Accumulation) -> cst.BaseExpression | None:
        """The receiver of `scaler.step(opt)` when the step is a GradScaler's."""
        func = accumulation.step.node.func
        if not isinstance(func, cst.Attribute) or not accumulation.step.node.args:
            return None
        receiver = func.value
        if Precision.of(self.facts).scaler_of(receiver) is not None:
            return receiver
        name = last_name(receiver) or ""
        return receiver if "scaler" in name.lower() else None

    def _report(
        self, loops: Loops, site: CallSite, accumulation: Accumulation, method: str
    ) -> None:
        k = code_for(accumulation.every)
        call = code_for(site.node)
        if method == "update":
            why = (
                "the loss scale changes inside the window, so gradients of different "
                "scales are summed"
            )
        else:
            why = (
                "the second micro-batch's `unscale_` raises (it was already called "
                "since the last update)"
            )
        message = (
            f"The optimizer steps once every `{k}` backward passes, but `{call}` runs on "
            f"every micro-batch: {why}; call it in the step branch"
        )
        planned = self._plan(loops, site, accumulation, method)
        if isinstance(planned, str):
            self.report(site.node, message, no_fix_reason=planned)
        else:
            self.report(site.node, message, planned)

    def _plan(
        self, loops: Loops, site: CallSite, accumulation: Accumulation, method: str
    ) -> Fix | str:
        line = loops.movable(site, accumulation)
        if isinstance(line, str):
            return line
        if not isinstance(line.body[0], cst.Expr):
            return "the call's result is assigned"
        where = loops.step_block(accumulation)
        if where is None:
            return "the step is not in a block of its own"
        call = code_for(site.node)
        if _calls_in(where, site.node):
            return Fix(
                f"Remove `{call}`: the step branch already calls it",
                {line: cst.RemovalSentinel.REMOVE},
            )
        if method == "update":
            return Fix(
                f"Move `{call}` into the step branch, after the step",
                move_statement(line, where.statement, after=True),
            )
        anchor = self._first_clip(where) or where.statement
        return Fix(
            f"Move `{call}` into the step branch, before the clip or the step",
            move_statement(line, anchor, after=False),
        )

    def _first_clip(self, where: StepBlock) -> cst.BaseStatement | None:
        """The first statement of the step block, before its step, that clips."""
        for statement in where.block.body:
            if statement is where.statement:
                return None
            for node in descendants(statement):
                if isinstance(node, cst.Call) and resolves_to(
                    node.func, self.facts.module_scope, CLIP_GRAD
                ):
                    return statement
        return None


def _calls_in(where: StepBlock, call: cst.Call) -> bool:
    """The step block already makes the same call (`scaler.update()` after the step)."""
    return any(
        isinstance(node, cst.Call) and node.deep_equals(call)
        for statement in where.block.body
        for node in descendants(statement)
    )


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 1
