"""What is this receiver (`opt`, `model`, `self.optimizer`)? `TorchObjects` follows
its bindings to what built them (a torch callable, a class of this file, another
library's callable, a parameter with torch's annotation) and answers TORCH, OTHER
or UNKNOWN, never from a spelling. It also records, during the walk, what the
file does that makes zero-filled gradients deliberate. Shared by ACL301 (whose
loops it owns) and ACL302 (whose `zero_grad` receivers it owns).
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.facts.file import FileFacts
from accel_lint.facts.torch_objects.classes import class_kind, class_scope, defining_class
from accel_lint.facts.torch_objects.cuda_graphs import captures_cuda_graphs
from accel_lint.facts.torch_objects.kinds import Kind, in_family, kind_of_names
from accel_lint.names import LOCAL, BindingKind, Scope, qualified_names
from accel_lint.torch_api import MODULE_OR_OPTIMIZER_METHODS, MODULE_RETURNS_SELF

# In-place methods that write into the tensor they are called on.
_GRAD_WRITES = ("add_", "sub_", "copy_")


def _is_a_grad(expr: cst.BaseExpression) -> bool:
    """`<anything>.grad` or `<anything>.grad.data`."""
    if isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return isinstance(expr, cst.Attribute) and expr.attr.value == "grad"


@dataclass(frozen=True)
class _Ctor:
    """What one binding of a receiver was built by: a callee's qualified names, or a
    class of this file (with the scope its bases resolve in), or nothing we can see."""

    names: frozenset[str] = frozenset()
    class_def: cst.ClassDef | None = None
    class_scope: Scope | None = None


_UNSEEN = _Ctor()


class TorchObjects:
    """Answers "what is this receiver?" after the walk, for `opt`, `model`,
    `self.optimizer`: through its assignments, never through its spelling."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        # (class, attribute) -> values assigned to `self.<attribute>` in the class's methods
        self._self_attrs: dict[tuple[int, str], list[tuple[cst.BaseExpression, Scope]]] = {}
        for assignments in facts.attribute_assignments.values():
            for a in assignments:
                if a.receiver == "self" and a.class_def is not None and a.scope.kind != "class":
                    key = (id(a.class_def), a.attr)
                    self._self_attrs.setdefault(key, []).append((a.value, a.scope))
        self.accumulates_into_grads = any(
            isinstance(node.operator, (cst.AddAssign, cst.SubtractAssign))
            and _is_a_grad(node.target)
            for node, _ in facts.aug_assigns
        )
        # receivers whose `param_groups` the file reads: torch's optimizer protocol
        self._param_groups_of = [
            (node.value, scope) for node, scope in facts.attributes_named("param_groups")
        ]

    @classmethod
    def of(cls, facts: FileFacts) -> TorchObjects:
        return facts.shared(cls)

    def adds_into_grads(self) -> bool:
        """Does the file add into `.grad` tensors by hand (`p.grad += g`,
        `p.grad.add_(g)`, `p.grad.copy_(g)`)? Then it needs them to be tensors, and
        zero-filling them is deliberate (parameter servers, federated averaging)."""
        if self.accumulates_into_grads:
            return True
        for method in _GRAD_WRITES:
            for site in self.facts.method_calls(method):
                func = site.node.func
                if isinstance(func, cst.Attribute) and _is_a_grad(func.value):
                    return True
        return False

    def file_imports_torch(self) -> bool:
        scopes = [self.facts.module_scope, *self.facts.scope_of.values()]
        return any(
            b.kind is BindingKind.IMPORT
            and b.target is not None
            and in_family(b.target, ("torch",))
            for scope in scopes
            for bindings in scope.bindings.values()
            for b in bindings
        )

    def captures_cuda_graphs(self) -> bool:
        """Does the file capture CUDA graphs (see `cuda_graphs`)?"""
        return captures_cuda_graphs(self.facts, self.kind)

    # -- what built a receiver ----------------------------------------------------

    def _ctors(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> list[_Ctor]:
        if depth > 4:
            return [_UNSEEN]
        if isinstance(expr, cst.Call):
            return [self._call_ctor(expr, scope)]
        if isinstance(expr, cst.Name) and expr.value == "self":
            # a method's `self` is an instance of its class
            cls_scope = class_scope(scope)
            if cls_scope is not None and isinstance(cls_scope.node, cst.ClassDef):
                return [_Ctor(class_def=cls_scope.node, class_scope=cls_scope.parent)]
            return [_UNSEEN]
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if not bindings:
                return [_UNSEEN]
            out: list[_Ctor] = []
            for b in bindings:
                owner = b.scope or scope
                if b.kind is BindingKind.IMPORT and b.target is not None:
                    out.append(_Ctor(names=frozenset({b.target})))
                elif b.value is not None:
                    out.extend(self._value_ctors(b.value, owner, depth))
                elif isinstance(b.node, cst.Param) and b.node.annotation is not None:
                    # `optimizer: torch.optim.Optimizer`: only torch's annotation is read
                    names = qualified_names(b.node.annotation.annotation, owner)
                    torch_typed = kind_of_names(names) is Kind.TORCH
                    out.append(_Ctor(names=names) if torch_typed else _UNSEEN)
                elif isinstance(b.node, cst.Assign) and isinstance(b.node.value, cst.Call):
                    # `engine, opt, _, _ = deepspeed.initialize(...)`: only "clearly
                    # not torch's" is meaningful for one element of an unpacked result.
                    ctor = self._call_ctor(b.node.value, owner)
                    if kind_of_names(ctor.names) is Kind.OTHER:
                        out.append(ctor)
                    else:
                        out.append(_UNSEEN)
                else:
                    out.append(_UNSEEN)
            return out
        if isinstance(expr, cst.Attribute):
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                cls_scope = class_scope(scope)
                if cls_scope is not None and cls_scope.node is not None:
                    values = self._self_attrs.get((id(cls_scope.node), expr.attr.value))
                    if values:
                        return [c for v, s in values for c in self._value_ctors(v, s, depth)]
                return [_UNSEEN]
            names = qualified_names(expr, scope)
            if names and LOCAL not in names:
                return [_Ctor(names=names)]
        return [_UNSEEN]

    def _value_ctors(self, value: cst.BaseExpression, scope: Scope, depth: int) -> list[_Ctor]:
        if isinstance(value, cst.Call):
            return [self._call_ctor(value, scope)]
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self._ctors(value, scope, depth + 1)
        return [_UNSEEN]

    def _call_ctor(self, call: cst.Call, scope: Scope) -> _Ctor:
        func = call.func
        while (
            isinstance(func, cst.Attribute)
            and func.attr.value in MODULE_RETURNS_SELF
            and isinstance(func.value, cst.Call)
        ):
            func = func.value.func
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                return _Ctor(class_def=bindings[0].node, class_scope=bindings[0].scope or scope)
        names = qualified_names(func, scope)
        if names and LOCAL not in names:
            return _Ctor(names=names)
        return _UNSEEN

    def _ctor_kind(self, ctor: _Ctor) -> Kind:
        if ctor.class_def is not None and ctor.class_scope is not None:
            return class_kind(ctor.class_def, ctor.class_scope)
        return kind_of_names(ctor.names)

    def own_zero_grad(self, expr: cst.BaseExpression, scope: Scope) -> str | None:
        """The name of a class of this file that `expr` may be an instance of and that
        defines its own `zero_grad` (directly or through a base of this file)."""
        for ctor in self._ctors(expr, scope):
            if ctor.class_def is not None and ctor.class_scope is not None:
                found = defining_class(ctor.class_def, ctor.class_scope, "zero_grad")
                if found is not None:
                    return found
        return None

    def kind(self, expr: cst.BaseExpression, scope: Scope) -> Kind:
        """TORCH if any binding is torch-built; OTHER if some binding is clearly not
        torch and none is torch; UNKNOWN otherwise."""
        kinds = {self._ctor_kind(c) for c in self._ctors(expr, scope)}
        if Kind.TORCH in kinds:
            return Kind.TORCH
        if Kind.OTHER in kinds:
            return Kind.OTHER
        return Kind.UNKNOWN

    def used_as_torch(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """Is `expr` used in the file the way torch's modules and optimizers are: called,
        stepped, its parameters or `param_groups` read, moved to a device, handed to torch
        (`scaler.step(opt)`, `StepLR(opt)`, `DDP(model)`)? For an object whose class
        cannot be seen, that is what says its `zero_grad` is torch's own."""
        for owner, owner_scope in self._param_groups_of:
            if same_object(owner, owner_scope, expr, scope):
                return True
        for method in MODULE_OR_OPTIMIZER_METHODS:
            for site in self.facts.method_calls(method):
                func = site.node.func
                assert isinstance(func, cst.Attribute)
                if same_object(func.value, site.scope, expr, scope):
                    return True
        for site in self.facts.method_calls("step") + self.facts.method_calls("unscale_"):
            args = site.node.args
            if args and same_object(args[0].value, site.scope, expr, scope):
                return True
        for site in self.facts.calls:
            if same_object(site.node.func, site.scope, expr, scope):
                return True
            if any(same_object(a.value, site.scope, expr, scope) for a in site.node.args) and (
                kind_of_names(qualified_names(site.node.func, site.scope)) is Kind.TORCH
            ):
                return True
        return False


def same_object(
    a: cst.BaseExpression, scope_a: Scope, b: cst.BaseExpression, scope_b: Scope
) -> bool:
    """Do two name chains denote the same variable (same bindings, or `self` of one class)?"""
    if isinstance(a, cst.Attribute) and isinstance(b, cst.Attribute):
        return a.attr.value == b.attr.value and same_object(a.value, scope_a, b.value, scope_b)
    if isinstance(a, cst.Call) and isinstance(b, cst.Call):
        # `rref.rpc_sync()`, `self.get_optimizer()`: an accessor, asked the same way
        return not a.args and not b.args and same_object(a.func, scope_a, b.func, scope_b)
    if isinstance(a, cst.Name) and isinstance(b, cst.Name) and a.value == b.value:
        if a.value == "self":
            ca, cb = class_scope(scope_a), class_scope(scope_b)
            return ca is not None and ca is cb
        found_a, found_b = scope_a.lookup(a.value), scope_b.lookup(b.value)
        return found_a is not None and found_a is found_b
    return False
