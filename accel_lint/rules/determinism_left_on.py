"""ACL317 determinism-left-on (off by default): `torch.use_deterministic_algorithms(True)`
or `torch.backends.cudnn.deterministic = True` set unconditionally in a training entry
point: every run pays for deterministic kernels, which are slower (and some ops
raise), where only a debugging or reproducibility run needs them. Page: rules/ACL317.md

A training entry point is a file with a training loop (backward and an optimizer
step) that runs as a script: it has an `if __name__ == "__main__":` guard, or trains
at module level. "Unconditionally": not under an `if` or in a loop (a flag such as
`args.deterministic` is a choice), at module level or in a function the file calls.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import conditions
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import is_main_test
from accel_lint.names import qualified_names
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import CUDNN_DETERMINISTIC, USE_DETERMINISTIC_ALGORITHMS


class DeterminismLeftOn(Rule):
    code = "ACL317"
    name = "determinism-left-on"
    summary = "Deterministic algorithms switched on unconditionally in a training script"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        self._assignments: list[tuple[cst.Assign, cst.FunctionDef | None]] = []
        self._main_guard = False

    def visit_If(self, node: cst.If) -> None:
        if self.facts.function is None and not self.facts.guards and is_main_test(node.test):
            self._main_guard = True

    def visit_Assign(self, node: cst.Assign) -> None:
        if conditions(self.facts.guards) or self.facts.loops:
            return
        if not (isinstance(node.value, cst.Name) and node.value.value == "True"):
            return
        for target in node.targets:
            attr = target.target
            if (
                isinstance(attr, cst.Attribute)
                and attr.attr.value == "deterministic"
                and qualified_names(attr, self.facts.scope) == {CUDNN_DETERMINISTIC}
            ):
                self._assignments.append((node, self.facts.function))

    def finish(self) -> None:
        switches: list[tuple[cst.CSTNode, cst.FunctionDef | None, str]] = [
            (node, function, "`torch.backends.cudnn.deterministic = True`")
            for node, function in self._assignments
        ]
        for site in self.facts.calls_resolving_to(USE_DETERMINISTIC_ALGORITHMS):
            args = site.node.args
            first = args[0].value if args and args[0].keyword is None else None
            if first is None or not (isinstance(first, cst.Name) and first.value == "True"):
                continue
            if conditions(site.guards) or site.loops:
                continue
            switches.append(
                (site.node, site.function, "`torch.use_deterministic_algorithms(True)`")
            )
        if not switches or not self._entry_point():
            return
        graph = CallGraph.of(self.facts)
        for node, function, what in switches:
            if function is not None and not graph.calls_to(function):
                continue  # a helper nobody here calls
            self.report(
                node,
                f"{what} is left on in a training script: every run uses the slower "
                "deterministic kernels (cuDNN stops autotuning); switch it on behind a "
                "reproducibility or debug flag",
            )

    def _entry_point(self) -> bool:
        loops = Loops.of(self.facts)
        training = loops.training_loops()
        if not training or not any(loops.trains(loop) for loop in training):
            return False
        steps = self.facts.method_calls("step")
        if not steps:
            return False
        return self._main_guard or any(loops.site(loop).function is None for loop in training)
