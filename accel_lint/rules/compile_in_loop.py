"""ACL206 compile-in-loop: `torch.compile(...)` called in a training or epoch loop, in a
`forward`, or in a function the training loop runs every step: it wraps the model
again (and may recompile) each time. Page: rules/ACL206.md

A compile that runs once is not reported: one under a test of a step or epoch
(`if step == 0:`), of a flag or cache it sets (`if self._compiled is None:
self._compiled = torch.compile(...)`), or of membership (`if key not in cache:`),
and one in a function cached by `functools.cache`.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.file import CallSite, Guard
from accel_lint.facts.literals import string_value
from accel_lint.facts.loops import Loops
from accel_lint.names import dotted_name
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import TORCH_COMPILE
from accel_lint.walk import all_children

_CACHES = ("cache", "lru_cache", "cached_property")


class CompileInLoop(Rule):
    code = "ACL206"
    name = "compile-in-loop"
    summary = "torch.compile called in a loop, a forward or every training step"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        # `fn = torch.compile(f)`: the compile call's id -> the name it is bound to
        self._assigned: dict[int, str] = {}
        # names and attributes each function assigns (a flag or cache it sets)
        self._stores: dict[cst.FunctionDef | None, set[str]] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._store(target.target)
        if len(node.targets) == 1 and isinstance(node.targets[0].target, cst.Name):
            self._assigned[id(node.value)] = node.targets[0].target.value

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._store(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._store(node.target)

    def _store(self, target: cst.BaseExpression) -> None:
        stores = self._stores.setdefault(self.facts.function, set())
        if isinstance(target, cst.Subscript):
            target = target.value  # `cache[key] = ...` sets the cache
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value)
            return
        name = dotted_name(target)
        if name is not None:
            stores.add(name)
            if "." in name:  # `self._compiled` is set wherever the class sets it
                self._stores.setdefault(None, set()).add(name)

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(TORCH_COMPILE)
        if not sites:
            return
        loops = Loops.of(self.facts)
        step_functions = loops.step_functions()
        called = {id(s.node.func) for s in self.facts.calls if isinstance(s.node.func, cst.Call)}
        for site in sites:
            if site.scope.kind == "comprehension" and id(site.node) in called:
                where: str | None = "for every element of this comprehension"
            else:
                where = self._repeated(site, loops, step_functions)
            if where is not None:
                self.report(
                    site.node,
                    f"`torch.compile` runs {where}: each call builds a new wrapper and checks "
                    "its guards again, and recompiles when the backend or options differ, up "
                    "to the recompile limit; compile once, where the model is built",
                )

    def _repeated(
        self, site: CallSite, loops: Loops, step_functions: set[cst.FunctionDef]
    ) -> str | None:
        function = site.function
        if function is not None and any(_decorator_name(d) in _CACHES for d in function.decorators):
            return None
        for loop in reversed(site.bodies):
            if loops.trains(loop) or loops.is_epoch_loop(loop) or self._called_in(site, loop):
                inner = site.guards[len(loops.site(loop).guards) :]
                if self._once(inner, function):
                    return None
                return "on every iteration of this loop"
        if function is None or self._once(site.guards, function):
            return None
        if function.name.value == "forward" and self._is_method(function):
            return "in `forward`, on every call of the model"
        if function in step_functions or loops.every_step(site) is not None:
            return f"in `{function.name.value}()`, which the training loop runs every step"
        return None

    def _is_method(self, function: cst.FunctionDef) -> bool:
        return any(f is function and cls is not None for f, _, cls in self.facts.function_defs)

    def _called_in(self, site: CallSite, loop: cst.For | cst.While) -> bool:
        """The compiled result is called in the same loop: `torch.compile(f)(x)`, or
        `fn = torch.compile(f)` followed by `fn(...)`."""
        name = self._assigned.get(id(site.node))
        for other in Loops.of(self.facts).body_calls(loop):
            func = other.node.func
            if func is site.node:
                return True
            if name is not None and isinstance(func, cst.Name) and func.value == name:
                return True
        return False

    def _once(self, guards: tuple[Guard, ...], function: cst.FunctionDef | None) -> bool:
        """One of the guards lets the compile run once: a step or epoch test, a
        membership test, or a test of something the code sets."""
        stores = self._stores.get(function, set()) | self._stores.get(None, set())
        for test, _ in guards:
            if _tests_equality(test):
                return True
            if any(name in stores for name in _mentioned(test)):
                return True
        return False


def _decorator_name(decorator: cst.Decorator) -> str | None:
    expr = decorator.decorator
    if isinstance(expr, cst.Call):
        expr = expr.func
    name = dotted_name(expr)
    return name.split(".")[-1] if name is not None else None


def _tests_equality(test: cst.BaseExpression) -> bool:
    """`step == 0`, `key in cache`, `key not in cache` anywhere in the test."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.ComparisonTarget) and isinstance(
            node.operator, (cst.Equal, cst.In, cst.NotIn)
        ):
            return True
        if isinstance(node, cst.Lambda):
            continue
        stack.extend(all_children(node))
    return False


def _mentioned(test: cst.BaseExpression) -> set[str]:
    """Names and attribute chains the test reads (`self._compiled`, `compiled`), and
    the attribute a `hasattr(self, "_compiled")` asks about."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)):
            name = dotted_name(node)
            if name is not None:
                out.add(name)
                if isinstance(node, cst.Attribute):
                    stack.append(node.value)
                continue
        if isinstance(node, cst.Call) and dotted_name(node.func) in ("hasattr", "getattr"):
            args = node.args
            if len(args) >= 2:
                receiver = dotted_name(args[0].value)
                attr = string_value(args[1].value)
                if receiver is not None and attr is not None:
                    out.add(f"{receiver}.{attr}")
        stack.extend(all_children(node))
    return out
