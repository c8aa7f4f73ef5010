"""One batched traversal of a libcst tree for every visitor of a file.

libcst's own `visit_batched` rebuilds every node while walking (22 ms per file
on torch's sources, as much as the parse); this walker reads the dataclass
fields directly and skips whitespace and punctuation (1.4 ms per file, see
`benchmarks/`). Visitors keep libcst's naming: `visit_<Node>` / `leave_<Node>`
and `visit_<Node>_<field>` / `leave_<Node>_<field>` around one field.

Not dispatched and not descended: whitespace, punctuation, operators, and the
`Name` nodes that are labels rather than uses (attribute names, keyword names,
def/class names, import lists); visitors read those from their parent node.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import libcst as cst

Method = Callable[[Any], None]
# a field to descend (in reverse source order), with the hooks entering and leaving it
_Field = tuple[str, tuple[Method, ...], tuple[Method, ...]]

# Fields never descended: labels, whitespace, punctuation, operators.
_SKIP_FIELD_PREFIXES = (
    "whitespace",
    "lpar",
    "rpar",
    "lbrace",
    "rbrace",
    "lbracket",
    "rbracket",
    "comma",
    "semicolon",
    "leading_lines",
    "lines_after",
    "trailing_whitespace",
    "header",
    "footer",
    "newline",
    "equal",
    "colon",
    "dot",
    "operator",
    "indent",
    "asynchronous",
    "first_line",
    "first_colon",
    "posonly_ind",
    "second_colon",
    "walrus",
    "default_indent",
    "default_newline",
    "encoding",
    "has_trailing_newline",
)

# Source order where the dataclass order differs, and label fields left out.
_FIELD_OVERRIDES: dict[type[cst.CSTNode], tuple[str, ...]] = {
    cst.FunctionDef: ("decorators", "params", "returns", "body"),
    cst.ClassDef: ("decorators", "bases", "keywords", "body"),
    cst.ExceptHandler: ("type", "name", "body"),
    cst.Attribute: ("value",),
    cst.Arg: ("value",),
    cst.Param: ("annotation", "default"),
    cst.Import: (),
    cst.ImportFrom: (),
    cst.Global: (),
    cst.Nonlocal: (),
    cst.Decorator: ("decorator",),
    cst.IfExp: ("test", "body", "orelse"),
}

_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def child_fields(node_type: type[cst.CSTNode]) -> tuple[str, ...]:
    """The fields the walk descends into, in source order, for a node type."""
    fields = _FIELDS.get(node_type)
    if fields is None:
        override = _FIELD_OVERRIDES.get(node_type)
        if override is not None:
            fields = override
        else:
            fields = tuple(
                f.name
                for f in dataclasses.fields(node_type)
                if not f.name.startswith(_SKIP_FIELD_PREFIXES)
            )
        _FIELDS[node_type] = fields
    return fields


# Whether a type is a libcst node, by type: `isinstance(x, cst.CSTNode)` goes through
# `ABCMeta.__instancecheck__`, a Python-level call, for every child of every node.
NODE_TYPES: dict[type, bool] = {list: False, tuple: False, str: False, type(None): False}


def is_node_type(kind: type) -> bool:
    """`issubclass(kind, cst.CSTNode)`, remembered in `NODE_TYPES` (look it up there
    first, `NODE_TYPES.get(type(x))`, and call this only when it answers None)."""
    found = NODE_TYPES[kind] = issubclass(kind, cst.CSTNode)
    return found


def is_node(value: object) -> bool:
    """`isinstance(value, cst.CSTNode)`, by type (see `NODE_TYPES`)."""
    found = NODE_TYPES.get(type(value))
    return is_node_type(type(value)) if found is None else found


_CLASS_METHODS: dict[type, dict[str, str]] = {}


def _method_names(cls: type) -> dict[str, str]:
    """`visit_*`/`leave_*` method names of a visitor class, computed once per class."""
    names = _CLASS_METHODS.get(cls)
    if names is None:
        names = {
            attr: attr
            for attr in dir(cls)
            if attr.startswith(("visit_", "leave_")) and callable(getattr(cls, attr))
        }
        _CLASS_METHODS[cls] = names
    return names


def collect_methods(visitors: Sequence[object]) -> dict[str, list[Method]]:
    """Bound visit/leave methods of all visitors, in visitor order, by method name."""
    table: dict[str, list[Method]] = {}
    for visitor in visitors:
        for attr in _method_names(type(visitor)):
            table.setdefault(attr, []).append(getattr(visitor, attr))
    return table


def walk(
    root: cst.CSTNode,
    visitors: Sequence[object],
    parents: dict[cst.CSTNode, cst.CSTNode] | None = None,
) -> None:
    """Visit `root` depth-first in source order, calling every visitor's methods.

    `visit_X` methods run in visitor order; `leave_X` methods too. Iterative, so
    deeply nested expressions cannot exhaust the recursion limit. `parents`, when
    given, receives each descended node's parent (what positions need, without a
    second walk).
    """
    table = collect_methods(visitors)
    get = table.get
    # Per node type, looked up once (the language server walks a whole file on every
    # edit): its visit and leave methods, and for each field to descend, the hooks
    # around it. A stack entry is a node to enter, or methods to call on a node (its
    # leave methods, a field's hooks); none is pushed where there is nothing to call.
    plans: dict[type, tuple[tuple[Method, ...], tuple[Method, ...], tuple[_Field, ...]]] = {}
    stack: list[tuple[Any, tuple[Method, ...] | None]] = [(root, None)]
    push = stack.append
    pop = stack.pop
    node_types = NODE_TYPES
    while stack:
        node, calls = pop()
        if calls is not None:
            for method in calls:
                method(node)
            continue
        kind = type(node)
        plan = plans.get(kind)
        if plan is None:
            name = kind.__name__
            plan = plans[kind] = (
                tuple(get("visit_" + name, ())),
                tuple(get("leave_" + name, ())),
                tuple(
                    (
                        field,
                        tuple(get(f"visit_{name}_{field}", ())),
                        tuple(get(f"leave_{name}_{field}", ())),
                    )
                    for field in reversed(child_fields(kind))
                ),
            )
        visits, leaves, fields = plan
        for method in visits:
            method(node)
        if leaves:
            push((node, leaves))
        for field, entering, leaving in fields:
            if leaving:
                push((node, leaving))
            value = getattr(node, field)
            kind = type(value)
            if kind is list or kind is tuple:
                for child in reversed(value):
                    found = node_types.get(type(child))
                    if found or (found is None and is_node_type(type(child))):
                        push((child, None))
                        if parents is not None:
                            parents[child] = node
            else:
                found = node_types.get(kind)
                if found or (found is None and is_node_type(kind)):
                    push((value, None))
                    if parents is not None:
                        parents[value] = node
            if entering:
                push((node, entering))
