"""ACL102 dataloader-unpinned-memory: a DataLoader without `pin_memory=True` in a
file that moves data to a CUDA device. Page: rules/ACL102.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword
from accel_lint.facts.loader_args import passed
from accel_lint.names import (
    LOCAL,
    Scope,
    resolves_to,
    root_is_module_import,
    spelling_for,
)
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import CUDA_IS_AVAILABLE, DATALOADER


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
        self._test: str | None = None  # the file's device test; "" when it has none

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
            value, imports = self._pin_value(scope)
            fix = Fix(
                f"Add `pin_memory={value}`",
                {call: add_keyword(call, "pin_memory", value)},
                imports,
            )
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
        value, imports = self._pin_value(scope if literal is got.value else self.facts.module_scope)
        fix = Fix(f"Set `pin_memory={value}`", {target: cst.parse_expression(value)}, imports)
        self.report(
            call,
            "DataLoader returns pageable memory, so every host-to-GPU copy is synchronous "
            "and staged: `pin_memory` is False",
            fix,
        )

    def _pin_value(self, scope: Scope) -> tuple[str, tuple[str, ...]]:
        """`True`, or the file's own device test when it picks its device with one, so a
        run without an accelerator neither pins nor warns; spelled for `scope`."""
        test = self._device_test()
        if test is None:
            return "True", ()
        spelled, needed = spelling_for(test, scope)
        if not root_is_module_import(spelled, scope):
            return "True", ()
        return f"{spelled}()", (needed,) if needed else ()

    def _device_test(self) -> str | None:
        if self._test is None:
            accelerator = cuda = False
            for names in self.facts.callee_names():
                if not names or LOCAL in names:
                    continue
                if names <= CUDA_IS_AVAILABLE:
                    cuda = True
                elif all(n.startswith("torch.accelerator.") for n in names):
                    accelerator = True
            self._test = (
                "torch.accelerator.is_available"
                if accelerator
                else "torch.cuda.is_available"
                if cuda
                else ""
            )
        return self._test or None
