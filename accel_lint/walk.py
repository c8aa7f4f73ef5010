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


# libcst's `node.children` rebuilds the node through a visitor (about 20 us a call);
# `all_children` gives the same list from the fields. Per node type: the orders of its
# fields libcst's answer showed, each with the fields it covers (see `all_children`).
_ORDERS: dict[type[cst.CSTNode], list[tuple[frozenset[str], tuple[str, ...]]]] = {}
_ALL_FIELDS: dict[type[cst.CSTNode], tuple[str, ...]] = {}


def all_children(node: cst.CSTNode) -> Sequence[cst.CSTNode]:
    """`node.children`, the same list: every child node, whitespace, punctuation and
    labels included, in libcst's order. libcst visits a type's fields in one fixed
    order; the first node of a type that fills a set of fields asks libcst and keeps
    the order its answer shows, which then serves every node of the type that fills
    no other field (`tests/test_walk.py` compares the two on every fixture's nodes)."""
    kind = type(node)
    names = _ALL_FIELDS.get(kind)
    if names is None:
        names = _ALL_FIELDS[kind] = tuple(f.name for f in dataclasses.fields(kind))
    filled: dict[str, Any] = {}
    node_types = NODE_TYPES
    for name in names:
        value = getattr(node, name)
        value_kind = type(value)
        if value_kind is list or value_kind is tuple:
            if value:
                filled[name] = value
        else:
            found = node_types.get(value_kind)
            if found or (found is None and is_node_type(value_kind)):
                filled[name] = value
    for covered, order in _ORDERS.get(kind, ()):
        if covered.issuperset(filled):
            out: list[cst.CSTNode] = []
            for name in order:
                value = filled.get(name)
                if value is None:
                    continue
                if type(value) is list or type(value) is tuple:
                    out.extend(value)
                else:
                    out.append(value)
            return out
    children = node.children
    shown = _order_of(children, filled)
    if shown is not None:
        _ORDERS.setdefault(kind, []).append((frozenset(filled), shown))
    return children


def _order_of(children: Sequence[cst.CSTNode], filled: dict[str, Any]) -> tuple[str, ...] | None:
    """The order of the fields that `children` shows, or None when the children are not
    exactly the filled fields' nodes, field after field (then libcst is always asked)."""
    field_of: dict[int, str] = {}
    for name, value in filled.items():
        for item in value if type(value) is list or type(value) is tuple else (value,):
            if id(item) in field_of or not is_node(item):
                return None
            field_of[id(item)] = name
    order: list[str] = []
    for child in children:
        holder = field_of.get(id(child))
        if holder is None:
            return None
        if not order or order[-1] != holder:
            if holder in order:
                return None  # a field's nodes apart: not field after field
            order.append(holder)
    if set(order) != set(filled):
        return None
    rebuilt = [
        item
        for name in order
        for item in (filled[name] if type(filled[name]) in (list, tuple) else (filled[name],))
    ]
    if len(rebuilt) != len(children) or any(a is not b for a, b in zip(rebuilt, children)):
        return None
    return tuple(order)
