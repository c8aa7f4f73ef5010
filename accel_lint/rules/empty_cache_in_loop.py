"""ACL315 empty-cache-in-loop: `torch.cuda.empty_cache()` (or its `torch.mps`,
`torch.xpu`, `torch.accelerator` equivalents) on every training step.
Page: rules/ACL315.md

"Every training step" is every iteration of a loop that runs a backward pass, here or
in a function of the file it calls, with the call not under a condition of that loop
(`if step % 100 == 0:` runs it now and then); a test of whether a device is there
(`if torch.cuda.is_available():`) is not such a condition.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.loops import Loops, machine_test
from accel_lint.facts.statements import Statements
from accel_lint.facts.syntax import last_name
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import EMPTY_CACHE


class EmptyCacheInLoop(Rule):
    code = "ACL315"
    name = "empty-cache-in-loop"
    summary = "torch.cuda.empty_cache() on every training step"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.EXACT,
        needs_accelerator="empty_cache() only returns an accelerator's cached memory",
    )

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(EMPTY_CACHE)
        if not sites:
            return
        loops = Loops.of(self.facts)
        for site in sites:
            if loops.every_step(site, ignoring=machine_test) is None:
                continue
            message = (
                f"`{last_name(site.node.func)}()` runs on every training step: it hands the "
                "allocator's cached blocks back to the driver, and the next step has to "
                "allocate them again with slow, synchronizing device calls"
            )
            fix = self._fix(site.node)
            if fix is None:
                self.report(
                    site.node,
                    message,
                    no_fix_reason="the call is part of a larger statement; remove it by hand",
                )
            else:
                self.report(site.node, message, fix)

    def _fix(self, call: cst.Call) -> Fix | None:
        removal = Statements.of(self.facts).removal(call)
        return Fix("Remove the call", removal) if removal is not None else None
