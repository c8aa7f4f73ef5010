"""What the fix puts under the rank test: the save's statement (or the `with open(...)`
block that only holds it), together with the statements right after it that use the
file it wrote (`shutil.copyfile(path, best)`, `os.replace(tmp, path)`, a log line
naming the path): left on every rank, those would copy or rename a file that rank 0
may not have finished writing, or that the other ranks never wrote."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Union

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import last_name
from accel_lint.names import BindingKind, Scope, qualified_names
from accel_lint.rules.save_on_every_rank.destination import destination
from accel_lint.rules.save_on_every_rank.record import Record, Save
from accel_lint.walk import all_children

Target = Union[cst.SimpleStatementLine, cst.SimpleStatementSuite, cst.With]
# calls that read, copy or move the file the save wrote
_FILE_CALLS = frozenset(
    {
        "shutil.copy",
        "shutil.copy2",
        "shutil.copyfile",
        "shutil.move",
        "os.replace",
        "os.rename",
        "os.symlink",
        "os.link",
    }
)
# calls that log: `print(...)`, `logger.info(...)`, `logging.warning(...)`
_LOG_CALLS = frozenset({"print", "info", "debug", "warning", "warn", "log"})
_OPENERS = frozenset({"builtins.open", "io.open", "gzip.open"})


def wrap_target(save: Save, record: Record, ranks: RankAnalysis) -> tuple[Target | None, str]:
    """The statement the rank test goes around, or why there is none."""
    statement = save.statement
    if statement is None or not _is_lone_call(statement, save.call):
        if statement is not None and len(statement.body) > 1:
            return None, "the call shares its line with other statements"
        return None, "the call is part of a larger expression"
    if any(ranks.mentions_rank(test, save.scope) for test, _ in save.guards):
        return None, "an enclosing condition already tests the rank"
    dest = destination(save.call)
    handle = _opened_file(dest, save.scope) if dest is not None else None
    if handle is None:
        return statement, ""
    with_node = record.with_of.get(handle) if isinstance(handle, cst.WithItem) else None
    if with_node is None:
        return None, "every rank opens the file before this call; guard the `open` too"
    body = with_node.body
    if body is statement or (
        isinstance(body, cst.IndentedBlock) and list(body.body) == [statement]
    ):
        return with_node, ""
    return None, "every rank opens the file in the enclosing `with`; guard that block"


def dependents(
    target: Target, save: Save, record: Record
) -> tuple[list[cst.BaseStatement], cst.Call | None]:
    """The statements right after `target` in its block that use the saved file, and
    a later call in the block that copies or moves it but cannot go under the guard
    with them (something else runs in between): that one blocks the fix."""
    if isinstance(target, cst.SimpleStatementSuite):
        return [], None
    block = record.block_of.get(target)
    paths = _paths(target, save)
    if block is None or not paths:
        return [], None
    out: list[cst.BaseStatement] = []
    rest = list(block[block.index(target) + 1 :])
    while rest:
        moved_to = _uses_file(rest[0], paths, save.scope)
        if moved_to is None:
            break
        out.append(rest.pop(0))
        paths |= moved_to  # `os.replace(tmp, path)`: then a log of `path` follows it
    for statement in rest:
        for node in _descendants(statement):
            if isinstance(node, cst.Call) and _file_call(node, paths, save.scope):
                return out, node
    return out, None


def _file_call(call: cst.Call, paths: set[str], scope: Scope) -> bool:
    names = qualified_names(call.func, scope)
    return (
        bool(names) and names <= _FILE_CALLS and any(_mentions(a.value, paths) for a in call.args)
    )


def replacements(
    target: Target, following: Sequence[cst.BaseStatement], test: cst.BaseExpression
) -> dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel]:
    """`target` and `following` inside `if <test>:`, comments above the first kept
    above the `if`."""
    if isinstance(target, cst.SimpleStatementSuite):
        # `if cond: torch.save(...)` becomes a block holding the guarded statement
        small = target.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        line = cst.SimpleStatementLine(body=[small], trailing_whitespace=target.trailing_whitespace)
        guarded = cst.IndentedBlock(body=[cst.If(test=test, body=cst.IndentedBlock(body=[line]))])
        return {target: guarded}
    out: dict[cst.CSTNode, cst.CSTNode | cst.RemovalSentinel] = {
        target: cst.If(
            test=test,
            body=cst.IndentedBlock(body=[target.with_changes(leading_lines=()), *following]),
            leading_lines=target.leading_lines,
        )
    }
    for statement in following:
        out[statement] = cst.RemovalSentinel.REMOVE
    return out


def _paths(target: Target, save: Save) -> set[str]:
    """How the code spells the saved file: the save's destination, or the path opened
    by the `with` around it."""
    if isinstance(target, cst.With):
        call = target.items[0].item
        if isinstance(call, cst.Call) and call.args and call.args[0].keyword is None:
            return {code_for(call.args[0].value)}
        return set()
    dest = destination(save.call)
    return {code_for(dest)} if dest is not None else set()


def _uses_file(statement: cst.BaseStatement, paths: set[str], scope: Scope) -> set[str] | None:
    """The statement only copies, moves or logs (under `if`s, possibly), and one of its
    calls names one of `paths` (spelled as in the save): the paths it copies or moves
    the file to; None when it does something else (an assignment, a return), which
    must stay on every rank, and so must the statement."""
    found = False
    moved_to: set[str] = set()
    stack: list[cst.CSTNode] = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.If):
            if any(isinstance(n, cst.NamedExpr) for n in _descendants(node.test)):
                return None
            stack.append(node.body)
            if node.orelse is not None:
                stack.append(node.orelse)
        elif isinstance(node, (cst.IndentedBlock, cst.Else, cst.SimpleStatementSuite)):
            stack.extend(node.body if not isinstance(node, cst.Else) else [node.body])
        elif isinstance(node, cst.SimpleStatementLine):
            stack.extend(node.body)
        elif isinstance(node, cst.Pass):
            continue
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            call = node.value
            names = qualified_names(call.func, scope)
            named = any(_mentions(arg.value, paths) for arg in call.args)
            if names and names <= _FILE_CALLS:
                if not named:
                    return None  # copies another file
                found = True
                moved_to.update(code_for(arg.value) for arg in call.args[1:2])
            elif last_name(call.func) in _LOG_CALLS:
                found = found or named
            else:
                return None
        else:
            return None
    return moved_to if found else None


def _descendants(node: cst.CSTNode) -> list[cst.CSTNode]:
    out: list[cst.CSTNode] = []
    stack = [node]
    while stack:
        current = stack.pop()
        out.append(current)
        stack.extend(all_children(current))
    return out


def _mentions(expr: cst.BaseExpression, paths: set[str]) -> bool:
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute, cst.Call)) and code_for(node) in paths:
            return True
        stack.extend(all_children(node))
    return False


def _opened_file(dest: cst.BaseExpression, scope: Scope) -> cst.CSTNode | None:
    """The `with open(...) as f` item or `f = open(...)` statement behind `f`."""
    if not isinstance(dest, cst.Name):
        return None
    for binding in scope.lookup(dest.value) or ():
        node = binding.node
        if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call):
            return node
        if isinstance(binding.value, cst.Call) and binding.kind is BindingKind.LOCAL:
            names = qualified_names(binding.value.func, binding.scope or scope)
            if names and names <= _OPENERS:
                return node
    return None


def _is_lone_call(
    statement: cst.SimpleStatementLine | cst.SimpleStatementSuite, call: cst.Call
) -> bool:
    body = statement.body
    return len(body) == 1 and isinstance(body[0], cst.Expr) and body[0].value is call
