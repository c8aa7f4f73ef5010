"""ACL310 accumulated-loss-not-scaled: gradient accumulation whose loss is not divided
by the number of accumulated backward passes. Page: rules/ACL310.md

The accumulation (the optimizer stepped every k backward passes) comes from
`Loops.accumulations()`. The loss counts as scaled when anything divides or
multiplies it on its way to `backward()` (`loss / k`, `loss /= k`, `loss = loss * w`,
`criterion(...) / k`), when it comes from a function that may scale it, when the
criterion sums instead of averaging (`reduction="sum"`: summed gradients are then
what the whole batch asks for), and when a framework's `backward(loss)` (accelerate,
Lightning, DeepSpeed) may scale it itself.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.autograd import Autograd, Backward, names_read
from accel_lint.facts.file import CallSite
from accel_lint.facts.literals import int_value, string_value
from accel_lint.facts.loops import Accumulation, Loops
from accel_lint.facts.syntax import returns, sub_expressions
from accel_lint.names import Scope
from accel_lint.rule import FixSafety, Rule

_SCALING = (cst.Divide, cst.Multiply, cst.FloorDivide)
_SCALING_AUGMENTED = (cst.DivideAssign, cst.MultiplyAssign, cst.FloorDivideAssign)
# tensor methods that scale: `loss.sum().mul(scale / batch)` is `loss.sum() * ...`
_SCALING_METHODS = ("mul", "mul_", "div", "div_", "multiply", "divide", "true_divide")
_MAX_DEPTH = 4
# a name bound more often than this is not followed
_MAX_BINDINGS = 16


class AccumulatedLossNotScaled(Rule):
    code = "ACL310"
    name = "accumulated-loss-not-scaled"
    summary = "Gradient accumulation whose loss is not divided by the number of micro-batches"
    fix_safety = FixSafety.NONE

    def finish(self) -> None:
        accumulations = Loops.of(self.facts).accumulations()
        if not accumulations:
            return
        autograd = Autograd.of(self.facts)
        if not autograd.may_use_torch:
            return
        reported: set[int] = set()
        for accumulation in accumulations:
            backward = self._backward(autograd, accumulation.backward)
            if backward is None or id(backward.site.node) in reported:
                continue
            if _is_one(accumulation.every) or not _tensor_backward(backward):
                continue
            if self._scaled(autograd, backward.expr, backward.site.scope, accumulation, 0):
                continue
            reported.add(id(backward.site.node))
            self._report(backward, accumulation)

    def _backward(self, autograd: Autograd, site: CallSite) -> Backward | None:
        """The backward pass `site` runs: itself, or the only one of the function of the
        file it calls."""
        for backward in autograd.backwards():
            if backward.site.node is site.node:
                return backward
        callee = autograd.calls.local_callee(site.node, site.scope)
        if callee is None:
            return None
        inner = list(autograd.backwards_in(callee[0]))
        return inner[0] if len(inner) == 1 else None

    def _scaled(
        self,
        autograd: Autograd,
        expr: cst.BaseExpression,
        scope: Scope,
        accumulation: Accumulation,
        depth: int,
    ) -> bool:
        """Something on the way from the loss's computation to `backward()` may scale it
        (precision first: what cannot be read counts as scaled)."""
        if depth > _MAX_DEPTH:
            return True
        expr = _unwrap(expr)
        if isinstance(expr, cst.BinaryOperation):
            return isinstance(expr.operator, _SCALING) or any(
                self._scaled(autograd, side, scope, accumulation, depth + 1)
                for side in (expr.left, expr.right)
            )
        if isinstance(expr, cst.Call):
            return self._scaled_call(autograd, expr, scope, accumulation, depth)
        if isinstance(expr, cst.Subscript):  # `outputs[0]`
            return self._scaled(autograd, expr.value, scope, accumulation, depth + 1)
        if isinstance(expr, cst.Attribute):  # `outputs.loss`
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return True  # a loss kept on the object: set who knows where
            return self._scaled(autograd, expr.value, scope, accumulation, depth + 1)
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if not bindings or len(bindings) > _MAX_BINDINGS:
                # unknown, or bound all over a long script (each accumulation following
                # every binding would be quadratic): what cannot be read counts as scaled
                return True
            for binding in bindings:
                node = binding.node
                if isinstance(node, cst.AugAssign):
                    if isinstance(node.operator, _SCALING_AUGMENTED):
                        return True
                    if self._scaled(autograd, node.value, scope, accumulation, depth + 1):
                        return True
                elif isinstance(node, (cst.Assign, cst.AnnAssign)) and node.value is not None:
                    if self._scaled(autograd, node.value, scope, accumulation, depth + 1):
                        return True
                else:
                    return True  # a parameter, a loop variable, a `with` target
            return False
        return not isinstance(expr, (cst.Integer, cst.Float))

    def _scaled_call(
        self,
        autograd: Autograd,
        call: cst.Call,
        scope: Scope,
        accumulation: Accumulation,
        depth: int,
    ) -> bool:
        if any(_passes_k(arg, accumulation.every) for arg in call.args):
            return True  # `compute_loss(batch, accum_steps)`: it may divide
        method = call.func
        if isinstance(method, cst.Attribute) and method.attr.value in _SCALING_METHODS:
            return bool(call.args)
        if _sums(call, scope):
            return True
        callee = autograd.calls.local_callee(call, scope)
        if callee is not None:
            # a function of the file: scaled if anything it returns may be
            func = callee[0]
            inner = autograd.facts.scope_of.get(func)
            if inner is None:
                return True
            values = list(returns(func))
            return not values or any(
                v is None or self._scaled(autograd, v, inner, accumulation, depth + 1)
                for v in values
            )
        return self._criterion_knows(call, scope, accumulation)

    def _criterion_knows(self, call: cst.Call, scope: Scope, accumulation: Accumulation) -> bool:
        """`criterion(out, y)` where `criterion = nn.XLoss(reduction="sum")`, or a
        criterion built with the accumulation count (`Loss(batch=batch // k)`), which it
        may divide by."""
        func = call.func
        if not isinstance(func, cst.Name):
            return False
        for binding in scope.lookup(func.value) or []:
            built = binding.value
            if not isinstance(built, cst.Call):
                continue
            if _sums(built, scope) or any(_passes_k(a, accumulation.every) for a in built.args):
                return True
        return False

    def _report(self, backward: Backward, accumulation: Accumulation) -> None:
        k = code_for(accumulation.every)
        loss = code_for(backward.expr)
        self.report(
            backward.site.node,
            f"The optimizer steps once every `{k}` backward passes, but `{loss}` is not "
            f"divided by `{k}`: each update follows the sum of the micro-batches' "
            "gradients instead of their mean, as if the learning rate were that many times "
            "larger",
        )


def _passes_k(arg: cst.Arg, every: cst.BaseExpression) -> bool:
    """The argument reads the accumulation count (`accum_steps`, `args.accum_iter`) or is
    named for it (`grad_accum=...`)."""
    if arg.keyword is not None and "accum" in arg.keyword.value.lower():
        return True
    if isinstance(every, cst.Name):
        return every.value in names_read(arg.value)
    return any(e.deep_equals(every) for e in sub_expressions(arg.value))


def _unwrap(expr: cst.BaseExpression) -> cst.BaseExpression:
    """`loss` for `loss.mean()`, `loss.sum()`, `loss.float()`: reductions and casts keep
    the loss's scale."""
    while (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in ("mean", "sum", "float", "half", "double", "squeeze")
        and not expr.args
    ):
        expr = expr.func.value
    return expr


def _tensor_backward(backward: Backward) -> bool:
    """`loss.backward()` (a GradScaler's or apex's too), not a framework's
    `backward(loss)` that may divide by its own accumulation count."""
    func = backward.site.node.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "backward"
        and not any(a.keyword is None for a in backward.site.node.args)
    )


def _sums(call: cst.Call, scope: Scope) -> bool:
    """A loss call or constructor given `reduction="sum"` (or the old `size_average=False`)."""
    for arg in call.args:
        if arg.keyword is None:
            continue
        if arg.keyword.value == "reduction":
            return string_value(arg.value) != "mean"
        if arg.keyword.value in ("size_average", "reduce"):
            return True
    return False


def _is_one(expr: cst.BaseExpression) -> bool:
    return int_value(expr) == 1
