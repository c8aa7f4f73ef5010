"""Which device an expression names, as far as the file says: an accelerator (CUDA,
XPU, MPS), the CPU, or unknown. Built once per file (`Devices.of(facts)`).

A device chosen by a test (`"cuda" if torch.cuda.is_available() else "cpu"`, or
`device = "cpu"` then `if use_cuda: device = "cuda"`) is an accelerator: the code
runs there whenever one is present, and the CPU branch is the fallback. Names are
followed through their assignments, `self.<attr>` and `args.<attr>` through every
assignment in the file (and the argparse default), parameters through the file's
calls of their function, and the file's own functions through their returns. A
path the file does not show (a parameter nobody in the file passes, a value from
another module) makes the answer unknown, except that a tensor's or module's own
`.device`, and a parameter named for a device (`device`, `target_device`) of a
function the file never calls, follow "the file's device": an accelerator when the
file moves data to one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from enum import Enum

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import FileFacts
from accel_lint.facts.literals import device_template, string_value
from accel_lint.facts.order import Orders
from accel_lint.facts.syntax import argument_for, returns
from accel_lint.facts.tree import Tree
from accel_lint.names import LOCAL, BindingKind, Scope, qualified_names, resolves_to
from accel_lint.torch_api import ACCELERATOR_DEVICES, ACCELERATOR_TYPES, TORCH_DEVICE

_MAX_DEPTH = 6
# `device`, `dev`, `target_device`, `device_id`: a parameter that holds a device.
_DEVICE_NAME = re.compile(r"^(?:.*_)?(?:device|dev)(?:_.*)?$")


class DeviceKind(Enum):
    ACCELERATOR = "accelerator"
    CPU = "cpu"
    UNKNOWN = "unknown"


def combine(kinds: Iterable[DeviceKind]) -> DeviceKind:
    """An accelerator when every path names one or falls back to the CPU and one path
    names an accelerator; the CPU when every path does; unknown otherwise."""
    found = set(kinds)
    if not found or DeviceKind.UNKNOWN in found:
        return DeviceKind.UNKNOWN
    return DeviceKind.ACCELERATOR if DeviceKind.ACCELERATOR in found else DeviceKind.CPU


def device_type(text: str) -> DeviceKind:
    """`"cuda:1"` -> accelerator, `"cpu"` -> CPU; other types (meta, lazy) unknown."""
    kind = text.split(":", 1)[0].strip()
    if kind in ACCELERATOR_TYPES:
        return DeviceKind.ACCELERATOR
    return DeviceKind.CPU if kind == "cpu" else DeviceKind.UNKNOWN


class Devices:
    @classmethod
    def of(cls, facts: FileFacts) -> Devices:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self.orders = Orders.of(facts)
        self._memo: dict[tuple[int, bool], DeviceKind] = {}
        self._active: set[int] = set()
        self._strict = False

    @property
    def file_device(self) -> DeviceKind:
        """The device a tensor of this file lives on when nothing else says."""
        if self._strict or not self.facts.touches_cuda:
            return DeviceKind.UNKNOWN
        return DeviceKind.ACCELERATOR

    def kind(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> DeviceKind:
        """What `expr` names; "the file's device" stands in for a tensor's `.device`
        and for a parameter nobody in the file passes."""
        key = (id(expr), self._strict)
        found = self._memo.get(key)
        if found is not None:
            return found
        if id(expr) in self._active or depth > _MAX_DEPTH:
            return DeviceKind.UNKNOWN
        self._active.add(id(expr))
        try:
            found = self._kind(expr, scope, depth)
        finally:
            self._active.discard(id(expr))
        self._memo[key] = found
        return found

    def certain_kind(self, expr: cst.BaseExpression, scope: Scope) -> DeviceKind:
        """Like `kind`, but only from what the file writes: never "the file's device"
        (so never None, which some APIs read as "the current device")."""
        self._strict = True
        try:
            return self.kind(expr, scope)
        finally:
            self._strict = False

    def stays_on_cpu(self, module: cst.BaseExpression, scope: Scope) -> bool:
        """Whether the file shows that a module never leaves the CPU: a name of the
        function or module it is built in, bound only to what the file builds, never
        moved (`.cuda()`, `.to(...)` to anything but the CPU, in its bindings or on
        the name) and never handed to a call that could move it (`DDP(model)`,
        `train(model)`). Anything the file does not show counts as leaving."""
        if not isinstance(module, cst.Name):
            return False
        bindings = scope.lookup(module.value)
        if not bindings:
            return False
        owner = bindings[0].scope
        if owner is None:
            return False
        for binding in bindings:
            if binding.scope is not owner or binding.kind is BindingKind.IMPORT:
                return False
            if not isinstance(binding.node, (cst.Assign, cst.AnnAssign)):
                return False
            if binding.value is None or self._may_move(binding.value, owner):
                return False
        tree = Tree.of(self.facts)
        for node, where in tree.names(module.value):
            if where.lookup(module.value) is not bindings:
                continue  # another variable of the same name
            if not self._stays(node, where, tree):
                return False
        return True

    def _stays(self, name: cst.Name, scope: Scope, tree: Tree) -> bool:
        """This read of a module's name cannot move it or hand it to what could: a
        method called on it that does not move it, the module called, an attribute
        read, a harmless call given it, or a binding of the name itself."""
        parent = tree.parent(name)
        if isinstance(parent, cst.Attribute) and parent.value is name:
            call = tree.parent(parent)
            if not (isinstance(call, cst.Call) and call.func is parent):
                return True  # `model.fc`
            method = parent.attr.value
            if method in ("cuda", "xpu", "mps", "to_empty"):
                return False
            return method != "to" or not self._moves(call, scope)
        if isinstance(parent, cst.Call) and parent.func is name:
            return True  # `model(x)`
        if isinstance(parent, cst.Arg):
            call = tree.parent(parent)
            return isinstance(call, cst.Call) and _harmless(call)
        return isinstance(parent, (cst.AssignTarget, cst.AnnAssign))  # rebound here

    def _may_move(self, value: cst.BaseExpression, scope: Scope) -> bool:
        """A module built by `value` may sit off the CPU: it is moved in the chain
        (`Net().cuda()`), or comes from somewhere the file does not show."""
        while isinstance(value, cst.Call):
            func = value.func
            if isinstance(func, cst.Attribute):
                if func.attr.value in ("cuda", "xpu", "mps"):
                    return True
                if func.attr.value == "to" and self._moves(value, scope):
                    return True
                if self._builds(func, scope):
                    return False
                value = func.value
                continue
            return not self._builds(func, scope)
        if isinstance(value, cst.Name):
            return not self.stays_on_cpu(value, scope)
        return True

    def _builds(self, func: cst.BaseExpression, scope: Scope) -> bool:
        """`func` builds a module on the CPU: a class of the file, or a constructor of
        torch, torchvision or timm (a helper of the file or of another module may move
        what it builds)."""
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and all(isinstance(b.node, cst.ClassDef) for b in bindings):
                return True
        names = qualified_names(func, scope)
        return bool(names) and all(
            n.startswith(_CPU_BUILDERS) and not n.startswith(_HOLDERS) for n in names
        )

    def _moves(self, call: cst.Call, scope: Scope) -> bool:
        """`x.to(...)` may move to an accelerator (a dtype alone does not move)."""
        for arg in call.args:
            if arg.keyword is not None and arg.keyword.value not in ("device",):
                continue
            if arg.star:
                return True
            names = qualified_names(arg.value, scope)
            if names and all(n.startswith("torch.") and "device" not in n for n in names):
                continue  # `torch.float16`, `torch.channels_last`
            if self.certain_kind(arg.value, scope) is not DeviceKind.CPU:
                return True
        return False

    def _kind(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> DeviceKind:
        if isinstance(expr, cst.SimpleString):
            text = string_value(expr)
            return device_type(text) if text is not None else DeviceKind.UNKNOWN
        if isinstance(expr, (cst.FormattedString, cst.BinaryOperation, cst.Call)):
            built = device_template(expr)
            if built is not None:
                return device_type(built)
        if isinstance(expr, cst.FormattedString):
            return DeviceKind.UNKNOWN
        if isinstance(expr, cst.Integer):
            return DeviceKind.ACCELERATOR  # an index: torch reads it as an accelerator's
        if isinstance(expr, cst.IfExp):
            return combine(
                (self.kind(expr.body, scope, depth + 1), self.kind(expr.orelse, scope, depth + 1))
            )
        if isinstance(expr, cst.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, cst.Name):
            return self._name(expr, scope, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, scope, depth)
        return DeviceKind.UNKNOWN

    def _call(self, call: cst.Call, scope: Scope, depth: int) -> DeviceKind:
        if resolves_to(call.func, scope, TORCH_DEVICE):
            first = next(
                (a.value for a in call.args if a.keyword is None or a.keyword.value == "type"),
                None,
            )
            return self.kind(first, scope, depth + 1) if first is not None else DeviceKind.UNKNOWN
        if resolves_to(call.func, scope, ACCELERATOR_DEVICES):
            return DeviceKind.ACCELERATOR
        callee = self.calls.local_callee(call, scope)
        if callee is None or callee[1]:  # a method or a class: not followed
            return DeviceKind.UNKNOWN
        func = callee[0]
        inner = self.facts.scope_of.get(func)
        values = list(returns(func))
        if inner is None or not values or any(v is None for v in values):
            return DeviceKind.UNKNOWN
        return combine(self.kind(v, inner, depth + 1) for v in values if v is not None)

    def _name(self, name: cst.Name, scope: Scope, depth: int) -> DeviceKind:
        bindings = self.orders.reaching(name, scope)
        if not bindings:
            return DeviceKind.UNKNOWN
        kinds: list[DeviceKind] = []
        for binding in bindings:
            node = binding.node
            owner = binding.scope or scope
            if binding.kind is BindingKind.IMPORT:
                return DeviceKind.UNKNOWN
            if isinstance(node, cst.Param):
                kinds.append(self._parameter(node, owner, depth))
            elif binding.value is not None and isinstance(node, (cst.Assign, cst.AnnAssign)):
                kinds.append(self.kind(binding.value, owner, depth + 1))
            else:
                return DeviceKind.UNKNOWN
        return combine(kinds)

    def _parameter(self, param: cst.Param, scope: Scope, depth: int) -> DeviceKind:
        func = scope.node
        if not isinstance(func, cst.FunctionDef):
            return DeviceKind.UNKNOWN
        params = func.params
        positional = [*params.posonly_params, *params.params]
        index = positional.index(param) if param in positional else None
        invocations = self.calls.invocations(func)
        if not invocations:
            # nobody in the file passes it: a parameter named for a device gets the
            # file's device; anything else (a dtype, a tensor) stays unknown
            named = _DEVICE_NAME.match(param.name.value) is not None
            return self.file_device if named else DeviceKind.UNKNOWN
        kinds: list[DeviceKind] = []
        for site, offset in invocations:
            value = argument_for(site.node, param.name.value, index, offset)
            if value is None:
                if param.default is None:
                    return DeviceKind.UNKNOWN
                kinds.append(self.kind(param.default, scope.parent or scope, depth + 1))
            else:
                kinds.append(self.kind(value, site.scope, depth + 1))
        return combine(kinds)

    def _attribute(self, attr: cst.Attribute, scope: Scope, depth: int) -> DeviceKind:
        name = attr.attr.value
        receiver = attr.value
        option = self.facts.argparse_option_for(attr)
        if option is not None:
            kinds = [self._assigned(name, _receiver_name(receiver), None, depth)]
            if option.default is None:
                return DeviceKind.UNKNOWN
            kinds.append(self.kind(option.default, self.facts.module_scope, depth + 1))
            return combine(k for k in kinds if k is not None)
        if isinstance(receiver, cst.Name) and receiver.value == "self":
            found = self._assigned(name, "self", _class_of(scope), depth)
            if found is not None:
                return found
        if name == "device":
            names = qualified_names(receiver, scope)
            if not names or LOCAL in names:  # a tensor's or module's own device
                return self.file_device
        return DeviceKind.UNKNOWN

    def _assigned(
        self, attr: str, receiver: str | None, cls: cst.ClassDef | None, depth: int
    ) -> DeviceKind | None:
        """Every `<receiver>.<attr> = value` of the file (of class `cls` for self)."""
        if receiver is None:
            return DeviceKind.UNKNOWN
        values = [
            a
            for a in self.facts.attribute_assignments.get(attr, ())
            if a.receiver == receiver and (cls is None or a.class_def is cls)
        ]
        if not values:
            return None
        return combine(self.kind(a.value, a.scope, depth + 1) for a in values)


_CPU_BUILDERS = ("torch.nn.", "torchvision.models.", "timm.create_model")
# Modules built around other modules, which may have been moved.
_HOLDERS = (
    "torch.nn.parallel.",
    "torch.nn.DataParallel",
    "torch.nn.Sequential",
    "torch.nn.ModuleList",
    "torch.nn.ModuleDict",
    "torch.nn.SyncBatchNorm",
)
# Calls handed a module that cannot move it.
_HARMLESS = frozenset({"print", "len", "str", "repr", "isinstance", "type", "id", "sum", "info"})


def _harmless(call: cst.Call) -> bool:
    func = call.func
    name = func.value if isinstance(func, cst.Name) else None
    if isinstance(func, cst.Attribute):
        name = func.attr.value
    return name in _HARMLESS


def _receiver_name(expr: cst.BaseExpression) -> str | None:
    return expr.value if isinstance(expr, cst.Name) else None


def _class_of(scope: Scope) -> cst.ClassDef | None:
    current: Scope | None = scope
    while current is not None:
        if current.kind == "class" and isinstance(current.node, cst.ClassDef):
            return current.node
        current = current.parent
    return None
