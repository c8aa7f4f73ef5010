"""Small questions about libcst nodes that several analyses and rules ask."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst


def last_name(expr: cst.BaseExpression) -> str | None:
    """`save` for `torch.save`, `f` for `f`, `m` for `a.m(...)`'s callee."""
    if isinstance(expr, cst.Call):
        expr = expr.func
    if isinstance(expr, cst.Name):
        return expr.value
    if isinstance(expr, cst.Attribute):
        return expr.attr.value
    return None


def returns(func: cst.FunctionDef) -> Iterator[cst.BaseExpression | None]:
    """Values of the function's own `return` statements (not of nested defs)."""
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Return):
            yield node.value
            continue
        if isinstance(
            node,
            (
                cst.BaseSuite,
                cst.BaseCompoundStatement,
                cst.SimpleStatementLine,
                cst.ExceptHandler,
                cst.Else,
                cst.Finally,
                cst.MatchCase,
            ),
        ):
            stack.extend(node.children)


def sub_expressions(expr: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """`expr` and every expression inside it, lambdas excepted."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.BaseExpression):
            yield node
        stack.extend(node.children)


def argument_for(
    call: cst.Call, name: str, index: int | None, offset: int
) -> cst.BaseExpression | None:
    """What `call` passes for the parameter `name` at position `index` of the def
    (`offset` leading parameters, such as `self`, are filled implicitly)."""
    position = offset
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == name:
                return arg.value
            continue
        if index is not None and position == index:
            return arg.value
        position += 1
    return None
