"""ACL413 barrier-every-step: `torch.distributed.barrier()` on every training step.
Page: rules/ACL413.md

"Every training step" is every iteration of a loop that runs a backward pass, here or
in a function of the file it calls, with the call under no condition of that loop (a
step count, an epoch end, a rank). A test of the machine or of whether the job is
distributed (`if dist.is_initialized():`, `if args.distributed:`, `if world_size > 1:`)
is true on every step or on none: it is not such a condition.
"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.facts.file import Guard
from accel_lint.facts.loops import Loops, machine_test
from accel_lint.facts.statements import Statements
from accel_lint.facts.syntax import last_name
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import BARRIER

_DISTRIBUTED_FLAG = re.compile(r"^(?:is_)?(?:use_)?(?:distributed|ddp|multi_?gpu|dist)$", re.I)
_DISTRIBUTED_CALLS = frozenset({"is_initialized", "is_available", "is_dist_avail_and_initialized"})
_WORLD_SIZE = re.compile(r"world_size|num_processes|n_?gpus|num_gpus", re.I)


class BarrierEveryStep(Rule):
    code = "ACL413"
    name = "barrier-every-step"
    summary = "torch.distributed.barrier() on every training step"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT)

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(BARRIER)
        if not sites:
            return
        loops = Loops.of(self.facts)
        for site in sites:
            if loops.every_step(site, ignoring=_same_on_every_step) is None:
                continue
            message = (
                f"`{last_name(site.node.func)}()` runs on every training step: every process "
                "waits for the slowest at each step (a collective and a host synchronization), "
                "and a rank that skips a step hangs the others"
            )
            removal = Statements.of(self.facts).removal(site.node)
            if removal is None:
                self.report(
                    site.node,
                    message,
                    no_fix_reason="the call is part of a larger statement; remove it by hand",
                )
            else:
                self.report(site.node, message, Fix("Remove the barrier", removal))


def _same_on_every_step(guard: Guard) -> bool:
    """A test of the machine or of the job's setup, true on every step or on none."""
    return machine_test(guard) or _tests_distributed(guard[0])


def _tests_distributed(test: cst.BaseExpression) -> bool:
    if isinstance(test, cst.BooleanOperation):
        return _tests_distributed(test.left) and _tests_distributed(test.right)
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _tests_distributed(test.expression)
    if isinstance(test, cst.Call):
        return not test.args and last_name(test.func) in _DISTRIBUTED_CALLS
    if isinstance(test, (cst.Name, cst.Attribute)):
        return bool(_DISTRIBUTED_FLAG.match(last_name(test) or ""))
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        left, right = test.left, test.comparisons[0].comparator
        size = left if isinstance(right, cst.Integer) else right
        if isinstance(size, cst.Call):
            size = size.func
        return isinstance(size, (cst.Name, cst.Attribute)) and bool(
            _WORLD_SIZE.search(last_name(size) or "")
        )
    return False
