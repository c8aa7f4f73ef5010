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


def called(tree: ast.Module) -> Called:
    names: set[str] = set()
    moved: set[str] = set()
    renamed: dict[str, str] = {}
    for node in ast.walk(tree):
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
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            for decorator in node.decorator_list:
                name = _last(decorator)  # a decorator that is a call is a Call node
                if name is not None:
                    names.add(name)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            for alias in node.names:
                if alias.asname is not None:
                    renamed[alias.asname] = alias.name.rsplit(".", 1)[-1]
    names |= {renamed[n] for n in names if n in renamed}
    moved |= {renamed[n] for n in moved if n in renamed}
    return Called(frozenset(names), frozenset(moved))
