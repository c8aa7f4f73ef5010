"""Code that clears gradients on purpose one way on one path and the other way on
another: `if set_to_none: p.grad = None` / `else: p.grad.zero_()` (torch's own
`Optimizer.zero_grad`, copied into many trainers). Keeping the tensors on the
other path is then a choice the author made, not an oversight."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.file import FileFacts, Guard
from accel_lint.walk import all_children


def beside_none_branch(facts: FileFacts, guards: tuple[Guard, ...]) -> bool:
    """Some `if` around the code (`guards`, from its call or loop site) sets gradients to
    None on its other branch: `<x>.grad = None`, or `zero_grad(set_to_none=True)`."""
    for test, inside in guards:
        branch = facts.if_of_test.get(test)
        if branch is None:
            continue
        other = branch.orelse if inside else branch.body
        if other is not None and _sets_none(other):
            return True
    return False


def _sets_none(node: cst.CSTNode) -> bool:
    stack = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if (
            isinstance(current, cst.Assign)
            and _is_none(current.value)
            and any(_is_grad(t.target) for t in current.targets)
        ):
            return True
        if isinstance(current, cst.Call) and _zero_grad_to_none(current):
            return True
        stack.extend(all_children(current))
    return False


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _is_grad(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "grad"


def _zero_grad_to_none(call: cst.Call) -> bool:
    func = call.func
    if not (isinstance(func, cst.Attribute) and func.attr.value == "zero_grad"):
        return False
    for index, arg in enumerate(call.args):
        named = arg.keyword is not None and arg.keyword.value == "set_to_none"
        if named or (arg.keyword is None and index == 0 and not arg.star):
            return isinstance(arg.value, cst.Name) and arg.value.value == "True"
    return False
