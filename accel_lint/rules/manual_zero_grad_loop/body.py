"""Does a loop body zero-fill the gradient of its loop variable on every iteration,
and nothing else? `BodyReader` reads the statements the way torch's own
`zero_grad` would be read: `p.grad.zero_()`, `fill_(0)` or `torch.zeros_like`,
under `if p.grad is not None:`, with torch's housekeeping (`detach_()`,
`requires_grad_(False)`) allowed. Zeroing that only some iterations reach
(control flow, opaque statements) means the loop is not a `zero_grad`; any other
statement is kept as `extra`, which blocks the fix but not the finding.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts import int_value
from accel_lint.names import Scope, resolves_to
from accel_lint.torch_api import ZEROS_LIKE
from accel_lint.walk import all_children


def _is_grad_of(expr: cst.BaseExpression, var: str, *, data: bool = False) -> bool:
    """`<var>.grad` (or `<var>.grad.data` when `data`)."""
    if data and isinstance(expr, cst.Attribute) and expr.attr.value == "data":
        expr = expr.value
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value == "grad"
        and isinstance(expr.value, cst.Name)
        and expr.value.value == var
    )


def _is_zero(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.Integer):
        return int_value(expr) == 0
    if isinstance(expr, cst.Float):
        return float(expr.value.replace("_", "")) == 0.0
    return False


def _method_call(stmt: cst.BaseSmallStatement) -> tuple[cst.BaseExpression, str, cst.Call] | None:
    if (
        isinstance(stmt, cst.Expr)
        and isinstance(stmt.value, cst.Call)
        and isinstance(stmt.value.func, cst.Attribute)
    ):
        return stmt.value.func.value, stmt.value.func.attr.value, stmt.value
    return None


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _none_test(test: cst.BaseExpression, var: str, attr_chain: str = "") -> bool | None:
    """True for `<var>.grad<attr_chain> is not None`, False for `... is None`, else None."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return None
    target = test.comparisons[0]
    left = test.left
    if attr_chain:
        if not (isinstance(left, cst.Attribute) and left.attr.value == attr_chain):
            return None
        left = left.value
    if not (_is_grad_of(left, var) and _is_none(target.comparator)):
        return None
    if isinstance(target.operator, cst.IsNot):
        return True
    if isinstance(target.operator, cst.Is):
        return False
    return None


def statements_of(suite: cst.BaseSuite) -> Sequence[cst.BaseStatement | cst.BaseSmallStatement]:
    if isinstance(suite, cst.IndentedBlock):
        return suite.body
    assert isinstance(suite, cst.SimpleStatementSuite)
    return suite.body


@dataclass
class _Body:
    """What a loop body does with the gradient of its loop variable."""

    zeroes: bool = False  # some statement zero-fills `<var>.grad` on every iteration
    skips: bool = False  # zeroing that runs only for some parameters, or control flow
    extra: cst.CSTNode | None = None  # the first statement that is not part of zeroing


class BodyReader:
    """Reads a loop body into a `_Body` for the loop variable `var`."""

    def __init__(self, var: str, scope: Scope) -> None:
        self.var = var
        self.scope = scope
        self.body = _Body()

    def _extra(self, node: cst.CSTNode) -> None:
        if self.body.extra is None:
            self.body.extra = node

    def read(self, statements: Sequence[cst.BaseStatement | cst.BaseSmallStatement]) -> None:
        for stmt in statements:
            if isinstance(stmt, cst.SimpleStatementLine):
                self.read(stmt.body)
            elif isinstance(stmt, cst.If):
                self._read_if(stmt)
            elif isinstance(stmt, (cst.BaseSmallStatement)):
                self._read_small(stmt)
            else:
                self._read_opaque(stmt)

    def _read_small(self, stmt: cst.BaseSmallStatement) -> None:
        if self.zeroing(stmt):
            self.body.zeroes = True
        elif self._housekeeping(stmt) or isinstance(stmt, cst.Pass):
            return
        elif isinstance(stmt, _CONTROL_FLOW):
            self.body.skips = True
        else:
            self._extra(stmt)

    def zeroing(self, stmt: cst.CSTNode) -> bool:
        """`g.zero_()`, `g.fill_(0)` for `g` = `<var>.grad[.data]`, or
        `<var>.grad = torch.zeros_like(<var>[.grad][.data])`."""
        var = self.var
        if isinstance(stmt, cst.BaseSmallStatement) and (call := _method_call(stmt)):
            receiver, method, node = call
            if not _is_grad_of(receiver, var, data=True):
                return False
            if method == "zero_":
                return not node.args
            if method == "fill_" and len(node.args) == 1:
                arg = node.args[0]
                return (arg.keyword is None or arg.keyword.value == "value") and _is_zero(arg.value)
            return False
        if (
            isinstance(stmt, cst.Assign)
            and len(stmt.targets) == 1
            and _is_grad_of(stmt.targets[0].target, var)
            and isinstance(stmt.value, cst.Call)
            and len(stmt.value.args) == 1
            and stmt.value.args[0].keyword is None
            and not stmt.value.args[0].star
            and resolves_to(stmt.value.func, self.scope, ZEROS_LIKE)
        ):
            like = stmt.value.args[0].value
            if isinstance(like, cst.Attribute) and like.attr.value == "data":
                like = like.value
            return _is_grad_of(like, var) or (isinstance(like, cst.Name) and like.value == var)
        return False

    def _housekeeping(self, stmt: cst.BaseSmallStatement) -> bool:
        """What torch's own zero_grad does before zeroing: detach the gradient from
        any graph it belongs to."""
        call = _method_call(stmt)
        if call is None or not _is_grad_of(call[0], self.var):
            return False
        method, node = call[1], call[2]
        if method == "detach_":
            return not node.args
        return (
            method == "requires_grad_"
            and len(node.args) == 1
            and isinstance(node.args[0].value, cst.Name)
            and node.args[0].value.value == "False"
        )

    def _read_if(self, node: cst.If) -> None:
        grad_set = _none_test(node.test, self.var)
        body = statements_of(node.body)
        if grad_set is True:
            # `if p.grad is not None:` zeroes every gradient there is
            self.read(body)
            if node.orelse is not None and not _only_pass(node.orelse):
                # the else branch runs when there is no gradient: not zeroing, just more work
                if has_control_flow(node.orelse):
                    self.body.skips = True
                else:
                    self._extra(node.orelse)
            return
        if grad_set is False and node.orelse is None and len(body) == 1 and _only_continue(body[0]):
            return  # `if p.grad is None: continue`
        if _none_test(node.test, self.var, "grad_fn") is not None and (
            node.orelse is None or isinstance(node.orelse, cst.Else)
        ):
            branches = [*body, *(statements_of(node.orelse.body) if node.orelse else ())]
            if all(small_statements(s) is not None for s in branches):
                smalls = [x for s in branches for x in small_statements(s) or ()]
                # torch's own: detach_() when it has a grad_fn, else requires_grad_(False)
                if all(self._housekeeping(x) or isinstance(x, cst.Pass) for x in smalls):
                    return
        self._read_opaque(node)

    def _read_opaque(self, node: cst.CSTNode) -> None:
        """A statement we do not look into: zeroing inside it is conditional, and
        control flow inside it may skip the zeroing."""
        if self._contains_zeroing(node) or has_control_flow(node):
            self.body.skips = True
        else:
            self._extra(node)

    def _contains_zeroing(self, node: cst.CSTNode) -> bool:
        return any(self.zeroing(n) for n in _small_nodes(node))


_CONTROL_FLOW = (cst.Continue, cst.Break, cst.Return, cst.Raise)


def has_control_flow(node: cst.CSTNode) -> bool:
    return any(isinstance(n, _CONTROL_FLOW) for n in _small_nodes(node))


def _only_pass(node: cst.If | cst.Else) -> bool:
    if isinstance(node, cst.If):
        return False
    smalls = [small_statements(s) for s in statements_of(node.body)]
    return all(x is not None and all(isinstance(y, cst.Pass) for y in x) for x in smalls)


def _only_continue(stmt: cst.BaseStatement | cst.BaseSmallStatement) -> bool:
    smalls = small_statements(stmt)
    return smalls is not None and len(smalls) == 1 and isinstance(smalls[0], cst.Continue)


def small_statements(
    stmt: cst.BaseStatement | cst.BaseSmallStatement,
) -> Sequence[cst.BaseSmallStatement] | None:
    if isinstance(stmt, cst.SimpleStatementLine):
        return stmt.body
    if isinstance(stmt, cst.BaseSmallStatement):
        return [stmt]
    return None


def _small_nodes(node: cst.CSTNode) -> Iterator[cst.BaseSmallStatement]:
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.BaseSmallStatement):
            yield current
            continue
        stack.extend(all_children(current))
