"""Lists of layers built statement by statement (`layers = [...]`, `layers += [...]`,
`layers.append(x)`, `layers.extend([...])`) and splatted into `nn.Sequential(*layers)`.
Consecutive statements that extend one list keep its order, so adjacent elements
are adjacent layers; a list counts only when nothing else refers to it, since any
other reference could reorder or interleave its elements."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.names import Scope
from accel_lint.rules.conv_bias_before_norm.collected import Collected
from accel_lint.rules.conv_bias_before_norm.syntax import (
    Elements,
    SmallStatements,
    single_positional,
)

# (earlier module, the module right after it, scope, class)
Pair = tuple[cst.BaseExpression, cst.BaseExpression, Scope, Union[cst.ClassDef, None]]


@dataclass
class ListCandidate:
    """A list built in one scope and splatted into `nn.Sequential(*name)`."""

    pairs: list[Pair] = field(default_factory=list)
    allowed_refs: set[cst.CSTNode] = field(default_factory=set)
    splatted: bool = False


def collect_list_contributions(
    stmts: SmallStatements,
    scope: Scope,
    cls: cst.ClassDef | None,
    lists: dict[tuple[int, str], ListCandidate],
) -> None:
    previous: tuple[str, Elements] | None = None
    for stmt in stmts:
        found = _list_contribution(stmt) if stmt is not None else None
        if found is None:
            previous = None
            continue
        name, elements, reset, refs = found
        key = owner_key(name, scope)
        if key is None:
            previous = None
            continue
        candidate = lists.setdefault(key, ListCandidate())
        candidate.allowed_refs.update(refs)
        pairs = list(zip(elements, elements[1:]))
        # consecutive statements that extend the same list continue its order
        joins = previous is not None and previous[0] == name.value and not reset
        if joins and previous is not None and previous[1] and elements:
            pairs.append((previous[1][-1], elements[0]))
        candidate.pairs.extend(
            (a, b, scope, cls) for a, b in pairs if a is not None and b is not None
        )
        previous = (name.value, elements)


def list_is_plain(
    key: tuple[int, str], candidate: ListCandidate, seen: Collected, facts: FileFacts
) -> bool:
    """Every reference to the list appends, extends, starts it or splats it into a
    Sequential: nothing else can reorder or interleave its elements."""
    owner = _scope_by_id(facts).get(key[0])
    if owner is None or owner.kind not in ("module", "function") or owner.node is None:
        return False
    for binding in owner.bindings.get(key[1], []):
        if not isinstance(binding.node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Param)):
            return False
    return all(ref in candidate.allowed_refs for ref in seen.refs_within(key[1], owner))


def _scope_by_id(facts: FileFacts) -> dict[int, Scope]:
    table = {id(s): s for s in facts.scope_of.values()}
    table[id(facts.module_scope)] = facts.module_scope
    return table


def owner_key(name: cst.Name, scope: Scope) -> tuple[int, str] | None:
    bindings = scope.lookup(name.value)
    if not bindings or bindings[0].scope is None:
        return None
    return id(bindings[0].scope), name.value


def _display_elements(expr: cst.BaseExpression) -> Elements | None:
    if not isinstance(expr, (cst.List, cst.Tuple)):
        return None
    return [None if isinstance(e, cst.StarredElement) else e.value for e in expr.elements]


def _list_contribution(
    stmt: cst.BaseSmallStatement,
) -> tuple[cst.Name, Elements, bool, list[cst.CSTNode]] | None:
    """(list name, elements it adds in order, True when it starts a new list, the
    references to the list this statement makes) for `layers = [...]`,
    `layers += [...]`, `layers.append(x)` and `layers.extend([...])`."""
    if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
        targets = (
            [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        )
        if len(targets) != 1 or not isinstance(targets[0], cst.Name) or stmt.value is None:
            return None
        elements = _display_elements(stmt.value)
        if elements is None or not isinstance(stmt.value, cst.List):
            return None
        return targets[0], elements, True, [targets[0]]
    if isinstance(stmt, cst.AugAssign):
        if not isinstance(stmt.target, cst.Name) or not isinstance(stmt.operator, cst.AddAssign):
            return None
        elements = _display_elements(stmt.value)
        return stmt.target, elements if elements is not None else [None], False, [stmt.target]
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        func = call.func
        arg = single_positional(call)
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and arg):
            return None
        if func.attr.value == "append":
            return func.value, [arg], False, [func.value]
        if func.attr.value == "extend":
            elements = _display_elements(arg)
            return func.value, elements if elements is not None else [None], False, [func.value]
    return None
