"""Where a node sits in its module: parents and source order.

The walk gives rules no parents. The migration needs many questions of the
kind "which statement, block and loops hold this call", so it builds this
index once, only for a file with one `DataParallel(...)` call. It descends the
fields the walk descends (`accel_lint.walk`: no whitespace, punctuation or label
names) and reads them directly: libcst's `node.children` costs seven times as much.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Union

import libcst as cst

from accel_lint.walk import child_fields as walked_fields
from accel_lint.walk import is_node

Block = Union[cst.Module, cst.IndentedBlock]
Loop = Union[cst.For, cst.While]
_NEW_SCOPE = (cst.FunctionDef, cst.ClassDef, cst.Lambda)


class Tree:
    """Parents and preorder positions of every node of `module`."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self._parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self._order: dict[cst.CSTNode, int] = {}
        stack: list[cst.CSTNode] = [module]
        while stack:
            node = stack.pop()
            self._order[node] = len(self._order)
            children = _children(node)
            for child in children:
                self._parent[child] = node
            stack.extend(reversed(children))

    def index(self, node: cst.CSTNode) -> int:
        """The node's position in a preorder walk (source order, near enough)."""
        return self._order[node]

    def nodes(self) -> Iterator[cst.CSTNode]:
        """Every node, in source order (nested definitions included)."""
        return iter(self._order)

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parent.get(node)

    def ancestors(self, node: cst.CSTNode) -> Iterator[cst.CSTNode]:
        current = self._parent.get(node)
        while current is not None:
            yield current
            current = self._parent.get(current)

    def statement(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The statement (a whole line, or a compound statement) that holds `node`."""
        if isinstance(node, cst.BaseStatement):
            return node
        for ancestor in self.ancestors(node):
            if isinstance(ancestor, cst.BaseStatement):
                return ancestor
        return None

    def block(self, statement: cst.BaseStatement) -> Block | None:
        """The block whose body lists `statement`; None for a one-line suite."""
        parent = self._parent.get(statement)
        return parent if isinstance(parent, (cst.Module, cst.IndentedBlock)) else None

    def inside(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        return node is container or any(a is container for a in self.ancestors(node))

    def precedes(self, first: cst.CSTNode, second: cst.CSTNode) -> bool:
        """`first` ends before `second` starts (neither holds the other)."""
        return self._order[first] < self._order[second] and not self.inside(second, first)

    def same_function(self, node: cst.CSTNode, container: cst.CSTNode) -> bool:
        """`node` lies in `container` without a def, class or lambda in between."""
        for ancestor in self.ancestors(node):
            if ancestor is container:
                return True
            if isinstance(ancestor, _NEW_SCOPE):
                return False
        return False

    def exclusive(self, first: cst.BaseStatement, second: cst.BaseStatement) -> bool:
        """The statements lie in different branches of one `if`/`elif`/`else` chain, with
        no loop around it in their function: no run executes both."""
        around_second = {id(n) for n in (second, *self.ancestors(second))}
        common = next((n for n in (first, *self.ancestors(first)) if id(n) in around_second), None)
        if not isinstance(common, cst.If) or common is first or common is second:
            return False
        for ancestor in self.ancestors(common):
            if isinstance(ancestor, (cst.For, cst.While)):
                return False
            if isinstance(ancestor, _NEW_SCOPE):
                break
        return True

    def loops(self, node: cst.CSTNode, container: cst.CSTNode) -> list[Loop]:
        """The loops around `node` inside `container`, innermost first."""
        found: list[Loop] = []
        for ancestor in self.ancestors(node):
            if ancestor is container:
                break
            if isinstance(ancestor, (cst.For, cst.While)):
                found.append(ancestor)
        return found


def _children(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    for name in walked_fields(type(node)):
        value = getattr(node, name)
        if type(value) is list or type(value) is tuple:
            out.extend(v for v in value if is_node(v))
        elif is_node(value):
            out.append(value)
    return out


def descendants(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """Every node under `node` that runs with it: nested defs, classes and lambdas
    are skipped (their bodies run when they are called)."""
    stack = list(reversed(_children(node)))
    while stack:
        current = stack.pop()
        yield current
        if not isinstance(current, _NEW_SCOPE):
            stack.extend(reversed(_children(current)))


def calls_in(node: cst.CSTNode) -> Iterator[cst.Call]:
    return (n for n in descendants(node) if isinstance(n, cst.Call))


def method_name(call: cst.Call) -> str | None:
    """`backward` for `loss.backward()`; None for a call of a plain name."""
    return call.func.attr.value if isinstance(call.func, cst.Attribute) else None
