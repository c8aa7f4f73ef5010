"""What the walk records for ACL404, as plain data: for each expression, the context
its value goes to (assigned, passed to a call, returned, a branch of `x if c else y`,
iterated by a `for`, or read as `.sampler`), every loop with the loops around it and
its source order, and every use of a name or of a `self.<attribute>`. A sampler can
only be followed once every binding of the file is known, so the walk records and
`finish()` follows (see `flow`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from accel_lint.names import Scope


@dataclass(frozen=True)
class Assigned:
    node: cst.Assign | cst.AnnAssign
    scope: Scope
    class_def: cst.ClassDef | None


@dataclass(frozen=True)
class Passed:
    call: cst.Call
    index: int | None  # positional index; None for keywords and after a `*args`
    keyword: str | None
    scope: Scope


@dataclass(frozen=True)
class Returned:
    function: cst.FunctionDef


@dataclass(frozen=True)
class ReturnedItem:
    """The `index`-th element of a tuple the function returns (`return loader, valset`)."""

    function: cst.FunctionDef
    index: int


@dataclass(frozen=True)
class IteratedItem:
    """An element of a tuple or list display a `for` iterates (`for loader in (a, b):`)."""

    loop: cst.For


@dataclass(frozen=True)
class Branch:
    ifexp: cst.IfExp


@dataclass(frozen=True)
class Iterated:
    loop: cst.For


@dataclass(frozen=True)
class Receiver:
    attribute: cst.Attribute


Context = Union[Assigned, Passed, Returned, ReturnedItem, Branch, Iterated, IteratedItem, Receiver]


Loop = Union[cst.For, cst.While]


@dataclass(frozen=True)
class LoopInfo:
    node: Loop
    scope: Scope
    function: cst.FunctionDef | None
    enclosing: tuple[Loop, ...]  # loops around it inside its own function, outermost first
    order: int


@dataclass
class Record:
    """Everything the walk collects, keyed by node identity."""

    contexts: dict[int, Context] = field(default_factory=dict)
    names: dict[str, list[tuple[cst.Name, Scope]]] = field(default_factory=dict)
    self_attrs: dict[str, list[tuple[cst.Attribute, cst.ClassDef | None]]] = field(
        default_factory=dict
    )
    attr_values: dict[tuple[cst.ClassDef, str], list[cst.BaseExpression]] = field(
        default_factory=dict
    )
    loops: dict[Loop, LoopInfo] = field(default_factory=dict)
    order: dict[cst.CSTNode, int] = field(default_factory=dict)

    def tick(self, node: cst.CSTNode) -> int:
        self.order[node] = len(self.order)
        return self.order[node]


def is_self_attribute(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    )
