"""ACL407 find-unused-parameters: `DistributedDataParallel(..., find_unused_parameters=True)`.
Page: rules/ACL407.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import CallSite
from accel_lint.facts.autograd import Autograd
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.evaluation import named_for_evaluation
from accel_lint.facts.syntax import last_name
from accel_lint.facts.training import Training
from accel_lint.facts.wrappers import Wrap, Wrappers
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import DDP

_KEYWORD = "find_unused_parameters"
_MESSAGE = (
    "`find_unused_parameters=True` makes DistributedDataParallel traverse the autograd "
    "graph after every forward to find parameters without a gradient; remove it when "
    "every parameter receives one (`accel-lint verify` shows whether they all do)"
)


class FindUnusedParameters(Rule):
    code = "ACL407"
    name = "find-unused-parameters"
    summary = "DistributedDataParallel(find_unused_parameters=True): a graph traversal every step"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        self._returns: list[tuple[cst.Return, Scope]] = []
        self._evaluates_only: bool | None = None

    def visit_Return(self, node: cst.Return) -> None:
        if node.value is not None:
            self._returns.append((node, self.facts.scope))

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(DDP):
            for arg in site.node.args:
                if arg.keyword is not None and arg.keyword.value == _KEYWORD:
                    if self._is_true(arg.value, site) and not self._only_evaluated():
                        self.report(arg, _MESSAGE)
                elif arg.star == "**" and isinstance(arg.value, cst.Name):
                    # `ddp_args = dict(find_unused_parameters=True)`, splatted in
                    spread = self.facts.kwargs_dict(arg.value, site.scope)
                    if spread is None or not spread.resolvable:
                        continue
                    value = spread.values.get(_KEYWORD)
                    conditional = _KEYWORD in spread.conditional_keys
                    if (
                        value is not None
                        and not conditional
                        and self._is_true(value, site)
                        and not self._only_evaluated()
                    ):
                        self.report(arg, _MESSAGE)

    def _is_true(self, value: cst.BaseExpression, site: CallSite) -> bool:
        """`True`, or a name the file binds once to `True` (a module constant)."""
        literal = self.facts.literal_value(value, site.scope)
        return isinstance(literal, cst.Name) and literal.value == "True"

    def _only_evaluated(self) -> bool:
        if self._evaluates_only is None:
            self._evaluates_only = self._evaluation_script()
        return self._evaluates_only

    def _evaluation_script(self) -> bool:
        """The file never trains its wrapped models: it runs no backward pass, steps no
        optimizer, returns no wrapped model, and hands them only to evaluation functions
        (its own when they run with autograd off, imported ones by their name:
        `evaluate(data_loader_val, model, device)`) or calls them with autograd off. DDP
        looks for unused parameters only in a forward that records a graph
        (`torch.is_grad_enabled()`), and without a backward pass none waits for a
        gradient: the flag costs nothing there."""
        training = Training.of(self.facts)
        if training.trains or training.optimizer_steps():
            return False
        wrappers = Wrappers.of(self.facts)
        autograd = Autograd.of(self.facts)
        calls = CallGraph.of(self.facts)
        evaluated = False
        for site in self.facts.calls:
            call = site.node
            if resolves_to(call.func, site.scope, DDP):
                continue  # the wrap itself
            if wrappers.wrap_state(call.func, site.scope, DDP, call) is not Wrap.NO:
                if not autograd.may_be_off(site):
                    return False  # a forward that records a graph: the search runs
                evaluated = True
                continue
            if all(
                wrappers.wrap_state(arg.value, site.scope, DDP, call) is Wrap.NO
                for arg in call.args
            ):
                continue
            if not named_for_evaluation(last_name(call.func) or ""):
                return False
            callee = calls.local_callee(call, site.scope)
            if callee is not None and not autograd.function_may_be_off(callee[0]):
                return False
            evaluated = True
        if any(
            wrappers.wrap_state(node.value, scope, DDP, node) is not Wrap.NO
            for node, scope in self._returns
            if node.value is not None
        ):
            return False
        return evaluated
