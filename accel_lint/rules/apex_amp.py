"""ACL306 apex-amp: NVIDIA apex's mixed precision (`amp.initialize`, `amp.scale_loss`),
which apex itself deprecates in favour of `torch.amp`. Page: rules/ACL306.md"""

from __future__ import annotations

from accel_lint.facts.syntax import last_name
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import APEX_AMP


class ApexAmp(Rule):
    code = "ACL306"
    name = "apex-amp"
    summary = "apex.amp (amp.initialize, amp.scale_loss): deprecated by apex, use torch.amp"
    fix_safety = FixSafety.NONE

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(APEX_AMP):
            called = last_name(site.node.func)
            if called == "scale_loss":
                advice = (
                    "scale the loss with `torch.amp.GradScaler` (`scaler.scale(loss).backward()`)"
                )
            else:
                advice = (
                    "run the forward under `torch.autocast` and step through "
                    "`torch.amp.GradScaler`; keep the model and optimizer in float32"
                )
            self.report(
                site.node,
                f"`apex.amp.{called}` is deprecated by apex itself and no longer maintained: "
                + advice,
            )
