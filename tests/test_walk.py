"""`walk.all_children` gives libcst's `node.children`, the same nodes in the same order,
without libcst's rebuilding of the node."""

from __future__ import annotations

import libcst as cst

from accel_lint import walk
from accel_lint.walk import all_children
from tests.support import ROOT

FILES = sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "tests" / "cases").glob("*.py")])

SHAPES = """\
from a import (b as c, d)
import e.f as g, h
@deco(1)
async def f(x: int = 1, *args: str, y, **kw) -> None:
    global q
    async with m() as (n, o), p:
        yield [i async for i in r if i]
    try:
        s = t[1:2, ::3] if u else {**v, 'w': z}
    except* (A, B) as err:
        raise C from err
    else:
        del s
    finally:
        assert x, "msg"
    match x:
        case [1, *rest] if rest:
            pass
        case {"k": v, **others}:
            pass
        case Point(x=0) | None:
            pass
    lambda a, /, b=2: (a, b)
    print(f"{x!r:>{y}}", *args, sep="", **kw)
class K(Base, metaclass=M):
    attr: int = 3
    def __init__(self): self.v = not -x ** 2 @ y; return
while (n := n - 1) > 0 and n < 10 or not n:
    continue
else:
    x += 1
"""


def _same(module: cst.Module) -> int:
    count = 0
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        expected = list(node.children)
        found = list(all_children(node))
        assert len(found) == len(expected), type(node).__name__
        assert all(a is b for a, b in zip(found, expected)), type(node).__name__
        stack.extend(expected)
        count += 1
    return count


def test_the_children_of_every_node_of_the_fixtures_and_cases() -> None:
    nodes = 0
    for path in FILES:
        try:
            module = cst.parse_module(path.read_bytes())
        except cst.ParserSyntaxError:
            continue  # a case of a file that does not parse
        nodes += _same(module)
    assert nodes > 100_000  # every file was read


def test_the_children_of_every_statement_shape_twice() -> None:
    # the second pass answers from the orders the first one learned
    assert _same(cst.parse_module(SHAPES)) == _same(cst.parse_module(SHAPES))


def test_a_node_filling_a_field_not_seen_yet_asks_libcst() -> None:
    walk._ORDERS.pop(cst.Call, None)
    bare = cst.parse_expression("f()")
    assert isinstance(bare, cst.Call)
    assert list(all_children(bare)) == list(bare.children)
    learned = walk._ORDERS[cst.Call]
    assert len(learned) == 1 and "args" not in learned[0][0]
    argued = cst.parse_expression("(f)(1, k=2)")
    assert isinstance(argued, cst.Call)
    children = list(all_children(argued))
    assert [type(c) for c in children] == [type(c) for c in argued.children]
    assert all(a is b for a, b in zip(children, argued.children))
    assert len(walk._ORDERS[cst.Call]) == 2
    # and the first order still serves a call without arguments
    other = cst.parse_expression("g()")
    assert isinstance(other, cst.Call)
    assert list(all_children(other)) == list(other.children)
    assert len(walk._ORDERS[cst.Call]) == 2
