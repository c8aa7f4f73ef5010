"""ACL202 cudnn-autotuner-off: a file that trains convolutions on CUDA and never sets
`torch.backends.cudnn.benchmark = True`. Page: rules/ACL202.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.entry import Entry
from accel_lint.facts.training import Training
from accel_lint.names import Scope, qualified_names, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import (
    CONV,
    CUDNN_BENCHMARK,
    CUDNN_DETERMINISTIC,
    CUDNN_ENABLED,
    CUDNN_FLAGS,
    CUDNN_MODULE,
    USE_DETERMINISTIC_ALGORITHMS,
)

_FLAGS = ("benchmark", "deterministic", "enabled")
_SETATTR = frozenset({"builtins.setattr"})


class CudnnAutotunerOff(Rule):
    code = "ACL202"
    name = "cudnn-autotuner-off"
    summary = "Convolutions trained on CUDA without torch.backends.cudnn.benchmark = True"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.CLOSE, needs_accelerator="the cuDNN autotuner exists only on CUDA"
    )

    def setup(self) -> None:
        # (target, assigned value or None when unpacked from something else, scope)
        self._stores: list[tuple[cst.Attribute, cst.BaseExpression | None, Scope]] = []

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._note(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note(node.target, node.value)

    def _note(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        if isinstance(target, cst.Attribute):
            if target.attr.value in _FLAGS:
                self._stores.append((target, value, self.facts.scope))
        elif isinstance(target, (cst.Tuple, cst.List)):
            # `cudnn.benchmark, cudnn.deterministic = False, True`
            values: list[cst.BaseExpression | None] = [None] * len(target.elements)
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(values):
                values = [e.value for e in value.elements]
            for element, inner in zip(target.elements, values):
                self._note(element.value, inner)

    def finish(self) -> None:
        facts = self.facts
        if not facts.touches_cuda or not Training.of(facts).trains:
            return
        convs = facts.calls_resolving_to(CONV)
        if not convs or self._chosen():
            return
        message = (
            "Convolutions train on CUDA with the cuDNN autotuner off: "
            "`torch.backends.cudnn.benchmark` is never set, so cuDNN picks each "
            "convolution's algorithm by heuristics instead of timing them once per input shape"
        )
        entry = Entry.of(facts)
        insertion = entry.insertion(CUDNN_MODULE, "{}.benchmark = True")
        if insertion is None:
            reason = entry.reason or "no place for the setting"
            self.report(convs[0].node, message, no_fix_reason=reason)
            return
        fix = Fix(
            f"Set `{insertion.code}` {insertion.where}",
            insertion.replacements,
            insertion.imports,
        )
        self.report(convs[0].node, message, fix)

    def _chosen(self) -> bool:
        """The file sets the autotuner, or chooses determinism or cuDNN's flags itself."""
        for target, value, scope in self._stores:
            names = qualified_names(target, scope)
            if not names:
                continue
            if names <= CUDNN_BENCHMARK:
                return True
            if names == {CUDNN_DETERMINISTIC} and not _is(value, "False"):
                return True
            if names <= CUDNN_ENABLED and not _is(value, "True"):
                return True
        facts = self.facts
        if facts.calls_resolving_to(CUDNN_FLAGS):
            return True
        for site in facts.calls_resolving_to(USE_DETERMINISTIC_ALGORITHMS):
            args = site.node.args
            if not args or not _is(facts.literal_value(args[0].value, site.scope), "False"):
                return True
        for site in facts.calls_resolving_to(_SETATTR):
            args = site.node.args
            if args and resolves_to(args[0].value, site.scope, frozenset({CUDNN_MODULE})):
                return True
        return False


def _is(value: cst.BaseExpression | None, literal: str) -> bool:
    return isinstance(value, cst.Name) and value.value == literal
