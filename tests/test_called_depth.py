"""The depth check rides on the calls prefilter's pass over CPython's tree (issue 26):
`called(tree).deepest` must be what the separate walk it replaced measured, node for
node, ties included (the position names the first deepest node that walk met)."""

from __future__ import annotations

import ast

import pytest

from accel_lint.called import called
from accel_lint.parse import DEPTH_LIMIT, parse
from tests.support import ROOT

SOURCES = sorted((ROOT / "fixtures").glob("*/*.py")) + sorted(
    (ROOT / "tests" / "cases").glob("*.py")
)

_NO_DEPTH = (ast.expr_context, ast.operator, ast.boolop, ast.cmpop, ast.unaryop)


def _separate_walk(tree: ast.AST) -> tuple[int, int, int]:
    """The walk `parse.nesting_depth` made before, kept here as the oracle."""
    best, best_node = 0, tree
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    leaves = (ast.Name, ast.Constant)
    while stack:
        node, depth = stack.pop()
        if depth > best:
            best, best_node = depth, node
        child = depth + (len(node.values) - 1 if isinstance(node, ast.BoolOp) else 1)
        for name in node._fields:
            value = getattr(node, name, None)
            if isinstance(value, list):
                stack.extend(
                    (item, child)
                    for item in value
                    if isinstance(item, ast.AST)
                    and not isinstance(item, _NO_DEPTH)
                    and (child > best or not isinstance(item, leaves))
                )
            elif (
                isinstance(value, ast.AST)
                and not isinstance(value, _NO_DEPTH)
                and (child > best or not isinstance(value, leaves))
            ):
                stack.append((value, child))
    return best, getattr(best_node, "lineno", 1), getattr(best_node, "col_offset", 0)


SHAPES = {
    "bool chain": "x = a or b or c or d or e\nif p and q and (r or s or t or u):\n    pass\n",
    "leaf deepest": "f(g(h(1)))\n",
    "brackets": "y = [[[[[[1]]]]]], {'k': (1, (2, (3,)))}\n",
    "imports": "import a.b as c, d\nfrom e import (f as g, h)\ndef k():\n    import m as n\n",
    "lambdas": "z = lambda a=lambda: (lambda: 1)(): [i for i in range(3) if i]\n",
    "ties": "a = (1, 2)\nb = (3, 4)\nc = [5, 6]\n",
    "class": "@dec(x)\nclass C(Base[int], metaclass=M):\n    def f(self, a: int = g(1)) -> T:\n"
    "        ...\n",
    "match": "match p:\n    case [1, (2, x)] if x > f(y):\n        pass\n",
    "long chain": "t = " + " + ".join(["x"] * 40) + "\n",
}


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_fixture_and_case(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    assert called(tree).deepest == _separate_walk(tree)


@pytest.mark.parametrize("name", sorted(SHAPES))
def test_shapes(name):
    tree = ast.parse(SHAPES[name])
    assert called(tree).deepest == _separate_walk(tree)


def test_too_deep_is_reported_where_the_deepest_node_is():
    text = "import torch\nloss = " + " + ".join(["x"] * (DEPTH_LIMIT + 20)) + "\nloss.backward()\n"
    tree = ast.parse(text)
    depth, row, _ = called(tree).deepest
    assert depth > DEPTH_LIMIT and row == 2
    parsed = parse("deep.py", text)
    assert parsed.module is None and parsed.error is not None
    assert parsed.error.row == 2
    assert f"{depth} levels deep here; the limit is {DEPTH_LIMIT}" in parsed.error.message
