"""ACL309 fused-optimizer-available (off by default): `torch.optim.Adam`, `AdamW` or
`SGD` on CUDA parameters without `fused=`: foreach is already the default on CUDA,
and only `fused=True` (opt-in) does the whole update in one kernel per parameter
group. Page: rules/ACL309.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword
from accel_lint.facts import CallSite
from accel_lint.facts.devices import Devices
from accel_lint.facts.optimizers import Optimizers
from accel_lint.facts.torch_objects import TorchObjects
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import APEX_AMP, FUSED_OPTIMIZERS

# `fused=True` exists for Adam and AdamW from torch 2.0, for SGD from 2.3
_FUSED_SINCE = {"Adam": (2, 0), "AdamW": (2, 0), "SGD": (2, 3)}


class FusedOptimizerAvailable(Rule):
    code = "ACL309"
    name = "fused-optimizer-available"
    summary = "Adam/AdamW/SGD on CUDA parameters without fused=: the fused kernels are opt-in"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.CLOSE,
        needs_accelerator="the fused optimizer kernels only pay off on CUDA parameters",
    )

    def finish(self) -> None:
        if not self.facts.touches_cuda or TorchObjects.of(self.facts).captures_cuda_graphs():
            return  # a captured step has its own rules (capturable state, static tensors)
        for site, torch_class in Optimizers.of(self.facts).built(FUSED_OPTIMIZERS):
            call = site.node
            if any(arg.star == "**" for arg in call.args):
                continue  # `fused` may be in the dict
            keywords = {arg.keyword.value: arg.value for arg in call.args if arg.keyword}
            if "fused" in keywords or self._on_cpu(site):
                continue
            name = torch_class.rsplit(".", 1)[-1]
            target = self.ctx.target_torch
            since = _FUSED_SINCE.get(name)
            if target is not None and since is not None and target < since:
                continue  # not available on the oldest torch the code supports
            message = (
                f"{name} runs its update as foreach kernels (the CUDA default); "
                "`fused=True` does the whole update in one kernel per parameter group"
            )
            reason = self._no_fix(name, keywords)
            if reason is not None:
                self.report(call, message, no_fix_reason=reason)
            else:
                self.report(
                    call,
                    message,
                    Fix("Add `fused=True`", {call: add_keyword(call, "fused", "True")}),
                )

    def _on_cpu(self, site: CallSite) -> bool:
        """The parameters are a module's (`model.parameters()`) that never leaves the
        CPU in this file: fused kernels would not be used, and CPU fused SGD is new."""
        first = next((a.value for a in site.node.args if a.keyword is None), None)
        if first is None:
            first = next(
                (a.value for a in site.node.args if a.keyword and a.keyword.value == "params"),
                None,
            )
        if (
            not isinstance(first, cst.Call)
            or not isinstance(first.func, cst.Attribute)
            or first.func.attr.value not in ("parameters", "named_parameters")
        ):
            return False
        return Devices.of(self.facts).stays_on_cpu(first.func.value, site.scope)

    def _no_fix(self, name: str, keywords: dict[str, cst.BaseExpression]) -> str | None:
        if self.facts.calls_resolving_to(APEX_AMP):
            return "apex.amp wraps the optimizer's step, which the fused kernels do not expect"
        for key in ("foreach", "differentiable"):
            value = keywords.get(key)
            if value is not None and not (isinstance(value, cst.Name) and value.value == "False"):
                return f"`{key}=` is set, and `fused=True` cannot be combined with it"
        return None
