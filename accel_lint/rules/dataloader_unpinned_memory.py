"""ACL102 dataloader-unpinned-memory: a DataLoader without `pin_memory=True` in a
file that moves data to a CUDA device. Page: rules/ACL102.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword
from accel_lint.facts.loader_args import passed
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import DATALOADER


class DataloaderUnpinnedMemory(Rule):
    code = "ACL102"
    name = "dataloader-unpinned-memory"
    summary = "DataLoader without pin_memory=True in a script that trains on CUDA"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.EXACT,
        needs_accelerator="pinned memory only speeds up copies from the host to an accelerator",
    )

    def setup(self) -> None:
        self._calls: list[tuple[cst.Call, Scope]] = []

    def visit_Call(self, node: cst.Call) -> None:
        self._calls.append((node, self.facts.scope))

    def finish(self) -> None:
        if not self.facts.touches_cuda:
            return
        for call, scope in self._calls:
            if resolves_to(call.func, scope, DATALOADER):
                self._check(call, scope)

    def _check(self, call: cst.Call, scope: Scope) -> None:
        got = passed(call, "pin_memory", self.facts, scope)
        if not got.known or got.conditional:
            return
        if got.absent:
            fix = Fix("Add `pin_memory=True`", {call: add_keyword(call, "pin_memory", "True")})
            self.report(
                call,
                "DataLoader returns pageable memory, so every host-to-GPU copy is synchronous "
                "and staged: `pin_memory` is not set",
                fix,
            )
            return
        assert got.value is not None
        literal = self.facts.literal_value(got.value, scope)
        if not (isinstance(literal, cst.Name) and literal.value == "False"):
            return
        target = got.value if literal is got.value else literal
        fix = Fix("Set `pin_memory=True`", {target: cst.Name("True")})
        self.report(
            call,
            "DataLoader returns pageable memory, so every host-to-GPU copy is synchronous "
            "and staged: `pin_memory` is False",
            fix,
        )
