"""Classes of this file: is a class torch's (one of its bases is torch's, through
local classes too) or clearly not (every base local and plain), which class of a
hierarchy defines its own `zero_grad` (calling `zero_grad(set_to_none=True)` on it
would run that method, not torch's), and which class a method's `self` belongs to.
Only bases that resolve to a single class statement are followed.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.torch_objects.kinds import TORCH_FAMILY, Kind, in_family, not_torchs
from accel_lint.names import LOCAL, Scope, qualified_names


def class_kind(cls: cst.ClassDef, scope: Scope, depth: int = 0) -> Kind:
    """TORCH when a base is torch's (through local classes too), OTHER when every
    base is local and plain (or has a `zero_grad` that is not torch's), UNKNOWN
    when a base comes from elsewhere."""
    if depth > 8:
        return Kind.UNKNOWN
    result = Kind.OTHER
    for base in cls.bases:
        if base.keyword is not None:
            continue
        expr = base.value
        if isinstance(expr, cst.Subscript):
            expr = expr.value  # `Generic[T]`
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                base_scope = bindings[0].scope or scope
                inner = class_kind(bindings[0].node, base_scope, depth + 1)
                if inner is Kind.TORCH:
                    return Kind.TORCH
                if inner is Kind.UNKNOWN:
                    result = Kind.UNKNOWN
                continue
        names = qualified_names(expr, scope)
        if names and all(not_torchs(n) for n in names):
            continue  # `object`, `abc.ABC`, `Generic[T]`, or a `zero_grad` not torch's
        if names and LOCAL not in names and all(in_family(n, TORCH_FAMILY) for n in names):
            return Kind.TORCH
        # a base from another library may itself derive from torch (LightningModule)
        result = Kind.UNKNOWN
    return result


def defining_class(cls: cst.ClassDef, scope: Scope, method: str, depth: int = 0) -> str | None:
    """The name of the class, `cls` or one of its bases of this file, that defines `method`."""
    if depth > 8:
        return None
    body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
    if any(isinstance(s, cst.FunctionDef) and s.name.value == method for s in body):
        return cls.name.value
    for base in cls.bases:
        if base.keyword is None and isinstance(base.value, cst.Name):
            bindings = scope.lookup(base.value.value)
            if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
                found = defining_class(
                    bindings[0].node, bindings[0].scope or scope, method, depth + 1
                )
                if found is not None:
                    return found
    return None


def class_scope(scope: Scope) -> Scope | None:
    """The class whose method binds the `self` seen from `scope` (a closure inside a
    method sees the method's `self`)."""
    bindings = scope.lookup("self")
    if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.Param):
        return None
    method = bindings[0].scope
    if method is None or method.parent is None or method.parent.kind != "class":
        return None
    return method.parent
