"""Small questions about libcst nodes that several analyses and rules ask."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.facts.literals import string_value
from accel_lint.walk import all_children, child_fields, is_node


def last_name(expr: cst.BaseExpression) -> str | None:
    """`save` for `torch.save`, `f` for `f`, `m` for `a.m(...)`'s callee."""
    # by type: `isinstance` against libcst's classes goes through `ABCMeta`
    if type(expr) is cst.Call:
        expr = expr.func
    if type(expr) is cst.Name:
        return expr.value
    if type(expr) is cst.Attribute:
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
            stack.extend(all_children(node))


def sub_expressions(expr: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    """`expr` and every expression inside it, lambdas excepted."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.BaseExpression):
            yield node
        stack.extend(all_children(node))


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


def children(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """The nodes the walk descends into from `node`, in source order, labels and
    whitespace left out (libcst's `children` property rebuilds the node: slow)."""
    for name in child_fields(type(node)):
        value = getattr(node, name)
        if type(value) is list or type(value) is tuple:
            yield from (child for child in value if is_node(child))
        elif is_node(value):
            yield value


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`node` and every node below it that the walk visits."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        stack.extend(children(current))


def is_main_test(test: cst.BaseExpression) -> bool:
    """`__name__ == "__main__"`, either way round: the script's own block, which is no
    condition on what the script does when it runs."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = {s.value for s in sides if isinstance(s, cst.Name)}
    strings = {string_value(s) for s in sides}
    return names == {"__name__"} and "__main__" in strings
