"""ACL208 channels-last-convnet: a 2d convnet trained under CUDA autocast in the default
NCHW layout (neither the model nor its inputs converted to channels_last).
Page: rules/ACL208.md

A convnet is a class of the file that builds `nn.Conv2d` / `nn.ConvTranspose2d`
layers, one that builds, subclasses or is handed such a class, or a function of
the file that returns one. The finding is on the first `.to(...)` / `.cuda(...)`
of each model built from one.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.file import CallSite
from accel_lint.facts.precision import Precision
from accel_lint.facts.syntax import returns
from accel_lint.facts.training import Training
from accel_lint.names import Scope, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import CONV2D, DATA_PARALLEL, DDP, MODULE_RETURNS_SELF

_MOVES = ("to", "cuda")
_WRAPPERS = DATA_PARALLEL | DDP


class ChannelsLastConvnet(Rule):
    code = "ACL208"
    name = "channels-last-convnet"
    summary = "2d convnet trained under CUDA autocast without channels_last"
    fix_safety = FixSafety.NONE

    def setup(self) -> None:
        # `x = <value>` and `self.x = <value>`: the value's id -> the target
        self._targets: dict[int, cst.BaseExpression] = {}

    def visit_Assign(self, node: cst.Assign) -> None:
        if len(node.targets) != 1:
            return
        # `model = Net().to(device).train()`: each call of the chain holds the model
        value: cst.BaseExpression = node.value
        while isinstance(value, cst.Call):
            self._targets[id(value)] = node.targets[0].target
            func = value.func
            if not (isinstance(func, cst.Attribute) and func.attr.value in MODULE_RETURNS_SELF):
                break
            value = func.value

    def finish(self) -> None:
        facts = self.facts
        if not facts.touches_cuda or not Training.of(facts).trains:
            return
        if not Precision.of(facts).cuda_autocasts() or self._mentions_channels_last():
            return
        convnets = self._convnet_classes()
        if not convnets:
            return
        factories = self._factories(convnets)
        seen: set[object] = set()
        for site in facts.calls:  # in source order: the first move of each model
            func = site.node.func
            if not isinstance(func, cst.Attribute) or func.attr.value not in _MOVES:
                continue
            key = self._model_key(func.value, site.scope, convnets, factories)
            if key is None:
                continue
            target = self._targets.get(id(site.node))
            if isinstance(target, cst.Name):  # `model = Net().to(device)`: the variable
                key = id(site.scope.lookup(target.value))
            if key in seen:
                continue
            seen.add(key)
            self._report(site)

    def _report(self, site: CallSite) -> None:
        func = site.node.func
        assert isinstance(func, cst.Attribute)
        target = self._targets.get(id(site.node))
        name = code_for(target) if target is not None else None
        if name is None and isinstance(func.value, (cst.Name, cst.Attribute)):
            name = code_for(func.value)
        model = name or "model"
        self.report(
            site.node,
            f"`{model}` is a 2d convnet trained under CUDA autocast in the default NCHW "
            "layout: Tensor Core convolutions want channels_last. Add "
            f"`{model} = {model}.to(memory_format=torch.channels_last)` and convert each "
            "input batch: `images = images.to(device, memory_format=torch.channels_last)`",
        )

    def _mentions_channels_last(self) -> bool:
        if self.facts.attributes_named("channels_last"):
            return True
        return "channels_last" in self.facts.module_scope.bindings

    # -- which models are convnets ---------------------------------------------------

    def _convnet_classes(self) -> set[cst.ClassDef]:
        """Classes that build 2d convolutions, or build, subclass or take such a class."""
        found: set[cst.ClassDef] = set()
        for site in self.facts.calls_resolving_to(CONV2D):
            cls = _enclosing_class(site.scope)
            if cls is not None:
                found.add(cls)
        classes = [c for c in self.facts.class_defs.values() if c not in found]
        changed = bool(found)
        while changed:
            changed = False
            for cls in classes:
                if cls not in found and self._uses_convnet(cls, found):
                    found.add(cls)
                    changed = True
        return found

    def _uses_convnet(self, cls: cst.ClassDef, convnets: set[cst.ClassDef]) -> bool:
        scope = self.facts.scope_of.get(cls)
        if scope is None or scope.parent is None:
            return False
        if any(self._class_of(b.value, scope.parent) in convnets for b in cls.bases):
            return True
        for site in self.facts.calls:
            if (
                _enclosing_class(site.scope) is cls
                and self._class_of(site.node.func, site.scope) in convnets
            ):
                return True
        return False

    def _class_of(self, expr: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
        if not isinstance(expr, cst.Name):
            return None
        bindings = scope.lookup(expr.value)
        if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
            return bindings[0].node
        return None

    def _factories(self, convnets: set[cst.ClassDef]) -> set[cst.FunctionDef]:
        """Module-level functions of the file that return a convnet."""
        out: set[cst.FunctionDef] = set()
        for func, scope, cls in self.facts.function_defs:
            if cls is not None or scope is not self.facts.module_scope:
                continue
            inner = self.facts.scope_of.get(func, scope)
            for value in returns(func):
                if isinstance(value, cst.Call) and self._builds(value, inner, convnets, set()):
                    out.add(func)
                    break
        return out

    def _builds(
        self,
        call: cst.Call,
        scope: Scope,
        convnets: set[cst.ClassDef],
        factories: set[cst.FunctionDef],
    ) -> bool:
        """`Net(...)`, `make_net(...)`, `Wrapper(Block, ...)`, `DataParallel(Net())`,
        `Net().eval()`: a call that builds a convnet."""
        func = call.func
        while (
            isinstance(func, cst.Attribute)
            and func.attr.value in MODULE_RETURNS_SELF
            and isinstance(func.value, cst.Call)
        ):
            call = func.value
            func = call.func
        if self._class_of(func, scope) in convnets:
            return True
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and len(bindings) == 1 and bindings[0].node in factories:
                return True
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                # a class of the file handed a convnet class (`ResNet(BasicBlock, ...)`)
                return any(self._class_of(a.value, scope) in convnets for a in call.args)
        if resolves_to(func, scope, _WRAPPERS) and call.args:
            inner = call.args[0].value
            return isinstance(inner, cst.Call) and self._builds(inner, scope, convnets, factories)
        return False

    def _model_key(
        self,
        receiver: cst.BaseExpression,
        scope: Scope,
        convnets: set[cst.ClassDef],
        factories: set[cst.FunctionDef],
    ) -> object | None:
        """What identifies the model moved by `<receiver>.to(...)`: the call that builds
        it, the bindings of the variable, or (class, attribute) for `self.<x>`; None when
        it is not a convnet of the file."""
        if isinstance(receiver, cst.Call):
            return receiver if self._builds(receiver, scope, convnets, factories) else None
        if isinstance(receiver, cst.Name):
            bindings = scope.lookup(receiver.value)
            if not bindings:
                return None
            for b in bindings:
                value = b.value
                if isinstance(value, cst.Call) and self._builds(
                    value, b.scope or scope, convnets, factories
                ):
                    return id(bindings)
            return None
        if (
            isinstance(receiver, cst.Attribute)
            and isinstance(receiver.value, cst.Name)
            and receiver.value.value == "self"
        ):
            cls = _enclosing_class(scope)
            for a in self.facts.attribute_assignments.get(receiver.attr.value, ()):
                if (
                    a.receiver == "self"
                    and a.class_def is cls
                    and isinstance(a.value, cst.Call)
                    and self._builds(a.value, a.scope, convnets, factories)
                ):
                    return (cls, receiver.attr.value)
        return None


def _enclosing_class(scope: Scope | None) -> cst.ClassDef | None:
    while scope is not None:
        if scope.kind == "class" and isinstance(scope.node, cst.ClassDef):
            return scope.node
        scope = scope.parent
    return None
