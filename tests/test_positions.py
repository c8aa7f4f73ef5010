"""Positions found from one statement's code (`accel_lint.positions`) are exactly
libcst's own `PositionProvider` ranges, for every node of the kinds rules report."""

from __future__ import annotations

from pathlib import Path

import libcst as cst
import pytest
from libcst.metadata import MetadataWrapper, PositionProvider

from accel_lint.positions import Locator, walk_nodes
from tests.support import ROOT

FILES = sorted([*(ROOT / "fixtures").rglob("*.py"), *(ROOT / "tests" / "cases").glob("ACL*.py")])
KINDS = (cst.Call, cst.For, cst.While, cst.Arg, cst.Attribute, cst.BaseStatement, cst.Name)

SHAPES = """\
import torch  # a comment
@decorator(
    1,
)
def f(a,
      b):  # comment
    if a:
        x = g(a)
    elif b and h(
        b,
    ):
        for i in range(3): k(i)
    else:
        try:
            y = m(1)
        except (ValueError, p(2)) as e:
            q(e)
        finally:
            r()
    with open(s(1)) as fh, t(2):
        pass
    while u(1):
        break
    return [v(i) for i in w(3)]
class C(Base, metaclass=M(1)):
    z: int = n(1)
\tdef g(self): return o(1)
"""


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(ROOT)) for p in FILES])
def test_ranges_equal_libcst(path: Path) -> None:
    _compare(path.read_text(encoding="utf-8"))


def test_ranges_of_every_statement_shape() -> None:
    _compare(SHAPES.replace("\t", "    "))


def test_tab_indented_file() -> None:
    _compare("if x:\n\tfor i in y:\n\t\tf(i,\n\t\t  2)\n")


def _compare(text: str) -> None:
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locator = Locator(module, text)
    for node in walk_nodes(module):
        if isinstance(node, KINDS):
            assert locator.range_of(node) == expected[node], cst.Module([]).code_for_node(node)
    assert locator._full is None, "fell back to the full PositionProvider"


def test_form_feeds_and_carriage_returns_are_numbered_as_cpython_does() -> None:
    """`str.splitlines` breaks at a form feed, CPython does not; a lone `\\r` is a
    line break to both. Neither sends the file to the full PositionProvider."""
    _compare("import torch\n\x0c\ndef f(x):\n    return g(x)\n")
    _compare("a = f(1)\r\nb = g(2)\n\x0c# page\nc = h(3)\n")


TEXT_SHAPES = """\
x = f(a)[0] + g(b) * (h(c))
if x == f(a):  # f(a) twice in the header and body: found by generating the code
    y = f(a)
s = "g(b)"; t = g(b)
z = [
    k(1),
    k(2)]
w = "héllo" + k(3)
@torch.no_grad()
def ev():
    torch.no_grad()
"""


@pytest.mark.parametrize(
    "text",
    [*(p.read_text(encoding="utf-8") for p in FILES), SHAPES.replace("\t", "    "), TEXT_SHAPES],
    ids=[*(str(p.relative_to(ROOT)) for p in FILES), "shapes", "text shapes"],
)
def test_ranges_found_in_the_text_equal_libcst(text: str) -> None:
    """Each expression asked alone (no statement generated before it), so that its
    range comes from the text where it can; every range is libcst's own."""
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locator = Locator(module, text)
    by_text = 0
    for node in walk_nodes(module):
        if isinstance(node, cst.BaseExpression):
            locator._ranges.clear()
            assert locator.range_of(node) == expected[node], cst.Module([]).code_for_node(node)
            by_text += len(locator._ranges) == 1  # the codegen path ranges the statement
    assert locator._full is None
    if text == TEXT_SHAPES:  # the text's way is taken: f(a) and g(b) only where unique
        assert by_text >= 10


@pytest.mark.parametrize(
    "text",
    [*(p.read_text(encoding="utf-8") for p in FILES), SHAPES.replace("\t", "    ")],
    ids=[*(str(p.relative_to(ROOT)) for p in FILES), "shapes"],
)
def test_the_first_line_of_every_statement_and_expression_is_libcst_s(text: str) -> None:
    """`line_of`, which a finding's related nodes ask (`(line 150)`): each node asked
    first, with nothing located before it; a loop, `if`, `with` or `try` of a block
    is answered from CPython's tree, without generating its code."""
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    locator = Locator(module, text)
    headed = 0
    for node in walk_nodes(module):
        if isinstance(node, (cst.BaseStatement, cst.BaseExpression)):
            locator._ranges.clear()
            assert locator.line_of(node) == expected[node].start.line
            headed += not locator._ranges  # nothing generated, nothing found in the text
    assert locator._full is None
    if text.startswith("import torch  # a comment"):  # SHAPES: each kind of statement
        assert headed == 5  # if, for, try, with, while (an `elif` is not of a block)


def test_a_call_continued_on_indented_lines_is_found_in_the_text() -> None:
    """Its continuation lines start with the block's indentation: generated as inside
    its statement, the call's code is the file's, so no statement is generated."""
    text = (
        "def train(loader):\n"
        "    for x in loader:\n"
        "        out = model(\n"
        "            x.to(device),\n"
        "            k(4))\n"
        "        out.backward()\n"
    )
    module = cst.parse_module(text)
    expected = MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider)
    calls = [n for n in walk_nodes(module) if isinstance(n, cst.Call)]
    assert len(calls) == 4
    for call in calls:
        locator = Locator(module, text)
        assert locator.range_of(call) == expected[call]
        assert len(locator._ranges) == 1  # found in the text, nothing generated
