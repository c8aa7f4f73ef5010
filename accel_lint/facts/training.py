"""Does the file train, and where: its backward passes, its optimizer steps, and
whether training runs from module-level code (a script without functions) or only
inside functions. Built once per file (`Training.of(facts)`)."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.syntax import last_name
from accel_lint.names import qualified_names
from accel_lint.torch_api import AUTOGRAD_BACKWARD

_MAX_DEPTH = 4
_BACKWARD_METHODS = ("backward", "manual_backward")


class Training:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        # `loss.backward()`, `self.manual_backward(loss)`, `torch.autograd.backward(...)`
        found = {
            id(s.node): s
            for s in (
                *(s for m in _BACKWARD_METHODS for s in facts.method_calls(m)),
                *facts.calls_resolving_to(AUTOGRAD_BACKWARD),
            )
        }
        self.backward_sites: list[CallSite] = list(found.values())
        self._backward_nodes = set(found)
        self._runs: dict[int, bool] = {}

    @classmethod
    def of(cls, facts: FileFacts) -> Training:
        return facts.shared(cls)

    @property
    def trains(self) -> bool:
        """The file runs a backward pass somewhere."""
        return bool(self.backward_sites)

    def optimizer_steps(self) -> list[CallSite]:
        """`<optimizer>.step(...)` calls (and a GradScaler's `scaler.step(optimizer)`),
        in source order. The receiver is an optimizer when torch.optim built it or its
        name says so (`optimizer`, `opt_g`, `self.optim`); schedulers, environments
        (`env.step(action)`) and anything else are not."""
        return [s for s in self.facts.method_calls("step") if self._steps_optimizer(s)]

    def _steps_optimizer(self, site: CallSite) -> bool:
        func = site.node.func
        assert isinstance(func, cst.Attribute)
        receiver = func.value
        name = (last_name(receiver) or "").lower()
        if "sched" in name:
            return False
        if "opt" in name or "scaler" in name:
            return True
        if isinstance(receiver, cst.Name):
            bindings = site.scope.lookup(receiver.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].value, cst.Call):
                owner = bindings[0].scope or site.scope
                names = qualified_names(bindings[0].value.func, owner)
                return bool(names) and all(
                    n.startswith("torch.optim.") and ".lr_scheduler." not in n for n in names
                )
        return False

    def runs_backward(self, site: CallSite, depth: int = 0) -> bool:
        """`site` is a backward pass, or calls a function of the file that runs one
        (a few calls deep)."""
        key = id(site.node)
        found = self._runs.get(key)
        if found is not None:
            return found
        found = key in self._backward_nodes
        if not found and depth < _MAX_DEPTH:
            self._runs[key] = False  # recursion guard
            callee = self.calls.local_callee(site.node, site.scope)
            if callee is not None:
                found = any(
                    self.runs_backward(s, depth + 1)
                    for s in self.calls.by_function.get(callee[0], ())
                )
        self._runs[key] = found
        return found

    def module_level_sites(self) -> list[CallSite]:
        """Calls in module-level code (not in a def, nor in a class body)."""
        module = self.facts.module_scope
        return [s for s in self.calls.by_function.get(None, ()) if s.scope is module]

    def trains_at_module_level(self, outside: cst.If | None = None) -> bool:
        """Module-level code (outside the `outside` block, when given) runs a backward
        pass itself or through the file's functions: the file is a script."""
        for site in self.module_level_sites():
            if outside is not None and any(test is outside.test for test, _ in site.guards):
                continue
            if self.runs_backward(site):
                return True
        return False
