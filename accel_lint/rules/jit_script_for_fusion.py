"""ACL204 jit-script-for-fusion: `torch.jit.script` / `torch.jit.trace` used to speed up
a function or module of a training file, where `torch.compile` is the tool since
torch 2.0. Page: rules/ACL204.md"""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.training import Training
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import COMPILE_SINCE, JIT_EXPORT, JIT_SCRIPT, JIT_TRACE

_JIT = JIT_SCRIPT | JIT_TRACE
# A function named like this prepares a model for deployment, not for training.
_EXPORTING = re.compile(r"export|save|convert|serializ|deploy|onnx", re.IGNORECASE)
# Methods of a scripted module that serialize it.
_SAVE_METHODS = ("save", "_save_for_lite_interpreter")


class JitScriptForFusion(Rule):
    code = "ACL204"
    name = "jit-script-for-fusion"
    summary = "torch.jit.script/trace used for speed in a training file (torch >= 2.0)"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        self._decorators: list[tuple[cst.BaseExpression, Scope]] = []
        # the name a call's result is assigned to (`scripted = torch.jit.script(m)`)
        self._assigned: dict[int, cst.Name] = {}
        # calls whose result is at once an argument of another call or the receiver of a
        # method: (inner call id) -> outer call
        self._outer: dict[int, cst.Call] = {}

    def visit_Decorator(self, node: cst.Decorator) -> None:
        if not isinstance(node.decorator, cst.Call):  # a call is among the file's calls
            # the scope is the decorated def's own: its names resolve as around the def
            self._decorators.append((node.decorator, self.facts.scope))

    def visit_Assign(self, node: cst.Assign) -> None:
        if isinstance(node.value, cst.Call) and len(node.targets) == 1:
            target = node.targets[0].target
            if isinstance(target, cst.Name):
                self._assigned[id(node.value)] = target

    def visit_Call(self, node: cst.Call) -> None:
        for arg in node.args:
            if isinstance(arg.value, cst.Call):
                self._outer[id(arg.value)] = node
        func = node.func
        if isinstance(func, cst.Attribute) and isinstance(func.value, cst.Call):
            self._outer[id(func.value)] = node

    def finish(self) -> None:
        target = self.ctx.target_torch
        if target is not None and target < COMPILE_SINCE:
            return
        facts = self.facts
        if not Training.of(facts).trains:
            return
        for expr, scope in self._decorators:
            if resolves_to(expr, scope, JIT_SCRIPT):
                function = scope.node
                name = function.name.value if isinstance(function, cst.FunctionDef) else None
                self.report(expr, _message("script", f"`{name}()`" if name else "a function"))
        for site in facts.calls_resolving_to(_JIT):
            if _exporting(site.function) or self._exported(site.node, site.scope):
                continue
            kind = "script" if resolves_to(site.node.func, site.scope, JIT_SCRIPT) else "trace"
            self.report(site.node, _message(kind, _subject(site.node)))

    def _exported(self, call: cst.Call, scope: Scope) -> bool:
        """The scripted or traced result is saved, frozen for inference, exported or
        drawn (`add_graph`), directly or through the name it is assigned to."""
        if self._feeds_export(call, scope):
            return True
        name = self._assigned.get(id(call))
        if name is None:
            return False
        bindings = scope.lookup(name.value)
        for site in self.facts.calls:
            func = site.node.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value in _SAVE_METHODS
                and _same(func.value, name, site.scope, bindings)
            ):
                return True
            if any(_same(a.value, name, site.scope, bindings) for a in site.node.args) and (
                _is_export(site.node, site.scope)
            ):
                return True
        return False

    def _feeds_export(self, call: cst.Call, scope: Scope) -> bool:
        outer = self._outer.get(id(call))
        if outer is None:
            return False
        func = outer.func
        if isinstance(func, cst.Attribute) and func.value is call:
            return func.attr.value in _SAVE_METHODS
        return _is_export(outer, scope)


def _is_export(call: cst.Call, scope: Scope) -> bool:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "add_graph":
        return True
    return resolves_to(func, scope, JIT_EXPORT)


def _same(expr: cst.BaseExpression, name: cst.Name, scope: Scope, bindings: object) -> bool:
    return (
        isinstance(expr, cst.Name)
        and expr.value == name.value
        and scope.lookup(expr.value) is bindings
    )


def _exporting(function: cst.FunctionDef | None) -> bool:
    """Inside a function named for export (`export_torchscript`, `save_model`)."""
    return function is not None and bool(_EXPORTING.search(function.name.value))


def _subject(call: cst.Call) -> str:
    """`model` for `torch.jit.script(model)`; a module or function otherwise."""
    args = [a for a in call.args if a.keyword is None and not a.star]
    if args:
        text = code_for(args[0].value)
        if len(text) <= 40 and "\n" not in text:
            return f"`{text}`"
    return "a module or function"


def _message(kind: str, what: str) -> str:
    return (
        f"`torch.jit.{kind}` is used to speed up {what} in a training script: TorchScript "
        f"is deprecated (torch warns that `torch.jit.{kind}` is, and points to "
        "`torch.compile`), which fuses the same code without scripting's language limits"
    )
