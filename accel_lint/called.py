"""What a file calls, read from CPython's tree before libcst parses it.

The rule table's second prefilter: a rule that needs a call (a backward pass, a
`torch.compile`, a tensor creator whose result is moved) cannot match a file that
makes none, whatever words the file spells in docstrings and messages. CPython's
parse is already made for every file (the syntax check), and one pass over its tree
costs a small fraction of libcst's parse, which such a file is then spared.

Names are the last part of what is called (`backward` for `loss.backward()`,
`compile` for `torch.compile(m)`), decorators count as calls (`@torch.jit.script`),
and a name imported under another one counts under both (`from torch import compile
as tc`: calling `tc` calls `compile`), as the rules resolve names through imports.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass


@dataclass(frozen=True)
class Called:
    names: frozenset[str]  # called functions and decorators, by their last name
    moved: frozenset[str]  # calls whose result is moved: `torch.zeros(3).cuda()`, `.to(d)`


def _last(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


# Nodes that hold no call, decorator or import below them: not entered (most of a
# tree's nodes are names, constants and their load/store contexts).
_NO_CALLS = (
    ast.expr_context,
    ast.operator,
    ast.boolop,
    ast.cmpop,
    ast.unaryop,
    ast.Name,
    ast.Constant,
)
_DEFINITIONS = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_IMPORTS = (ast.Import, ast.ImportFrom)


def called(tree: ast.Module) -> Called:
    names: set[str] = set()
    moved: set[str] = set()
    renamed: dict[str, str] = {}
    # a walk of our own: `ast.walk` enters every node through generators (the
    # language server pays this on every edit)
    stack: list[ast.AST] = [tree]
    push = stack.append
    while stack:
        node = stack.pop()
        if isinstance(node, ast.Call):
            name = _last(node.func)
            if name is not None:
                names.add(name)
            func = node.func
            if (
                isinstance(func, ast.Attribute)
                and func.attr in ("cuda", "to")
                and isinstance(func.value, ast.Call)
            ):
                inner = _last(func.value.func)
                if inner is not None:
                    moved.add(inner)
        elif isinstance(node, _DEFINITIONS):
            for decorator in node.decorator_list:
                name = _last(decorator)  # a decorator that is a call is a Call node
                if name is not None:
                    names.add(name)
        elif isinstance(node, _IMPORTS):
            for alias in node.names:
                if alias.asname is not None:
                    renamed[alias.asname] = alias.name.rsplit(".", 1)[-1]
            continue
        for field in node._fields:
            value = getattr(node, field, None)
            if isinstance(value, list):
                for item in value:
                    if isinstance(item, ast.AST) and not isinstance(item, _NO_CALLS):
                        push(item)
            elif isinstance(value, ast.AST) and not isinstance(value, _NO_CALLS):
                push(value)
    names |= {renamed[n] for n in names if n in renamed}
    moved |= {renamed[n] for n in moved if n in renamed}
    return Called(frozenset(names), frozenset(moved))
