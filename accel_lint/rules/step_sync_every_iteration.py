"""ACL308 step-sync-every-iteration: a call that makes the host wait for the device on
every training step (`.item()`, `.cpu()`, `.tolist()`, `print(loss)`,
`torch.cuda.synchronize()`), or an `if` whose test is a tensor (`if not
torch.isfinite(loss):`, `if loss > best:`). Page: rules/ACL308.md

Off by default: logging the loss every step is common and often wanted. "Every
training step" as for ACL315 (`Loops.every_step`, machine tests not counting as
conditions); a test that lets one rank through (`if rank == 0:`) is not a condition
either: that rank still waits on every step, and the others wait for it at the next
collective. A chain reports its first synchronizing call only
(`loss.detach().cpu().numpy()` waits once, at `.cpu()`), `.numpy()` alone is no
synchronization (it raises on a device tensor), and numpy values (`.item()` of a
numpy result) do not synchronize anything.
"""

from __future__ import annotations

import re
from typing import cast

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.autograd import Autograd
from accel_lint.facts.file import CallSite, Guard
from accel_lint.facts.loops import Loops, machine_test
from accel_lint.facts.ranks import RankAnalysis, Verdict
from accel_lint.facts.syntax import last_name
from accel_lint.names import LOCAL, qualified_names, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import (
    DEVICE_SYNCHRONIZE,
    DEVICE_WORDS,
    HOST_SYNC_METHODS,
    TENSOR_TESTS,
)

_CANDIDATES = HOST_SYNC_METHODS | {"synchronize", "print"}
# Functions that time the step (`time_synchronized()`, `compute_time_train()`).
_TIMING = re.compile(r"time|timing|bench|profil|speed|throughput|latency", re.IGNORECASE)
# the table's pattern (a file without it is not parsed for this rule), on the text
_DEVICE_WORDS = re.compile(DEVICE_WORDS.pattern.decode())
# Receivers that are not tensors: a module moved with `.cpu()`, a numpy value.
_NOT_TENSOR_ROOTS = ("numpy", "builtins", "math", "pandas")


class StepSyncEveryIteration(Rule):
    code = "ACL308"
    name = "step-sync-every-iteration"
    summary = "Host-device synchronization (.item(), .cpu(), print(loss)) on every training step"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        self._device: bool | None = None
        # `if` tests, with where they run (the test runs outside its own branch)
        self._tests: list[tuple[cst.BaseExpression, CallSite]] = []
        self._following: set[int] = set()  # receivers being followed (a cycle stops)

    def visit_If(self, node: cst.If) -> None:
        facts = self.facts
        where = CallSite(
            cast(cst.Call, node.test),  # only its identity is read
            facts.scope,
            tuple(facts.guards),
            tuple(facts.loops),
            facts.function,
            tuple(facts.bodies),
            tuple(facts.withs),
        )
        self._tests.append((node.test, where))

    def finish(self) -> None:
        loops = Loops.of(self.facts)
        if not Autograd.of(self.facts).may_use_torch or not loops.training_loops():
            return
        found: list[tuple[cst.CSTNode, str, CallSite]] = []
        for site in self.facts.calls:
            if last_name(site.node.func) not in _CANDIDATES:
                continue
            what = self._synchronizes(site)
            if what is not None:
                found.append((site.node, what, site))
        for test, where in self._tests:
            tensor = self._tensor_test(test, where)
            if tensor is not None:
                what = f"`if` on the tensor `{tensor}` copies its truth value to the host"
                found.append((test, what, where))
        ranks = RankAnalysis.of(self.facts)
        for node, what, site in found:

            def same_every_step(guard: Guard, site: CallSite = site) -> bool:
                # a machine test, one that lets one rank through (that rank waits), or a
                # NaN check that skips a diverged step (`if not torch.isfinite(loss):
                # continue`)
                return (
                    machine_test(guard)
                    or ranks.one_process(guard[0], site.scope, guard[1]) is Verdict.YES
                    or _nan_check(guard[0], site)
                )

            loop = loops.every_step(site, ignoring=same_every_step)
            if loop is None or not loops.trains_every_iteration(loop):
                continue
            if _timing(site.function) or _timing(loops.site(loop).function):
                continue  # a benchmark: it waits on purpose, to time the step
            if not self._has_device():
                return  # nothing is put on an accelerator: there is no device to wait for
            self.report(
                node,
                f"{what} on every training step: the host waits for the device to finish "
                "the step before it can queue the next one; do it every N steps, or keep "
                "the value on the device",
            )

    def _tensor_test(self, test: cst.BaseExpression, where: CallSite) -> str | None:
        """The tensor an `if` test turns into a Python bool (which waits for the device):
        `torch.isfinite(loss)`, `loss.isnan().any()`, `loss > best` on a backpropagated
        loss; None when the test is not certainly a tensor."""
        if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
            return self._tensor_test(test.expression, where)
        if isinstance(test, cst.BooleanOperation):
            return self._tensor_test(test.left, where) or self._tensor_test(test.right, where)
        losses = {
            b.expr.value
            for b in Autograd.of(self.facts).backwards_in(where.function)
            if isinstance(b.expr, cst.Name)
        }
        if isinstance(test, cst.Call):
            func = test.func
            if resolves_to(func, where.scope, TENSOR_TESTS):
                return code_for(test)
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in ("any", "all", "isnan", "isinf", "isfinite")
                and not test.args
                and _root_name(func.value) in losses
            ):
                return code_for(test)
            return None
        if isinstance(test, cst.Comparison):
            sides = [test.left, *(c.comparator for c in test.comparisons)]
            for side in sides:
                if isinstance(side, cst.Name) and side.value in losses:
                    return side.value
        return None

    def _has_device(self) -> bool:
        if self._device is None:  # the file's text, generated once, for a candidate only
            self._device = _DEVICE_WORDS.search(self.facts.text) is not None
        return self._device

    def _synchronizes(self, site: CallSite) -> str | None:
        call = site.node
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in HOST_SYNC_METHODS:
            if call.args and func.attr.value != "cpu":
                return None  # `.item(key)`: not a tensor's method
            if func.attr.value == "numpy":
                return None  # raises on a device tensor: what it converts is on the host
            if not self._tensor_receiver(func.value, site):
                return None
            return f"`{code_for(call)}` copies to the host"
        if resolves_to(func, site.scope, DEVICE_SYNCHRONIZE):
            return f"`{code_for(call)}`"
        if resolves_to(func, site.scope, frozenset({"builtins.print"})):
            printed = self._printed_loss(site)
            if printed is not None:
                return f"`print()` of the tensor `{printed}`"
        return None

    def _tensor_receiver(self, receiver: cst.BaseExpression, site: CallSite) -> bool:
        """The receiver may be a tensor on the device: no synchronizing call earlier in
        the chain, not a numpy or Python value, not a module. A name whose value is
        built from itself (`loss = loss.mean()`) may be one."""
        if id(receiver) in self._following:
            return True
        self._following.add(id(receiver))
        try:
            return self._tensor_chain(receiver, site)
        finally:
            self._following.discard(id(receiver))

    def _tensor_chain(self, receiver: cst.BaseExpression, site: CallSite) -> bool:
        expr = receiver
        while True:
            if isinstance(expr, cst.Call):
                func = expr.func
                if isinstance(func, cst.Attribute):
                    if func.attr.value in HOST_SYNC_METHODS:
                        return False  # on the host already: reported at that call
                    expr = func.value
                    continue
                names = qualified_names(func, site.scope)
                return not (names and LOCAL not in names and _not_tensor(names))
            if isinstance(expr, (cst.Attribute, cst.Subscript)):
                expr = expr.value
                continue
            break
        if isinstance(expr, cst.Name):
            names = qualified_names(expr, site.scope)
            if names and LOCAL not in names:
                return not _not_tensor(names)
            name = expr.value.lower()
            if "model" in name or name.endswith("net") or name == "self":
                return False  # `model.cpu()` moves a module
            bindings = site.scope.lookup(expr.value) or []
            if bindings and all(isinstance(b.node, cst.For) for b in bindings):
                return False  # a batch as the loader gives it: on the host
            values = [b.value for b in bindings]
            # a value already on the host (`preds = out.cpu().numpy()`), or numpy's
            return not (
                values
                and all(
                    isinstance(v, cst.Call)
                    and (self._numpy_call(v, site) or not self._tensor_receiver(v, site))
                    for v in values
                )
            )
        return False

    def _numpy_call(self, call: cst.Call, site: CallSite) -> bool:
        names = qualified_names(call.func, site.scope)
        return bool(names) and LOCAL not in names and _not_tensor(names)

    def _printed_loss(self, site: CallSite) -> str | None:
        """A printed argument (or f-string field) that is a backpropagated loss."""
        losses: set[str] = set()
        for backward in Autograd.of(self.facts).backwards_in(site.function):
            if isinstance(backward.expr, cst.Name):
                losses.add(backward.expr.value)
        for arg in site.node.args:
            values = [arg.value]
            if isinstance(arg.value, cst.FormattedString):
                values = [
                    part.expression
                    for part in arg.value.parts
                    if isinstance(part, cst.FormattedStringExpression)
                ]
            for value in values:
                if isinstance(value, cst.Name) and value.value in losses:
                    return value.value
        return None


_NAN_TESTS = ("isfinite", "isnan", "isinf")


def _nan_check(test: cst.BaseExpression, site: CallSite) -> bool:
    """`torch.isfinite(loss)`, `not torch.isnan(loss).any()`, `loss.isnan().any()`."""
    while isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        test = test.expression
    while (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Attribute)
        and test.func.attr.value in ("any", "all")
    ):
        test = test.func.value
    if not isinstance(test, cst.Call):
        return False
    func = test.func
    if isinstance(func, cst.Attribute) and func.attr.value in _NAN_TESTS and not test.args:
        return True
    return resolves_to(func, site.scope, frozenset(f"torch.{n}" for n in _NAN_TESTS))


def _root_name(expr: cst.BaseExpression) -> str | None:
    """`loss` for `loss.isnan()`, `loss.detach()`: the name a chain of methods starts at."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Attribute):
        expr = expr.func.value
    return expr.value if isinstance(expr, cst.Name) else None


def _not_tensor(names: frozenset[str]) -> bool:
    return all(n.split(".")[0] in _NOT_TENSOR_ROOTS for n in names)


def _timing(function: cst.FunctionDef | None) -> bool:
    return function is not None and _TIMING.search(function.name.value) is not None
