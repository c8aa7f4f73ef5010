"""ACL318 zero-grad-every-micro-batch: gradient accumulation that zeroes the gradients on
every micro-batch. Page: rules/ACL318.md

The accumulation (the optimizer stepped under a counter test, or after an inner loop
of micro-batches) and the calls run on every one of its iterations come from
`Loops`. A `zero_grad()` of the optimizer that steps, or of the model whose
parameters it was built over, among those calls leaves only the last micro-batch's
gradients for the step. The fix moves the call to the end of the block that steps.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for, move_statement
from accel_lint.facts.file import CallSite
from accel_lint.facts.loops import Accumulation, Loops, StepBlock
from accel_lint.facts.syntax import descendants, last_name, sub_expressions
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification

_PARAMETERS = ("parameters", "named_parameters")


class ZeroGradEveryMicroBatch(Rule):
    code = "ACL318"
    name = "zero-grad-every-micro-batch"
    summary = "Gradient accumulation that zeroes the gradients on every micro-batch"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.WINDOW_GRADIENTS)

    def finish(self) -> None:
        loops = Loops.of(self.facts)
        reported: set[int] = set()
        for accumulation in loops.accumulations():
            optimizer = accumulation.optimizer()
            if optimizer is None or _is_one(accumulation.every):
                continue
            owners = self._owners(optimizer, accumulation.step)
            for site in loops.every_iteration(accumulation):
                if id(site.node) in reported or not _zeroes(site, optimizer, owners):
                    continue
                reported.add(id(site.node))
                self._report(loops, site, accumulation, optimizer, owners)
            for manual, zeroing in _manual_loops(accumulation, owners):
                if id(zeroing) not in reported:
                    reported.add(id(zeroing))
                    self._report_manual(loops, manual, zeroing, accumulation, optimizer, owners)

    def _report_manual(
        self,
        loops: Loops,
        manual: cst.For,
        zeroing: cst.CSTNode,
        accumulation: Accumulation,
        optimizer: cst.BaseExpression,
        owners: set[str],
    ) -> None:
        """A loop over the model's parameters that zeroes each gradient, run on every
        micro-batch; the fix moves the whole loop."""
        k = code_for(accumulation.every)
        message = (
            f"The optimizer steps once every `{k}` backward passes, but this loop zeroes "
            "the parameters' gradients on every micro-batch: only the last micro-batch's "
            "gradients reach the step (zero them in the step branch, after the step)"
        )
        where = loops.step_block(accumulation)
        if accumulation.via is not None or where is None:
            reason = "the step is not in a block of the loop's own function"
            self.report(zeroing, message, no_fix_reason=reason)
            return
        if _zeroes_in(where, optimizer, owners):
            fix = Fix(
                "Remove the zeroing loop: the step branch already zeroes the gradients",
                {manual: cst.RemovalSentinel.REMOVE},
            )
        else:
            fix = Fix(
                "Move the zeroing loop into the step branch, after the step",
                move_statement(manual, _last_before_exit(where), after=True),
            )
        self.report(zeroing, message, fix)

    def _owners(self, optimizer: cst.BaseExpression, step: CallSite) -> set[str]:
        """The last names of the modules whose parameters the optimizer was built over
        (`model` for `opt = SGD(model.parameters())`, `self.model = ...`)."""
        values: list[cst.BaseExpression] = []
        if isinstance(optimizer, cst.Name):
            values = [b.value for b in step.scope.lookup(optimizer.value) or [] if b.value]
        elif isinstance(optimizer, cst.Attribute):
            assigned = self.facts.attribute_assignments.get(optimizer.attr.value, [])
            values = [a.value for a in assigned]
        owners: set[str] = set()
        for value in values:
            for sub in sub_expressions(value):
                if (
                    isinstance(sub, cst.Call)
                    and isinstance(sub.func, cst.Attribute)
                    and sub.func.attr.value in _PARAMETERS
                ):
                    name = last_name(sub.func.value)
                    if name is not None:
                        owners.add(name)
        return owners

    def _report(
        self,
        loops: Loops,
        site: CallSite,
        accumulation: Accumulation,
        optimizer: cst.BaseExpression,
        owners: set[str],
    ) -> None:
        k = code_for(accumulation.every)
        call = code_for(site.node)
        message = (
            f"The optimizer steps once every `{k}` backward passes, but `{call}` runs on "
            "every micro-batch: only the last micro-batch's gradients reach the step "
            "(zero them in the step branch, after the step)"
        )
        planned = self._plan(loops, site, accumulation, optimizer, owners)
        if isinstance(planned, str):
            self.report(site.node, message, no_fix_reason=planned)
        else:
            self.report(site.node, message, planned)

    def _plan(
        self,
        loops: Loops,
        site: CallSite,
        accumulation: Accumulation,
        optimizer: cst.BaseExpression,
        owners: set[str],
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
        if _zeroes_in(where, optimizer, owners):
            return Fix(
                f"Remove `{call}`: the step branch already zeroes the gradients",
                {line: cst.RemovalSentinel.REMOVE},
            )
        anchor = _last_before_exit(where)
        return Fix(
            f"Move `{call}` into the step branch, after the step",
            move_statement(line, anchor, after=True),
        )


def _zeroes(site: CallSite, optimizer: cst.BaseExpression, owners: set[str]) -> bool:
    """`<optimizer>.zero_grad(...)` or `<model>.zero_grad(...)` for a model it steps."""
    func = site.node.func
    if not isinstance(func, cst.Attribute) or func.attr.value != "zero_grad":
        return False
    if func.value.deep_equals(optimizer):
        return True
    name = last_name(func.value)
    return name is not None and name in owners


def _manual_loops(
    accumulation: Accumulation, owners: set[str]
) -> list[tuple[cst.For, cst.CSTNode]]:
    """`for p in model.parameters(): p.grad = None` (or `p.grad.zero_()`), a statement
    of the micro-batch loop's own body (so run on every iteration), over a model the
    optimizer steps; with the statement that zeroes."""
    body = accumulation.loop.body
    if not isinstance(body, cst.IndentedBlock):
        return []
    out: list[tuple[cst.For, cst.CSTNode]] = []
    for statement in body.body:
        if not isinstance(statement, cst.For) or not isinstance(statement.target, cst.Name):
            continue
        iterable = statement.iter
        if not (
            isinstance(iterable, cst.Call)
            and isinstance(iterable.func, cst.Attribute)
            and iterable.func.attr.value in _PARAMETERS
            and last_name(iterable.func.value) in owners
        ):
            continue
        zeroing = _zeroing(statement, statement.target.value)
        if zeroing is not None:
            out.append((statement, zeroing))
    return out


def _zeroing(loop: cst.For, name: str) -> cst.CSTNode | None:
    """`<name>.grad = None`, `<name>.grad.zero_()` or `<name>.grad.data.zero_()`."""
    for node in descendants(loop.body):
        if (
            isinstance(node, cst.Assign)
            and isinstance(node.value, cst.Name)
            and node.value.value == "None"
            and any(_is_grad_of(t.target, name) for t in node.targets)
        ):
            return node
        if (
            isinstance(node, cst.Call)
            and isinstance(node.func, cst.Attribute)
            and node.func.attr.value == "zero_"
        ):
            receiver = node.func.value
            if isinstance(receiver, cst.Attribute) and receiver.attr.value == "data":
                receiver = receiver.value
            if _is_grad_of(receiver, name):
                return node
    return None


def _is_grad_of(expr: cst.BaseExpression, name: str) -> bool:
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value == "grad"
        and isinstance(expr.value, cst.Name)
        and expr.value.value == name
    )


def _zeroes_in(where: StepBlock, optimizer: cst.BaseExpression, owners: set[str]) -> bool:
    """The step block already zeroes the gradients after its step."""
    statements = list(where.block.body)
    after = statements[statements.index(where.statement) + 1 :]
    for statement in after:
        for node in descendants(statement):
            if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute):
                if node.func.attr.value != "zero_grad":
                    continue
                if node.func.value.deep_equals(optimizer) or last_name(node.func.value) in owners:
                    return True
    return False


def _last_before_exit(where: StepBlock) -> cst.BaseStatement:
    """The block's last statement, or the one before a final `continue`/`break`/`return`."""
    statements = list(where.block.body)
    last = statements[-1]
    if (
        len(statements) > 1
        and isinstance(last, cst.SimpleStatementLine)
        and isinstance(last.body[-1], (cst.Continue, cst.Break, cst.Return))
    ):
        return statements[-2]
    return last


def _is_one(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Integer) and expr.evaluated_value == 1
