"""ACL407 find-unused-parameters: `DistributedDataParallel(..., find_unused_parameters=True)`.
Page: rules/ACL407.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import CallSite
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

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(DDP):
            for arg in site.node.args:
                if arg.keyword is not None and arg.keyword.value == _KEYWORD:
                    if self._is_true(arg.value, site):
                        self.report(arg, _MESSAGE)
                elif arg.star == "**" and isinstance(arg.value, cst.Name):
                    # `ddp_args = dict(find_unused_parameters=True)`, splatted in
                    spread = self.facts.kwargs_dict(arg.value, site.scope)
                    if spread is None or not spread.resolvable:
                        continue
                    value = spread.values.get(_KEYWORD)
                    conditional = _KEYWORD in spread.conditional_keys
                    if value is not None and not conditional and self._is_true(value, site):
                        self.report(arg, _MESSAGE)

    def _is_true(self, value: cst.BaseExpression, site: CallSite) -> bool:
        """`True`, or a name the file binds once to `True` (a module constant)."""
        literal = self.facts.literal_value(value, site.scope)
        return isinstance(literal, cst.Name) and literal.value == "True"
