"""ACL315 empty-cache-in-loop: `torch.cuda.empty_cache()` (or its `torch.mps`,
`torch.xpu`, `torch.accelerator` equivalents) on every training step.
Page: rules/ACL315.md

"Every training step" is every iteration of a loop that runs a backward pass, here or
in a function of the file it calls, with the call not under a condition of that loop
(`if step % 100 == 0:` runs it now and then); a test of whether a device is there
(`if torch.cuda.is_available():`) is not such a condition.

A loop that builds its model anew on each iteration (`model = GPTModel(cfg)`) runs
trials, not training steps: a batch-size search or a benchmark of several sizes,
whose `del model; torch.cuda.empty_cache()` hands one trial's memory to the next.
"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.facts.autograd import names_read
from accel_lint.facts.evaluation import MODEL_NAME
from accel_lint.facts.loops import Loop, Loops, machine_test
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
            loop = loops.every_step(site, ignoring=machine_test)
            if loop is None or _builds_a_model(loop):
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


def _builds_a_model(loop: Loop) -> bool:
    """The loop's body binds a name spelled like a model to a new one each iteration:
    a class or a factory called, not that name read (`model = Net(cfg).to(device)`,
    `net = build_model(cfg)`; not `model = model.to(device)`, `model =
    torch.compile(model)`, nor a module's output such as `d = netD(x)`)."""
    finder = _ModelBuilds()
    for statement in loop.body.body:
        statement.visit(finder)
        if finder.found:
            return True
    return False


class _ModelBuilds(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found = False

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        return False  # defined here, not run on each iteration

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        if not isinstance(node.value, cst.Call):
            return
        for target in node.targets:
            name = target.target
            if (
                isinstance(name, cst.Name)
                and MODEL_NAME.match(name.value)
                and _builds(node.value)
                and name.value not in names_read(node.value)
            ):
                self.found = True


# factories: `build_model(cfg)`, `create_model(...)`, `AutoModel.from_pretrained(...)`,
# `copy.deepcopy(base)`
_FACTORY = re.compile(r"^_*(?:build|create|make|load|get|init)_?\w*|from_pretrained|deepcopy$")


def _builds(value: cst.Call) -> bool:
    """The call at the root of a chain (`Net(cfg)` in `Net(cfg).half().to(d)`) calls a
    class (capitalised) or a factory."""
    root: cst.BaseExpression = value
    while (
        isinstance(root, cst.Call)
        and isinstance(root.func, cst.Attribute)
        and isinstance(root.func.value, cst.Call)
    ):
        root = root.func.value
    assert isinstance(root, cst.Call)
    name = last_name(root.func) or ""
    return name[:1].isupper() or bool(_FACTORY.match(name))
