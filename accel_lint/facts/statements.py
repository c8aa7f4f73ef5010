"""Calls that stand as statements of their own, and the edit that removes one while
keeping its block valid (`Statements.of(facts).removal(call)`).

Removing the only statement of a block would leave it empty: the statement becomes
`pass`, unless the block is the body of an `if` without `else` whose test only reads
(`if torch.cuda.is_available():`), in which case the whole `if` goes. The parents come
from `Tree` (one extra pass over the module, made only when a rule asks).
"""

from __future__ import annotations

from typing import Union

import libcst as cst

from accel_lint.facts.file import FileFacts
from accel_lint.facts.tree import Tree

Removal = dict[cst.CSTNode, Union[cst.CSTNode, cst.RemovalSentinel]]


class Statements:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    @classmethod
    def of(cls, facts: FileFacts) -> Statements:
        return facts.shared(cls)

    def _statement(self, call: cst.Call) -> tuple[cst.Expr, cst.SimpleStatementLine] | None:
        tree = Tree.of(self.facts)
        small = tree.parent(call)
        line = tree.parent(small) if isinstance(small, cst.Expr) else None
        if isinstance(small, cst.Expr) and isinstance(line, cst.SimpleStatementLine):
            return small, line
        return None

    def is_statement(self, call: cst.Call) -> bool:
        """The call is a whole expression statement (`torch.cuda.empty_cache()`)."""
        return self._statement(call) is not None

    def removal(self, call: cst.Call) -> Removal | None:
        """The replacements that remove the statement `call` is, or None when it is part
        of a larger statement (an assignment, a `with` item, an argument)."""
        found = self._statement(call)
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
        tree = Tree.of(self.facts)
        block = tree.parent(statement)
        if not isinstance(block, cst.IndentedBlock) or len(block.body) > 1:
            return {statement: cst.RemovalSentinel.REMOVE}
        owner = tree.parent(block)
        if (
            isinstance(owner, cst.If)
            and owner.orelse is None
            and not isinstance(tree.parent(owner), cst.If)  # an `elif`
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
