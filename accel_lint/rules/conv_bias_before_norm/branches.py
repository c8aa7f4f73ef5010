"""A conv bound to a name that feeds a norm in one branch of an `if` and something
else (an activation) in the other: torchvision's VGG builds
`conv2d = nn.Conv2d(...)`, then `if batch_norm: layers += [conv2d, bn, relu]
else: layers += [conv2d, relu]`. The bias is wasted exactly when the norm branch
runs, so the fix writes the branch test into the constructor
(`bias=not batch_norm`), keeping the bias on the other path.

That is only right when the test reads the same at the constructor as at the `if`:
it is a name or attribute chain (possibly compared with a literal, or negated) that
nothing rebinds between the two, and whose root is a parameter or a name bound
outside the function."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts
from accel_lint.facts.tree import Tree
from accel_lint.names import BindingKind, Scope
from accel_lint.rules.conv_bias_before_norm.collected import Collected, Edge
from accel_lint.walk import all_children


@dataclass(frozen=True)
class Branch:
    """The norm follows the conv only on one branch of an `if`."""

    when: str  # when the norm runs, for the message
    bias: str | None  # the `bias=` expression, or None when the test cannot be moved
    reason: str = ""  # why not, when `bias` is None


def branch_bias(seen: Collected, edges: list[Edge], others: list[cst.Name]) -> Branch | None:
    """When every edge lies in one branch of an `if` after the conv's assignment and
    every other use of the conv (`others`) lies in the other branch."""
    holder = edges[0].holder
    binding = holder.binding
    if holder.kind != "name" or binding is None or binding.scope is None or not others:
        return None
    located = _statement_of(seen, binding.node)
    if located is None:
        return None
    block, index = located
    uses = [e.use for e in edges]
    for position in range(index + 1, len(block)):
        stmt = block[position]
        if not isinstance(stmt, cst.If) or stmt.orelse is None:
            continue
        body, orelse = _ids(stmt.body), _ids(stmt.orelse)
        if _within(uses, body) and _within(others, orelse):
            positive = True
        elif _within(uses, orelse) and _within(others, body):
            positive = False
        else:
            continue
        return _moved(stmt, positive, binding.scope, block[index + 1 : position])
    return None


def listed_branch_bias(facts: FileFacts, edges: list[Edge], scope: Scope) -> Branch | None:
    """For edges found under an `if` (a list of layers extended in its branch) or a
    conditional expression (`nn.BatchNorm2d(c) if use_bn else nn.Identity()` right
    after the conv): when the norm follows the conv on one branch of one test and
    never otherwise. None when the edges disagree."""
    whens = {e.when for e in edges}
    if None in whens or len(whens) != 1:
        return None
    when = next(iter(whens))
    assert when is not None
    test, positive = when
    # the statement holding the constructor, before the test's in the same block
    tree = Tree.of(facts)
    binding = edges[0].holder.binding
    built = binding.node if binding is not None else edges[0].use
    conv = tree.statement_of(built) if built is not None else None
    tested = tree.statement_of(test)
    block = tree.parent(tested) if tested is not None else None
    if conv is None or tested is None or block is None or tree.parent(conv) is not block:
        return None
    body = list(getattr(block, "body", ()))
    if conv not in body or tested not in body:
        return None
    first, last = body.index(conv), body.index(tested)
    if first > last or (first == last and isinstance(test, cst.If)):
        return None
    return _moved(test, positive, scope, body[first + 1 : last])


def _moved(
    stmt: cst.If | cst.IfExp, positive: bool, scope: Scope, between: Sequence[cst.CSTNode]
) -> Branch | None:
    """The `bias=` expression that drops the bias exactly when the `if` takes the
    branch with the norm; None when the test may change between the constructor and
    the `if`, a Branch without `bias` when it is not a test we can read."""
    shown, holds = stmt.test, positive
    if isinstance(shown, cst.UnaryOperation) and isinstance(shown.operator, cst.Not):
        shown, holds = shown.expression, not holds  # `not plain` is true: `plain` is false
    when = f"`{code_for(shown)}` is {'true' if holds else 'false'}"
    if not _simple(stmt.test):
        return Branch(
            when,
            None,
            f"the test `{code_for(stmt.test)}` is not a name, an attribute or a comparison "
            "of them that the conv's constructor could read the same",
        )
    if not _stable(stmt.test, scope, between):
        return None
    bias = _negated(stmt.test) if positive else _truth(stmt.test)
    return Branch(when, bias)


def _statement_of(
    seen: Collected, node: cst.CSTNode | None
) -> tuple[Sequence[cst.CSTNode], int] | None:
    for body, _, _ in seen.blocks:
        for i, stmt in enumerate(body):
            if isinstance(stmt, cst.SimpleStatementLine) and node in stmt.body:
                return body, i
    return None


def _ids(node: cst.CSTNode) -> set[int]:
    out: set[int] = set()
    stack = [node]
    while stack:
        current = stack.pop()
        out.add(id(current))
        stack.extend(all_children(current))
    return out


def _within(nodes: Sequence[cst.CSTNode], ids: set[int]) -> bool:
    return all(id(n) in ids for n in nodes)


def _simple(expr: cst.BaseExpression) -> bool:
    """A name or attribute chain, a literal, a comparison of those, or `not` of one."""
    if isinstance(expr, cst.Name):
        return True
    if isinstance(expr, cst.Attribute):
        return _simple(expr.value)
    if isinstance(expr, (cst.SimpleString, cst.Integer, cst.Float)):
        return True
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
        return _simple(expr.expression)
    if isinstance(expr, cst.Comparison):
        return _simple(expr.left) and all(_simple(c.comparator) for c in expr.comparisons)
    return False


def _root_names(expr: cst.CSTNode) -> set[str]:
    names: set[str] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Attribute):
            stack.append(node.value)  # not the attribute's own name
        elif isinstance(node, cst.Name):
            names.add(node.value)
        else:
            stack.extend(all_children(node))
    return names


def _stable(test: cst.BaseExpression, scope: Scope, between: Sequence[cst.CSTNode]) -> bool:
    """The test reads the same at the conv's constructor as at the `if`."""
    function = scope.function_scope()
    for name in _root_names(test):
        for binding in scope.lookup(name) or []:
            if binding.scope is not function:
                continue  # bound outside the function: a setting, not a loop variable
            if binding.kind is not BindingKind.IMPORT and not isinstance(binding.node, cst.Param):
                return False
    return not any(_assigns_any(stmt, _root_names(test)) for stmt in between)


def _assigns_any(stmt: cst.CSTNode, names: set[str]) -> bool:
    """`stmt` assigns to one of `names` or to an attribute rooted at one."""
    return bool(names) and any(_root_names(node) & names for node in _targets(stmt))


def _targets(stmt: cst.CSTNode) -> Iterator[cst.BaseExpression]:
    stack = [stmt]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Assign):
            yield from (t.target for t in node.targets)
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign, cst.For, cst.CompFor, cst.NamedExpr)):
            yield node.target
        stack.extend(all_children(node))


def _negated(test: cst.BaseExpression) -> str:
    if isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not):
        return _truth(test.expression)
    if isinstance(test, cst.Comparison):
        return f"not ({code_for(test)})"
    return f"not {code_for(test)}"


def _truth(test: cst.BaseExpression) -> str:
    """`test` as a bool: as written when it already is one."""
    if isinstance(test, cst.Comparison) or (
        isinstance(test, cst.UnaryOperation) and isinstance(test.operator, cst.Not)
    ):
        return code_for(test)
    return f"bool({code_for(test)})"
