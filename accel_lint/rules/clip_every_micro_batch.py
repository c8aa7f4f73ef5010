"""ACL320 clip-every-micro-batch: gradient accumulation that clips the gradients on
every micro-batch. Page: rules/ACL320.md

The accumulation and the calls run on each of its iterations come from `Loops`. A
`clip_grad_norm_` / `clip_grad_value_` among them clips partial sums k times per
step. The fix moves the clip into the block that steps, right before the step (after
the `unscale_` the block makes before its step, when there is one).
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for, move_statement
from accel_lint.facts.file import CallSite
from accel_lint.facts.loops import Accumulation, Loops, StepBlock
from accel_lint.facts.syntax import descendants
from accel_lint.facts.tree import Tree
from accel_lint.names import resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import CLIP_GRAD


class ClipEveryMicroBatch(Rule):
    code = "ACL320"
    name = "clip-every-micro-batch"
    summary = "Gradient accumulation that clips the gradients on every micro-batch"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.ONE_CLIP_PER_STEP)

    def finish(self) -> None:
        loops = Loops.of(self.facts)
        reported: set[int] = set()
        for accumulation in loops.accumulations():
            if _is_one(accumulation.every):
                continue
            for site in loops.every_iteration(accumulation):
                if id(site.node) in reported:
                    continue
                if resolves_to(site.node.func, site.scope, CLIP_GRAD):
                    reported.add(id(site.node))
                    self._report(loops, site, accumulation)

    def _report(self, loops: Loops, site: CallSite, accumulation: Accumulation) -> None:
        k = code_for(accumulation.every)
        clip = code_for(site.node.func)
        message = (
            f"The optimizer steps once every `{k}` backward passes, but `{clip}` runs on "
            f"every micro-batch: partial sums are clipped `{k}` times per step, at `{k}` "
            "times the cost; clip once, in the step branch before the step"
        )
        planned = self._plan(loops, site, accumulation)
        if isinstance(planned, str):
            self.report(site.node, message, no_fix_reason=planned)
        else:
            self.report(site.node, message, planned)

    def _plan(self, loops: Loops, site: CallSite, accumulation: Accumulation) -> Fix | str:
        line = loops.movable(site, accumulation)
        if isinstance(line, str):
            return line
        where = loops.step_block(accumulation)
        if where is None:
            return "the step is not in a block of its own"
        small = line.body[0]
        if isinstance(small, cst.Assign) and not self._read_only_after(small, where):
            return "the clip's result is read outside the step branch"
        anchor, after = _anchor(where)
        return Fix(
            f"Move `{code_for(site.node.func)}(...)` into the step branch, before the step",
            move_statement(line, anchor, after=after),
        )

    def _read_only_after(self, assign: cst.Assign, where: StepBlock) -> bool:
        """The clip's result is bound to plain names that the file reads only in the
        step block, from its step on (where the moved clip will have run)."""
        targets = [t.target for t in assign.targets]
        if not all(isinstance(t, cst.Name) for t in targets):
            return False
        statements = list(where.block.body)
        inside = {
            id(node)
            for statement in statements[statements.index(where.statement) :]
            for node in descendants(statement)
        }
        tree = Tree.of(self.facts)
        for target in targets:
            assert isinstance(target, cst.Name)
            for node, _ in tree.names(target.value):
                if node is not target and id(node) not in inside:
                    return False
        return True


def _anchor(where: StepBlock) -> tuple[cst.BaseStatement, bool]:
    """After the block's `unscale_` that precedes the step, else right before the step."""
    statements = list(where.block.body)
    found: cst.BaseStatement | None = None
    for statement in statements[: statements.index(where.statement)]:
        for node in descendants(statement):
            if (
                isinstance(node, cst.Call)
                and isinstance(node.func, cst.Attribute)
                and node.func.attr.value == "unscale_"
            ):
                found = statement
    if found is not None:
        return found, True
    return where.statement, False


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 1
