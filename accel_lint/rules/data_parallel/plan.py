"""Edits of the migration, and how they become one `Fix`.

Each migration step returns a `Plan`: node rewrites, statements inserted before
or after a statement, statements removed, and runs of sibling statements to put
under one `if <test>:`. Steps do not coordinate: their edits may nest (a print
to guard inside the epoch loop that also gets `set_epoch`) or touch the same
statement. `to_fix` composes them in one transformer pass and keeps only the
outermost edited nodes, so the fix's replacements never nest.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Union

import libcst as cst

from accel_lint.rule import Fix, Replacement
from accel_lint.rules.data_parallel.tree import Tree

Rewrite = Callable[[Any], cst.CSTNode]
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


@dataclass(frozen=True, eq=False)
class GuardRun:
    """Consecutive sibling statements that only one process must run."""

    test: str
    statements: tuple[cst.SimpleStatementLine, ...]


@dataclass
class Plan:
    rewrites: dict[cst.CSTNode, list[Rewrite]] = field(default_factory=dict)
    before: dict[cst.BaseStatement, list[cst.BaseStatement]] = field(default_factory=dict)
    after: dict[cst.BaseStatement, list[cst.BaseStatement]] = field(default_factory=dict)
    removed: set[cst.CSTNode] = field(default_factory=set)
    guards: list[GuardRun] = field(default_factory=list)
    imports: list[str] = field(default_factory=list)

    def rewrite(self, node: cst.CSTNode, rewrite: Rewrite) -> None:
        """`rewrite` receives the node with every nested edit already applied."""
        self.rewrites.setdefault(node, []).append(rewrite)

    def insert_before(self, statement: cst.BaseStatement, new: Sequence[cst.BaseStatement]) -> None:
        self.before.setdefault(statement, []).extend(new)

    def insert_after(self, statement: cst.BaseStatement, new: Sequence[cst.BaseStatement]) -> None:
        self.after.setdefault(statement, []).extend(new)

    def remove(self, statement: cst.BaseStatement) -> None:
        self.removed.add(statement)

    def need(self, *imports: str) -> None:
        self.imports.extend(i for i in imports if i not in self.imports)


def merge(plans: Sequence[Plan]) -> Plan:
    merged = Plan()
    for plan in plans:
        for node, rewrites in plan.rewrites.items():
            merged.rewrites.setdefault(node, []).extend(rewrites)
        for node, stmts in plan.before.items():
            merged.insert_before(node, stmts)
        for node, stmts in plan.after.items():
            merged.insert_after(node, stmts)
        merged.removed |= plan.removed
        merged.guards.extend(plan.guards)
        merged.need(*plan.imports)
    return merged


def guard_block(test: str, statements: Sequence[cst.SimpleStatementLine]) -> cst.If:
    """`if <test>:` around `statements`; comments above the first one stay above the `if`."""
    first, *rest = statements
    # a blank line of the module level is indented in a block: it must stay empty
    rest = [
        s.with_changes(leading_lines=[_unindented(line) for line in s.leading_lines]) for s in rest
    ]
    return cst.If(
        test=cst.parse_expression(test),
        body=cst.IndentedBlock(body=[first.with_changes(leading_lines=()), *rest]),
        leading_lines=first.leading_lines,
    )


def _unindented(line: cst.EmptyLine) -> cst.EmptyLine:
    return line.with_changes(indent=False) if line.comment is None else line


class _Compose(cst.CSTTransformer):
    """Applies a plan to the subtrees it edits, innermost edits first."""

    def __init__(self, plan: Plan) -> None:
        super().__init__()
        self.plan = plan
        self.run_of: dict[cst.CSTNode, GuardRun] = {
            member: run for run in plan.guards for member in run.statements
        }
        self.structural: set[cst.CSTNode] = {
            *plan.before,
            *plan.after,
            *plan.removed,
            *self.run_of,
        }
        self.keys = {*plan.rewrites, *self.structural}
        self.collected: dict[int, list[cst.SimpleStatementLine]] = {}

    def on_leave(  # type: ignore[override]
        self, original_node: cst.CSTNode, updated_node: cst.CSTNode
    ) -> Replacement:
        if original_node not in self.keys:
            return updated_node
        result = updated_node
        for rewrite in self.plan.rewrites.get(original_node, ()):
            result = rewrite(result)
        value: Replacement = result
        if original_node in self.structural:
            assert isinstance(original_node, cst.BaseStatement)
            out = list(self.plan.before.get(original_node, ()))
            run = self.run_of.get(original_node)
            if run is not None:
                assert isinstance(result, cst.SimpleStatementLine)
                members = self.collected.setdefault(id(run), [])
                members.append(result)
                if original_node is run.statements[-1]:
                    out.append(guard_block(run.test, members))
            elif original_node not in self.plan.removed:
                assert isinstance(result, cst.BaseStatement)
                out.append(result)
            out.extend(self.plan.after.get(original_node, ()))
            value = cst.FlattenSentinel(out) if out else cst.RemovalSentinel.REMOVE
        return value


def to_fix(tree: Tree, plan: Plan, message: str) -> Fix:
    """One fix whose replacements are the outermost edited nodes. Only their subtrees
    are transformed, in source order (the members of a guard run are met in order)."""
    composer = _Compose(plan)
    keys = composer.keys
    outermost = [k for k in keys if not any(a in keys for a in tree.ancestors(k))]
    replacements: dict[cst.CSTNode, Replacement] = {}
    for node in sorted(outermost, key=tree.index):
        replacements[node] = node.visit(composer)
    return Fix(message, replacements, tuple(plan.imports))
