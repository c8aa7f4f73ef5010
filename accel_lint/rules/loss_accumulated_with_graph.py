"""ACL307 loss-accumulated-with-graph: a running total (or list) of the loss that keeps
every step's autograd graph alive. Page: rules/ACL307.md

`total += loss`, `total = total + loss` and `losses.append(loss)` in a loop that
backpropagates `loss`, where `loss` carries its graph (bound to a computation, not to
`.item()` or `.detach()`), and nothing backpropagates the accumulator. The loss may
come from a function of the file that backpropagates it and returns it
(`loss = train_step(batch)`).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.autograd import Autograd, names_read
from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import last_name, returns, sub_expressions
from accel_lint.names import BindingKind, Scope
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification

# Values that no longer carry the graph.
_DETACHING = frozenset({"item", "detach", "detach_", "tolist", "numpy"})
_DETACHING_BUILTINS = frozenset({"float", "int", "round", "str"})


@dataclass(frozen=True)
class _Accumulation:
    statement: cst.BaseSmallStatement  # the reported statement
    target: cst.BaseExpression  # the accumulator
    loss: cst.Name  # the loss as the statement reads it
    scope: Scope
    function: cst.FunctionDef | None
    bodies: tuple[cst.For | cst.While, ...]
    withs: tuple[cst.With, ...]


class LossAccumulatedWithGraph(Rule):
    code = "ACL307"
    name = "loss-accumulated-with-graph"
    summary = "Running loss total that keeps every step's autograd graph alive"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.EXACT)

    def setup(self) -> None:
        self._found: list[_Accumulation] = []
        # per function: its assignments (read only when a candidate needs them)
        self._assignments: dict[cst.FunctionDef | None, list[cst.Assign]] = {}

    def _note(
        self,
        statement: cst.BaseSmallStatement,
        target: cst.BaseExpression,
        value: cst.BaseExpression,
    ) -> None:
        loss = _loss_operand(value)
        if loss is None or not self.facts.bodies:
            return
        facts = self.facts
        self._found.append(
            _Accumulation(
                statement,
                target,
                loss,
                facts.scope,
                facts.function,
                tuple(facts.bodies),
                tuple(facts.withs),
            )
        )

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.operator, cst.AddAssign):
            self._note(node, node.target, node.value)

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assignments.setdefault(self.facts.function, []).append(node)
        if len(node.targets) != 1:
            return
        total = node.targets[0].target
        value = node.value
        if isinstance(value, cst.BinaryOperation) and isinstance(value.operator, cst.Add):
            if value.left.deep_equals(total):
                self._note(node, total, value.right)
            elif value.right.deep_equals(total):
                self._note(node, total, value.left)

    def visit_Expr(self, node: cst.Expr) -> None:
        call = node.value
        if (
            isinstance(call, cst.Call)
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "append"
            and len(call.args) == 1
            and call.args[0].keyword is None
            and not call.args[0].star
        ):
            self._note(node, call.func.value, call.args[0].value)

    def finish(self) -> None:
        if not self._found:
            return
        autograd = Autograd.of(self.facts)
        if not autograd.may_use_torch:
            return
        loops = Loops.of(self.facts)
        for found in self._found:
            if self._keeps_graph(autograd, loops, found):
                self._report(found)

    def _keeps_graph(self, autograd: Autograd, loops: Loops, found: _Accumulation) -> bool:
        if _root(found.target) == found.loss.value:
            return False  # `loss += reg`: the loss itself
        if isinstance(found.statement, cst.Expr) and not self._is_list(found):
            return False
        if any(
            autograd.off_context(item.item, found.scope) for w in found.withs for item in w.items
        ) or (found.function is not None and autograd.function_may_be_off(found.function)):
            return False  # no graph is recorded for the sum
        if not self._carries_graph(autograd, loops, found):
            return False
        return not self._accumulator_backpropagated(autograd, found)

    def _carries_graph(self, autograd: Autograd, loops: Loops, found: _Accumulation) -> bool:
        """`loss` is bound only to computations, and is backpropagated in the same loop
        (or by the function of the file that returned it)."""
        bindings = found.scope.lookup(found.loss.value)
        if not bindings or any(b.kind is BindingKind.IMPORT for b in bindings):
            return False
        innermost = found.bodies[-1]
        from_step = False
        for binding in bindings:
            node = binding.node
            if not isinstance(node, (cst.Assign, cst.AugAssign)):
                return False  # a parameter, a loop variable, a `with` target
            if _detached(node.value):
                return False
            if self._returned_after_backward(autograd, node.value, binding.scope or found.scope):
                from_step = True
        if from_step and loops.runs_backward(innermost):
            return True
        return any(
            innermost in b.site.bodies and found.loss.value in b.names()
            for b in autograd.backwards_in(found.function)
        )

    def _returned_after_backward(
        self, autograd: Autograd, value: cst.BaseExpression, scope: Scope
    ) -> bool:
        """`value` calls a function of the file that backpropagates the name it returns."""
        if not isinstance(value, cst.Call):
            return False
        callee = autograd.calls.local_callee(value, scope)
        if callee is None:
            return False
        func = callee[0]
        values = list(returns(func))
        if not values:
            return False
        backpropagated: set[str] = set()
        for backward in autograd.backwards_in(func):
            backpropagated |= backward.names()
        return all(isinstance(v, cst.Name) and v.value in backpropagated for v in values)

    def _is_list(self, found: _Accumulation) -> bool:
        """The receiver of `append` is a list the file builds (`losses = []`)."""
        target = found.target
        if isinstance(target, cst.Name):
            bindings = found.scope.lookup(target.value) or []
            return bool(bindings) and all(
                isinstance(b.node, cst.Assign) and _is_list_display(b.value) for b in bindings
            )
        if isinstance(target, cst.Attribute) and isinstance(target.value, cst.Name):
            assigned = [
                a
                for a in self.facts.attribute_assignments.get(target.attr.value, ())
                if a.receiver == target.value.value
            ]
            return bool(assigned) and all(_is_list_display(a.value) for a in assigned)
        return False

    def _accumulator_backpropagated(self, autograd: Autograd, found: _Accumulation) -> bool:
        """Something backpropagates the accumulator or a value computed from it."""
        text = code_for(found.target)
        derived = {_root(found.target) or text}
        flows = [
            ({n for t in a.targets for n in names_read(t.target)}, names_read(a.value))
            for a in self._assignments.get(found.function, [])
        ]
        changed = True
        while changed:
            changed = False
            for targets, reads in flows:
                if reads & derived and not targets <= derived:
                    derived |= targets
                    changed = True
        for backward in autograd.backwards_in(found.function):
            if backward.names() & derived:
                return True
        if not isinstance(found.target, cst.Attribute):
            return False
        # `self.total` may be backpropagated by another method
        return any(
            isinstance(node, cst.Attribute) and node.deep_equals(found.target)
            for b in autograd.backwards()
            for node in sub_expressions(b.expr)
        )

    def _report(self, found: _Accumulation) -> None:
        loss = found.loss
        detached = cst.Call(func=cst.Attribute(value=loss, attr=cst.Name("detach")))
        what = code_for(found.statement)
        holder = "list" if isinstance(found.statement, cst.Expr) else "total"
        self.report(
            found.statement,
            f"`{what}` keeps every step's autograd graph alive: `{loss.value}` still "
            f"carries its graph, so the {holder} holds the graphs of all the steps so far "
            "and memory grows with every step",
            Fix(f"Accumulate `{loss.value}.detach()`", {loss: detached}),
        )


def _loss_operand(value: cst.BaseExpression) -> cst.Name | None:
    """The name accumulated: `loss`, `loss * n`, `n * loss`, `loss / n`."""
    if isinstance(value, cst.Name):
        return value if value.value not in ("True", "False", "None") else None
    if isinstance(value, cst.BinaryOperation):
        if isinstance(value.operator, (cst.Multiply, cst.Divide)) and isinstance(
            value.left, cst.Name
        ):
            return _loss_operand(value.left)
        if isinstance(value.operator, cst.Multiply) and isinstance(value.right, cst.Name):
            return _loss_operand(value.right)
    return None


def _detached(value: cst.BaseExpression) -> bool:
    """`x.item()`, `x.detach()`, `x.data`, `float(x)`, a literal: no graph."""
    if isinstance(value, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(value, cst.Attribute):
        return value.attr.value == "data"
    if isinstance(value, cst.Call):
        func = value.func
        if isinstance(func, cst.Attribute):
            return func.attr.value in _DETACHING
        return isinstance(func, cst.Name) and func.value in _DETACHING_BUILTINS
    if isinstance(value, cst.BinaryOperation):
        return _detached(value.left) and _detached(value.right)
    return False


def _is_list_display(value: cst.BaseExpression | None) -> bool:
    if isinstance(value, cst.List):
        return True
    return isinstance(value, cst.Call) and last_name(value.func) == "list" and not value.args


def _root(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
