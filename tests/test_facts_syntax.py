"""facts.syntax.children / descendants: the nodes the walk visits, without libcst's
`children` property (which rebuilds every node it is asked about)."""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.syntax import children, descendants


def _statement(code: str) -> cst.BaseStatement:
    return cst.parse_module(code).body[0]


def test_children_are_in_source_order_without_whitespace() -> None:
    call = _statement("f(a, b=c)\n")
    assert isinstance(call, cst.SimpleStatementLine)
    expr = call.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)
    kinds = [type(child).__name__ for child in children(expr.value)]
    assert kinds == ["Name", "Arg", "Arg"]
    assert not any(
        isinstance(child, cst.BaseParenthesizableWhitespace) for child in children(expr.value)
    )


def test_descendants_reach_every_name_once_labels_left_out() -> None:
    node = _statement("if x:\n    y = g(z)\nelse:\n    w = x.v\n")
    names = [code_for(n) for n in descendants(node) if isinstance(n, cst.Name)]
    # `v` in `x.v` is a label, not a name read: the walk does not visit it
    assert sorted(names) == ["g", "w", "x", "x", "y", "z"]
    assert next(iter(descendants(node))) is node
