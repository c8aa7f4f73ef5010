"""The loop shapes ACL301 recognises, and what each says about its owner: `for p in
X.parameters():` (or `named_parameters`, where `recurse=False` would make the
owner's `zero_grad` clear more than the loop does) and `for g in
opt.param_groups: for p in g["params"]:` (where the outer loop's other statements
count too). `Loop` carries the owner, the loop variable and what else runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.rules.manual_zero_grad_loop.body import (
    has_control_flow,
    small_statements,
    statements_of,
)


@dataclass
class Loop:
    outer: cst.For  # where the finding is reported and what the fix replaces
    inner: cst.For  # the loop over single parameters
    var: str  # the parameter variable
    owner: cst.BaseExpression  # the module or optimizer `zero_grad` is called on
    what: str  # `model.parameters()`, `opt.param_groups`: for messages
    narrower: str | None = None  # why the owner's zero_grad would clear more than the loop
    outer_extra: cst.CSTNode | None = None
    outer_skips: bool = False


_PARAM_METHODS = {"parameters": 0, "named_parameters": 1}  # position of `recurse`


def parameter_loop(node: cst.For) -> Loop | None:
    """`for p in X.parameters():` / `for name, p in X.named_parameters():`"""
    it = node.iter
    if not (isinstance(it, cst.Call) and isinstance(it.func, cst.Attribute)):
        return None
    method = it.func.attr.value
    if method not in _PARAM_METHODS:
        return None
    target = node.target
    if method == "parameters":
        var = target.value if isinstance(target, cst.Name) else None
    else:
        var = None
        if isinstance(target, (cst.Tuple, cst.List)) and len(target.elements) == 2:
            second = target.elements[1].value
            if isinstance(second, cst.Name) and isinstance(target.elements[0].value, cst.Name):
                var = second.value
    if var is None:
        return None
    return Loop(
        node, node, var, it.func.value, code_for(it), _recurse_limit(it, _PARAM_METHODS[method])
    )


def _recurse_limit(call: cst.Call, position: int) -> str | None:
    """Why the call may iterate fewer parameters than the module's `zero_grad` clears."""
    value: cst.BaseExpression | None = None
    for index, arg in enumerate(call.args):
        if arg.star:
            return "its arguments cannot be read"
        if (arg.keyword is None and index == position) or (
            arg.keyword is not None and arg.keyword.value == "recurse"
        ):
            value = arg.value
    if value is None or (isinstance(value, cst.Name) and value.value == "True"):
        return None
    return f"it passes `recurse={code_for(value)}`, so only the module's own parameters are zeroed"


def param_groups_loop(node: cst.For) -> Loop | None:
    """`for g in opt.param_groups: for p in g["params"]: ...`"""
    it = node.iter
    if not (
        isinstance(it, cst.Attribute)
        and it.attr.value == "param_groups"
        and isinstance(node.target, cst.Name)
    ):
        return None
    group = node.target.value
    inner: cst.For | None = None
    others: list[cst.BaseStatement | cst.BaseSmallStatement] = []
    for stmt in statements_of(node.body):
        if inner is None and isinstance(stmt, cst.For) and _is_params_of(stmt.iter, group):
            inner = stmt
        else:
            others.append(stmt)
    if inner is None or not isinstance(inner.target, cst.Name) or inner.asynchronous is not None:
        return None
    loop = Loop(node, inner, inner.target.value, it.value, code_for(it))
    for other in others:
        smalls = small_statements(other)
        if smalls is not None and all(isinstance(s, cst.Pass) for s in smalls):
            continue
        if has_control_flow(other):
            loop.outer_skips = True
        elif loop.outer_extra is None:
            loop.outer_extra = other
    if node.orelse is not None and loop.outer_extra is None:
        loop.outer_extra = node.orelse
    return loop


def _is_params_of(expr: cst.BaseExpression, group: str) -> bool:
    if not (isinstance(expr, cst.Subscript) and isinstance(expr.value, cst.Name)):
        return False
    if expr.value.value != group or len(expr.slice) != 1:
        return False
    index = expr.slice[0].slice
    return (
        isinstance(index, cst.Index)
        and isinstance(index.value, cst.SimpleString)
        and index.value.evaluated_value == "params"
    )


def defines_zero_grad(function: cst.FunctionDef | None, owner: cst.BaseExpression) -> bool:
    return (
        function is not None
        and function.name.value == "zero_grad"
        and isinstance(owner, cst.Name)
        and owner.value == "self"
    )
