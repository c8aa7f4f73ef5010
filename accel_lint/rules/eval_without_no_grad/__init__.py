"""ACL311 eval-without-no-grad: evaluation code that records autograd graphs no
backward pass will use. Page: rules/ACL311.md

Evaluation functions come from `facts.evaluation` (a module called in a loop over
data, plus `.eval()` or an evaluation name); `facts.autograd` says whether autograd
may be off there (a `with`, a decorator, a statement, or every call site in the
file) and whether the function needs gradients. The fix decorates the function
with `@torch.no_grad()`; `safety` says whether that is invisible to its callers.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite
from accel_lint.facts.autograd import Autograd, names_read
from accel_lint.facts.evaluation import EvaluationFunction, Evaluations
from accel_lint.facts.syntax import last_name
from accel_lint.facts.torch_objects import Kind, TorchObjects
from accel_lint.names import spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.rules.eval_without_no_grad.safety import ReturnsPlainNumbers
from accel_lint.walk import all_children

__all__ = ["EvalWithoutNoGrad"]


class EvalWithoutNoGrad(Rule):
    code = "ACL311"
    name = "eval-without-no-grad"
    summary = "Evaluation loop that records autograd graphs: not under torch.no_grad()"
    fix_safety = FixSafety.VARIES
    verification = Verification(Equivalence.EXACT)

    def setup(self) -> None:
        # the assignment whose value each expression is (`preds = predict(...)`)
        self._assigned: dict[int, cst.Assign] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        self._assigned[id(node.value)] = node

    def finish(self) -> None:
        autograd = Autograd.of(self.facts)
        if autograd.switched_off_at_module_level or not autograd.may_use_torch:
            return
        for found in Evaluations.of(self.facts).functions():
            func = found.function
            if autograd.needs_grad(func) or autograd.function_may_be_off(func):
                continue
            if any(autograd.may_be_off(site) for site in found.module_calls):
                continue  # some forward passes already run without autograd
            if self._backpropagated_by_caller(autograd, found):
                continue
            if all(self._records_nothing(site) for site in found.module_calls):
                continue
            self._report(found)

    def _records_nothing(self, site: CallSite) -> bool:
        """The called module is not torch's (a Keras or scikit-learn model), or the file
        freezes it (`model.requires_grad_(False)`, or `p.requires_grad = False` for each
        of its parameters): calling it records no graph."""
        func = site.node.func
        if isinstance(func, cst.Attribute) and func.attr.value == "forward":
            func = func.value
        if TorchObjects.of(self.facts).kind(func, site.scope) is Kind.OTHER:
            return True
        name = last_name(func)
        for call in self.facts.method_calls("requires_grad_"):
            receiver = call.node.func
            assert isinstance(receiver, cst.Attribute)
            if last_name(receiver.value) == name and _first_is_false(call.node):
                return True
        for loop in self.facts.loop_sites.values():
            iterable = loop.node.iter if isinstance(loop.node, cst.For) else None
            if (
                isinstance(iterable, cst.Call)
                and last_name(iterable.func) in ("parameters", "named_parameters")
                and isinstance(iterable.func, cst.Attribute)
                and last_name(iterable.func.value) == name
            ):
                body = code_for(loop.node.body)
                if "requires_grad = False" in body or "requires_grad_(False)" in body:
                    return True
        return False

    def _backpropagated_by_caller(self, autograd: Autograd, found: EvaluationFunction) -> bool:
        """A caller backpropagates through what the function returns: it is part of a
        training step, not an evaluation."""
        for site in autograd.calls.calls_to(found.function):
            assignment = self._assigned.get(id(site.node))
            results: set[str] = set()
            if assignment is not None:
                for target in assignment.targets:
                    results |= names_read(target.target)
            for backward in autograd.backwards_in(site.function):
                read = backward.names()
                if results & read or _contains(backward.expr, site.node):
                    return True
                # one assignment away: `loss = criterion(preds, y)`
                for name in read:
                    for assigned in self._assignments_to(name, site):
                        if results & names_read(assigned.value) or _contains(
                            assigned.value, site.node
                        ):
                            return True
        return False

    def _assignments_to(self, name: str, site: CallSite) -> list[cst.Assign]:
        bindings = site.scope.lookup(name) or []
        return [b.node for b in bindings if isinstance(b.node, cst.Assign)]

    def _report(self, found: EvaluationFunction) -> None:
        func = found.function
        scope = self.facts.scope_of[func].parent
        assert scope is not None
        spelled, needed = spelling_for("torch.no_grad", scope)
        decorator = cst.Decorator(cst.parse_expression(f"{spelled}()"))
        fixed = func.with_changes(decorators=[*func.decorators, decorator])
        safe = ReturnsPlainNumbers(self.facts, func).holds()
        if safe:
            how = "it returns only plain numbers, so nothing else changes"
        else:
            how = (
                "unsafe: it hands back tensors computed from the module's outputs, which "
                "lose their `grad_fn`"
            )
        fix = Fix(
            f"Decorate `{func.name.value}` with `@{spelled}()` ({how})",
            {func: fixed},
            (needed,) if needed else (),
            safety=FixSafety.SAFE if safe else FixSafety.UNSAFE,
        )
        module = code_for(found.module_calls[0].node.func)
        self.report(
            found.loops[0],
            f"Evaluation in `{func.name.value}()` runs `{module}` with autograd on: every "
            "forward pass records a graph and keeps its activations alive, though nothing "
            "calls backward (`.eval()` does not switch autograd off)",
            fix,
        )


def _first_is_false(call: cst.Call) -> bool:
    return bool(call.args) and (
        isinstance(call.args[0].value, cst.Name) and call.args[0].value.value == "False"
    )


def _contains(expr: cst.CSTNode, node: cst.CSTNode) -> bool:
    stack = [expr]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        stack.extend(all_children(current))
    return False
