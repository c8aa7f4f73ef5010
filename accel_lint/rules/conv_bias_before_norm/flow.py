"""Where a conv's output goes straight into a norm: neighbours in an `nn.Sequential`
(`sequential`), `norm(conv(x))`, and `x = conv(x)` directly followed by
`x = norm(x)` or `return norm(x)`. Each such place is an `Edge` from the conv's
constructor call; both ends must resolve to the constructor that built them, or
there is no edge. Whether the conv is used anywhere else is `uses`' question."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.names import Scope
from accel_lint.rules.conv_bias_before_norm.collected import Collected, Edge
from accel_lint.rules.conv_bias_before_norm.layer_lists import When
from accel_lint.rules.conv_bias_before_norm.sequential import adjacent_pairs
from accel_lint.rules.conv_bias_before_norm.syntax import flatten, single_positional


def feeding_edges(seen: Collected, facts: FileFacts) -> dict[cst.Call, list[Edge]]:
    """Every place a conv feeds a norm, by the conv's constructor call."""
    edges: dict[cst.Call, list[Edge]] = {}
    for a, b, scope, cls, when in adjacent_pairs(seen, facts):
        _add_edge(seen, edges, a, b, scope, cls, when=when)
    for conv_call, norm_func, scope, cls in _applications(seen):
        _add_edge(seen, edges, conv_call, norm_func, scope, cls, called=True)
    return edges


def _add_edge(
    seen: Collected,
    edges: dict[cst.Call, list[Edge]],
    conv_expr: cst.BaseExpression,
    norm_expr: cst.BaseExpression,
    scope: Scope,
    cls: cst.ClassDef | None,
    *,
    called: bool = False,
    when: When = None,
) -> None:
    """`conv_expr` feeds `norm_expr`. With `called`, `conv_expr` is the call of the conv."""
    use = conv_expr.func if called and isinstance(conv_expr, cst.Call) else conv_expr
    norm = seen.resolve(norm_expr, scope, cls)
    if norm is None or norm[0].conv:
        return
    conv = seen.resolve(use, scope, cls)
    if conv is None or not conv[0].conv:
        return
    edges.setdefault(conv[0].call, []).append(Edge(use, conv[1], norm[0], norm[1], when))


def _applications(
    seen: Collected,
) -> Iterator[tuple[cst.Call, cst.BaseExpression, Scope, cst.ClassDef | None]]:
    """`norm(conv(x))`, and `x = conv(x)` directly followed by `x = norm(x)` or
    `return norm(x)`: (the conv's call, the norm's callee, scope, class)."""
    for call, scope, cls in seen.calls:
        inner = single_positional(call)
        if isinstance(inner, cst.Call):
            yield inner, call.func, scope, cls
    for body, scope, cls in seen.blocks:
        stmts = flatten(body)
        for first, second in zip(stmts, stmts[1:]):
            if not (
                isinstance(first, cst.Assign)
                and len(first.targets) == 1
                and isinstance(first.targets[0].target, cst.Name)
                and isinstance(first.value, cst.Call)
            ):
                continue
            name = first.targets[0].target.value
            if isinstance(second, cst.Assign):
                if not (
                    len(second.targets) == 1
                    and isinstance(second.targets[0].target, cst.Name)
                    and second.targets[0].target.value == name
                ):
                    continue  # the conv's output would stay alive under its own name
            elif not isinstance(second, cst.Return):
                continue
            applied = second.value
            if isinstance(applied, cst.Call):
                arg = single_positional(applied)
                if isinstance(arg, cst.Name) and arg.value == name:
                    yield first.value, applied.func, scope, cls
