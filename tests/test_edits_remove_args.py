"""edits.remove_args: keyword arguments taken out of a call, layout kept."""

from __future__ import annotations

import libcst as cst
import pytest

from accel_lint.edits import remove_args


def _removed(source: str, *names: str) -> str:
    module = cst.parse_module(source)
    stmt = module.body[0]
    assert isinstance(stmt, cst.SimpleStatementLine)
    expr = stmt.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)
    new = remove_args(expr.value, set(names))
    return module.deep_replace(expr.value, new).code  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("source", "names", "expected"),
    [
        ("f(a, b=1, c=2)\n", ("b",), "f(a, c=2)\n"),
        ("f(a, b=1, c=2)\n", ("c",), "f(a, b=1)\n"),
        ("f(a, b=1, c=2)\n", ("b", "c"), "f(a)\n"),
        ("f(b=1)\n", ("b",), "f()\n"),
        ("f(a, b=1)\n", ("x",), "f(a, b=1)\n"),
        ("f(\n    a,\n    b=1,\n    c=2,\n)\n", ("c",), "f(\n    a,\n    b=1,\n)\n"),
        ("f(\n    a,\n    b=1,\n    c=2\n)\n", ("c",), "f(\n    a,\n    b=1\n)\n"),
        ("f(a,\n  b=1)\n", ("b",), "f(a)\n"),
    ],
)
def test_remove_args(source: str, names: tuple[str, ...], expected: str) -> None:
    assert _removed(source, *names) == expected
