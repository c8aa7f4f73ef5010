"""Calls that stand as statements of their own, and the edit that removes one while
keeping its block valid (`Statements.of(facts).removal(call)`).

Removing the only statement of a block would leave it empty: the statement becomes
`pass`, unless the block is the body of an `if` without `else` whose test only reads
(`if torch.cuda.is_available():`), in which case the whole `if` goes. The parents are
found by one extra pass over the module, made only when a rule asks.
"""

from __future__ import annotations

from typing import Union

import libcst as cst

from accel_lint.facts.file import FileFacts

Removal = dict[cst.CSTNode, Union[cst.CSTNode, cst.RemovalSentinel]]


class _Parents(cst.CSTVisitor):
    def __init__(self) -> None:
        self.statement: dict[int, tuple[cst.Expr, cst.SimpleStatementLine]] = {}
        self.block: dict[int, cst.IndentedBlock] = {}
        self.owner: dict[int, cst.CSTNode] = {}  # block -> the compound statement it belongs to
        self.in_orelse: set[int] = set()  # `if` statements that are an `elif`

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        for small in node.body:
            if isinstance(small, cst.Expr) and isinstance(small.value, cst.Call):
                self.statement[id(small.value)] = (small, node)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for statement in node.body:
            self.block[id(statement)] = node

    def visit_If(self, node: cst.If) -> None:
        self.owner[id(node.body)] = node
        if isinstance(node.orelse, cst.If):
            self.in_orelse.add(id(node.orelse))


class Statements:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._parents: _Parents | None = None

    @classmethod
    def of(cls, facts: FileFacts) -> Statements:
        return facts.shared(cls)

    @property
    def parents(self) -> _Parents:
        if self._parents is None:
            self._parents = _Parents()
            self.facts.module.visit(self._parents)
        return self._parents

    def is_statement(self, call: cst.Call) -> bool:
        """The call is a whole expression statement (`torch.cuda.empty_cache()`)."""
        return id(call) in self.parents.statement

    def removal(self, call: cst.Call) -> Removal | None:
        """The replacements that remove the statement `call` is, or None when it is part
        of a larger statement (an assignment, a `with` item, an argument)."""
        found = self.parents.statement.get(id(call))
        if found is None:
            return None
        small, line = found
        if len(line.body) > 1:
            # the others stay on the line, the last one without a dangling semicolon
            kept = [s for s in line.body if s is not small]
            kept[-1] = kept[-1].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
            return {line: line.with_changes(body=kept)}
        return self._remove_statement(line)

    def _remove_statement(self, statement: cst.BaseStatement) -> Removal:
        parents = self.parents
        block = parents.block.get(id(statement))
        if block is None or len(block.body) > 1:
            return {statement: cst.RemovalSentinel.REMOVE}
        owner = parents.owner.get(id(block))
        if (
            isinstance(owner, cst.If)
            and owner.orelse is None
            and id(owner) not in parents.in_orelse
            and _only_reads(owner.test)
        ):
            return self._remove_statement(owner)
        if isinstance(statement, cst.SimpleStatementLine):
            return {statement: statement.with_changes(body=[cst.Pass()])}
        return {statement: cst.SimpleStatementLine(body=[cst.Pass()])}


def _only_reads(test: cst.BaseExpression) -> bool:
    """A test whose evaluation changes nothing: names, attributes, literals,
    comparisons, `not`/`and`/`or`, and argument-less `is_available()` calls."""
    if isinstance(test, (cst.Name, cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(test, cst.Attribute):
        return _only_reads(test.value)
    if isinstance(test, cst.Call):
        func = test.func
        return (
            isinstance(func, cst.Attribute)
            and func.attr.value == "is_available"
            and not test.args
            and _only_reads(func.value)
        )
    if isinstance(test, cst.UnaryOperation):
        return _only_reads(test.expression)
    if isinstance(test, cst.BooleanOperation):
        return _only_reads(test.left) and _only_reads(test.right)
    if isinstance(test, cst.Comparison):
        return _only_reads(test.left) and all(_only_reads(c.comparator) for c in test.comparisons)
    return False
