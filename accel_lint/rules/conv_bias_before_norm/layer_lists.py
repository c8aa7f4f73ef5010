"""Lists of layers built statement by statement (`layers = [...]`, `layers += [...]`,
`layers.append(x)`, `layers.extend([...])`) and splatted into `nn.Sequential(*layers)`.
Consecutive statements that extend one list keep its order, so adjacent elements
are adjacent layers; a list counts only when nothing else refers to it, since any
other reference could reorder or interleave its elements."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.names import Scope
from accel_lint.rules.conv_bias_before_norm.collected import Collected
from accel_lint.rules.conv_bias_before_norm.syntax import Elements, single_positional

# the branch of an `if` (or of `a if test else b`) on which a pair is adjacent (the
# test's node, and True for its body); None for always
When = Union[tuple[Union[cst.If, cst.IfExp], bool], None]
# (earlier module, the module right after it, scope, class, on which branch or always)
Pair = tuple[cst.BaseExpression, cst.BaseExpression, Scope, Union[cst.ClassDef, None], When]


@dataclass
class ListCandidate:
    """A list built in one scope and splatted into `nn.Sequential(*name)`."""

    pairs: list[Pair] = field(default_factory=list)
    allowed_refs: set[cst.CSTNode] = field(default_factory=set)
    splatted: bool = False


def collect_list_contributions(
    body: Sequence[cst.CSTNode],
    scope: Scope,
    cls: cst.ClassDef | None,
    lists: dict[tuple[int, str], ListCandidate],
) -> None:
    # the list extended last, and the elements that may end it so far, each with the
    # branch it ends it on (None: whenever that element is in the list at all)
    previous: tuple[str, list[tuple[cst.BaseExpression | None, When]]] | None = None
    for stmt in _statements(body):
        if isinstance(stmt, cst.If):
            previous = _collect_if(stmt, previous, scope, cls, lists)
            continue
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
        # consecutive statements that extend the same list continue its order
        joins = previous is not None and previous[0] == name.value and not reset
        tails = previous[1] if joins and previous is not None else []
        _add_pairs(candidate, tails, elements, scope, cls)
        previous = (name.value, [(elements[-1], None)] if elements else [])


def _add_pairs(
    candidate: ListCandidate,
    tails: Sequence[tuple[cst.BaseExpression | None, When]],
    elements: Elements,
    scope: Scope,
    cls: cst.ClassDef | None,
    when: When = None,
) -> None:
    """Pairs of `elements` in order, and of each tail with the first of them (on the
    tail's branch, or on `when` for a tail that ends the list whenever it is there)."""
    pairs: list[tuple[cst.BaseExpression | None, cst.BaseExpression | None, When]] = [
        (a, b, w) for x, y in zip(elements, elements[1:]) for a, b, w in choices(x, y)
    ]
    if elements:
        for tail, tail_when in tails:
            if tail_when is None or when is None:
                pairs.append((tail, elements[0], tail_when or when))
    candidate.pairs.extend(
        (a, b, scope, cls, w) for a, b, w in pairs if a is not None and b is not None
    )


def choices(
    a: cst.BaseExpression | None, b: cst.BaseExpression | None
) -> list[tuple[cst.BaseExpression | None, cst.BaseExpression | None, When]]:
    """Neighbours `a`, `b`, with a conditional expression opened: a conv that is
    one branch of `a` is followed by `b` whenever it is built; one branch of `b`
    follows `a` on that branch only."""
    if isinstance(a, cst.IfExp):
        return [(a.body, b, None), (a.orelse, b, None)]
    if isinstance(b, cst.IfExp):
        return [(a, b.body, (b, True)), (a, b.orelse, (b, False))]
    return [(a, b, None)]


def _collect_if(
    stmt: cst.If,
    previous: tuple[str, list[tuple[cst.BaseExpression | None, When]]] | None,
    scope: Scope,
    cls: cst.ClassDef | None,
    lists: dict[tuple[int, str], ListCandidate],
) -> tuple[str, list[tuple[cst.BaseExpression | None, When]]] | None:
    """`if <test>: layers += [...]` (with an `else:` that extends the same list, or
    none): the list goes on from before the `if` into the branch taken, and from the
    branch's end (or, with no `else`, from before the `if`) into what follows."""
    branches = _branch_contributions(stmt)
    if branches is None:
        return None
    name, taken, other = branches
    key = owner_key(name, scope)
    if key is None:
        return None
    candidate = lists.setdefault(key, ListCandidate())
    tails = previous[1] if previous is not None and previous[0] == name.value else []
    after: list[tuple[cst.BaseExpression | None, When]] = []
    for positive, statements in ((True, taken), (False, other)):
        if statements is None:  # no `else`: the list goes on from before the `if`
            after.extend((tail, (stmt, False)) for tail, w in tails if w is None)
            continue
        # pairs inside the branch come from its own block; here only the way in
        branch_tails = [(tail, w) for tail, w in tails if w is None]
        for elements, reset, refs in statements:
            candidate.allowed_refs.update(refs)
            if reset:
                branch_tails = []
            if elements:
                _add_pairs(candidate, branch_tails, elements[:1], scope, cls, (stmt, positive))
                branch_tails = [(elements[-1], None)]
            else:
                branch_tails = []
        after.extend(branch_tails)
    return name.value, after


def _branch_contributions(
    stmt: cst.If,
) -> (
    tuple[
        cst.Name,
        list[tuple[Elements, bool, list[cst.CSTNode]]],
        list[tuple[Elements, bool, list[cst.CSTNode]]] | None,
    ]
    | None
):
    """(the list, the contributions of the `if` branch, those of the `else` branch or
    None when there is none) when both branches only extend one list."""
    if stmt.orelse is not None and not isinstance(stmt.orelse, cst.Else):
        return None  # an `elif` chain
    names: set[str] = set()
    first_name: cst.Name | None = None
    branches: list[list[tuple[Elements, bool, list[cst.CSTNode]]]] = []
    for block in (stmt.body, stmt.orelse.body if stmt.orelse is not None else None):
        if block is None:
            continue
        contributions = []
        for small in _statements(block.body):
            found = _list_contribution(small) if isinstance(small, cst.BaseSmallStatement) else None
            if found is None:
                return None
            name, elements, reset, refs = found
            names.add(name.value)
            first_name = first_name or name
            contributions.append((elements, reset, refs))
        branches.append(contributions)
    if len(names) != 1 or first_name is None or not branches[0]:
        return None
    return first_name, branches[0], branches[1] if stmt.orelse is not None else None


def _statements(body: Sequence[cst.CSTNode]) -> list[cst.BaseSmallStatement | cst.If | None]:
    """Small statements in execution order; an `if` as itself, any other compound
    statement as a gap (None)."""
    out: list[cst.BaseSmallStatement | cst.If | None] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        elif isinstance(stmt, cst.BaseSmallStatement):
            out.append(stmt)  # the body of a one-line suite
        else:
            out.append(stmt if isinstance(stmt, cst.If) else None)
    return out


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
