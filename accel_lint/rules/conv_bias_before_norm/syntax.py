"""Small readers of libcst syntax that several ACL201 modules share: statements in
execution order, the module a chained call returns, `self`, `None`, string
literals and a lone positional argument. They decide nothing about torch; they
only keep the deciding modules free of node-shape boilerplate."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import libcst as cst

from accel_lint.torch_api import MODULE_RETURNS_SELF

# A list of elements in order; None marks a gap whose content is unknown.
Elements = list[Union[cst.BaseExpression, None]]
SmallStatements = Sequence[Union[cst.BaseSmallStatement, None]]


def flatten(body: Sequence[cst.CSTNode]) -> SmallStatements:
    """Small statements in execution order; a compound statement is a gap (None)."""
    out: list[cst.BaseSmallStatement | None] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        elif isinstance(stmt, cst.BaseSmallStatement):
            out.append(stmt)  # the body of a one-line suite
        else:
            out.append(None)
    return out


def unwrap(call: cst.Call) -> cst.Call:
    """`nn.Conv2d(...)` for `nn.Conv2d(...).to(device)`: these methods return the module."""
    while (
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in MODULE_RETURNS_SELF
        and isinstance(call.func.value, cst.Call)
    ):
        call = call.func.value
    return call


def is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def single_positional(call: cst.Call) -> cst.BaseExpression | None:
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None
