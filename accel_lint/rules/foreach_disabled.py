"""ACL316 foreach-disabled: `foreach=False` passed to a `torch.optim` optimizer (or a
subclass of one the file defines) in a file that trains on CUDA: the update runs one
small kernel per parameter instead of a few multi-tensor kernels. Page: rules/ACL316.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.optimizers import Optimizers
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import FOREACH_OPTIMIZERS


class ForeachDisabled(Rule):
    code = "ACL316"
    name = "foreach-disabled"
    summary = "foreach=False on a torch.optim optimizer in a script that trains on CUDA"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.CLOSE,
        needs_accelerator="the multi-tensor (foreach) kernels are the default on CUDA only",
    )

    def finish(self) -> None:
        if not self.facts.touches_cuda:
            return
        for site, torch_class in Optimizers.of(self.facts).built(FOREACH_OPTIMIZERS):
            call = site.node
            for index, arg in enumerate(call.args):
                if arg.keyword is None or arg.keyword.value != "foreach":
                    continue
                value = self.facts.literal_value(arg.value, site.scope)
                if not (isinstance(value, cst.Name) and value.value == "False"):
                    continue
                name = torch_class.rsplit(".", 1)[-1]
                self.report(
                    arg,
                    f"`foreach=False` makes {name} update each parameter with its own small "
                    "kernels; on CUDA the default (foreach) updates them all in a few "
                    "multi-tensor kernels",
                    Fix("Remove `foreach=False`", {call: _without(call, index)}),
                )


def _without(call: cst.Call, index: int) -> cst.Call:
    args = list(call.args)
    removed = args.pop(index)
    if args and index == len(args):  # it was the last: the new last takes its comma
        args[-1] = args[-1].with_changes(comma=removed.comma)
    return call.with_changes(args=args)
