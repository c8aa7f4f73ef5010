"""Where a node is in the file, without regenerating the whole file.

libcst's `PositionProvider` computes the position of every node by generating the
code of the whole module again, which costs more than parsing it (docs/performance.md).
A finding needs the position of a handful of nodes. This module finds the
statement that starts the node's line (the innermost statement of a block), takes
that statement's line and indentation from CPython's own parse of the same text,
and generates the code of that statement alone, with the same indentation, to
place the node inside it. A compound statement whose header holds the node is
generated without its body. Anything it cannot map (a shape CPython's tree does
not mirror) falls back to the full `PositionProvider`, so the answer is always
libcst's own.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Sequence
from typing import Any

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState

from accel_lint.incremental import Reparser
from accel_lint.source import compile_ast
from accel_lint.walk import NODE_TYPES, child_fields, is_node_type

_LINE = re.compile(r"[^\r\n]*(?:\r\n|\r|\n)|[^\r\n]+\Z")
_PASS = cst.IndentedBlock([cst.SimpleStatementLine([cst.Pass()])])
# The fields of a compound statement that hold its body: a node under one of them is
# not in the statement's header.
_BODY_FIELDS = ("body", "orelse", "handlers", "finalbody", "cases")
_STRIPPED: dict[type[cst.CSTNode], dict[str, Any]] = {
    cst.FunctionDef: {"body": _PASS},
    cst.ClassDef: {"body": _PASS},
    cst.With: {"body": _PASS},
    cst.For: {"body": _PASS, "orelse": None},
    cst.While: {"body": _PASS, "orelse": None},
    cst.If: {"body": _PASS, "orelse": None},
}
_AST_KINDS: dict[type[cst.CSTNode], tuple[type[ast.stmt], ...]] = {
    cst.FunctionDef: (ast.FunctionDef, ast.AsyncFunctionDef),
    cst.ClassDef: (ast.ClassDef,),
    cst.With: (ast.With, ast.AsyncWith),
    cst.For: (ast.For, ast.AsyncFor),
    cst.While: (ast.While,),
    cst.If: (ast.If,),
    cst.Try: (ast.Try,),
    cst.TryStar: tuple(t for t in (getattr(ast, "TryStar", None),) if t is not None),
    cst.Match: (ast.Match,),
}


# Expressions found by their text (`Locator._by_text`): their code is exactly their
# range (`tests/test_positions.py` compares with libcst's on every such node).
_BY_TEXT = frozenset(
    {cst.Call, cst.Name, cst.Attribute, cst.Subscript, cst.BinaryOperation, cst.Comparison}
)
# statements without decorators whose first line is their keyword's (`line_of`)
_HEADED = frozenset({cst.For, cst.While, cst.If, cst.With, cst.Try, cst.TryStar})


def _chars(line: str, byte_offset: int) -> int:
    """CPython's column (UTF-8 bytes) as a column in characters."""
    if line.isascii():
        return byte_offset
    return len(line.encode("utf-8")[:byte_offset].decode("utf-8", errors="ignore"))


class _Unmapped(Exception):
    """The node's statement has no counterpart in CPython's tree that we can trust."""


# what the cheap way raises where it cannot place a node: libcst's answer instead
_CANNOT_MAP = (_Unmapped, KeyError, IndexError, SyntaxError, ValueError, RecursionError)


class _Recorder:
    """The provider a `PositionProvidingCodegenState` writes node ranges into."""

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


class Locator:
    """Ranges of nodes of one parsed module, as libcst's `PositionProvider` gives them."""

    def __init__(
        self,
        module: cst.Module,
        text: str,
        tree: ast.Module | None = None,
        reparser: Reparser | None = None,
        parents: dict[cst.CSTNode, cst.CSTNode] | None = None,
    ) -> None:
        """`parents`: every node's parent, as the walk descends (`walk.walk` records
        it): the tree need not be walked again."""
        self.module = module
        # the lines CPython numbers (`str.splitlines` also breaks at form feeds)
        self.lines: list[str] = _LINE.findall(text)
        self._text = text
        self._tree = tree
        self._reparser = reparser
        # the statements an open document's reparse made anew: only their nodes can
        # lack a range found for an earlier version (see `incremental`)
        self._fresh = reparser.fresh(module) if reparser is not None else None
        self._parents = parents if self._fresh is None else None
        self._ranges: dict[cst.CSTNode, CodeRange] = {}
        self._full: dict[cst.CSTNode, CodeRange] | None = None

    def range_of(self, node: cst.CSTNode) -> CodeRange:
        found = self._ranges.get(node)
        if found is None and self._reparser is not None:
            found = self._reparser.known(self.module, node)
        if found is None:
            try:
                found = self._locate(node)
            except _CANNOT_MAP:
                found = self.full()[node]
            else:
                if self._reparser is not None:
                    top = self._top_level(node)
                    if top is not None:
                        self._reparser.remember(self.module, node, top, found)
            self._ranges[node] = found
        return found

    def line_of(self, node: cst.CSTNode) -> int:
        """`range_of(node).start.line`. A loop, `if`, `with` or `try` statement of a block
        starts on the line CPython's tree gives it, found without generating its code
        (a finding's related loop would otherwise generate the whole loop)."""
        if type(node) in _HEADED and node not in self._ranges and self._fresh is None:
            parents = self._parent_map()
            if node in parents:
                try:
                    unit, _ = self._unit(node, parents)
                    if unit is node:
                        return self._ast_statement(node, parents).lineno
                except _CANNOT_MAP:
                    pass
        return self.range_of(node).start.line

    def _top_level(self, node: cst.CSTNode) -> cst.CSTNode | None:
        parents = self._parent_map()
        current = node
        while True:
            parent = parents.get(current)
            if parent is None:
                return None
            if parent is self.module:
                return current
            current = parent

    def full(self) -> dict[cst.CSTNode, CodeRange]:
        """Every node's range, the expensive way (the fallback)."""
        if self._full is None:
            wrapper = MetadataWrapper(self.module, unsafe_skip_copy=True)
            self._full = dict(wrapper.resolve(PositionProvider))
        return self._full

    # -- the cheap way --------------------------------------------------------------

    def _locate(self, node: cst.CSTNode) -> CodeRange:
        parents = self._parent_map()
        if node not in parents and self._fresh is not None:
            self._fresh = None  # not in a reparsed statement after all: map them all
            self._parents = None
            parents = self._parent_map()
        if node not in parents:
            raise _Unmapped  # a label field the walk does not descend, or foreign node
        unit, child = self._unit(node, parents)
        if unit is not node and type(node) in _BY_TEXT and not getattr(node, "lpar", ()):
            found = self._by_text(node, unit, parents)
            if found is not None:
                return found
        generated = unit
        if unit is not node and child is not None and not _in_body(unit, child):
            changes = _STRIPPED.get(type(unit))
            if changes is not None:
                generated = unit.with_changes(**changes)
        statement = self._ast_statement(unit, parents)
        recorder = _Recorder()
        indent = self._indentation(statement)
        state = PositionProvidingCodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            provider=recorder,  # type: ignore[arg-type]
            indent_tokens=[indent] if indent else [],
        )
        generated._codegen(state)
        start = recorder._computed[generated].start
        if start.column != statement.col_offset:
            raise _Unmapped
        shift = statement.lineno - start.line
        for other, relative in recorder._computed.items():
            # the statement's other nodes come for free: a fix asks for several
            if other is not generated or generated is unit:
                self._ranges[other] = CodeRange(
                    (relative.start.line + shift, relative.start.column),
                    (relative.end.line + shift, relative.end.column),
                )
        return self._ranges[node]

    def _by_text(
        self,
        node: cst.CSTNode,
        unit: cst.BaseStatement,
        parents: dict[cst.CSTNode, cst.CSTNode],
    ) -> CodeRange | None:
        """The node's range from the file's own text, without generating its statement:
        the node's code found once, and only once, in the text CPython's tree spans for
        the statement (which holds every node of it but a decorator). None when it
        cannot tell."""
        if getattr(unit, "decorators", ()) or (
            type(unit) is cst.SimpleStatementLine and len(unit.body) != 1
        ):
            return None  # the span starts after the decorators, or ends at the first `;`
        statement = self._ast_statement(unit, parents)
        end_row = statement.end_lineno
        if end_row is None or statement.end_col_offset is None:
            return None
        first, last = statement.lineno, end_row
        lines = self.lines[first - 1 : last]
        start = _chars(lines[0], statement.col_offset)
        stop = _chars(lines[-1], statement.end_col_offset)
        if len(lines) == 1:
            segment = lines[0][start:stop]
        else:
            segment = lines[0][start:] + "".join(lines[1:-1]) + lines[-1][:stop]
        if "\r" in segment:
            return None  # lines counted below by "\n" alone
        try:
            indent = self._indentation(statement)
        except _Unmapped:
            return None
        # generated as inside its statement: a line the node continues in brackets
        # starts with the statement's indentation (`ParenthesizedWhitespace.indent`)
        state = CodegenState(
            default_indent=self.module.default_indent,
            default_newline=self.module.default_newline,
            indent_tokens=[indent] if indent else [],
        )
        node._codegen(state)
        code = "".join(state.tokens)
        at = segment.find(code)
        if at < 0 or not code or segment.find(code, at + 1) >= 0:
            return None
        row = first + segment.count("\n", 0, at)
        column = at - (segment.rfind("\n", 0, at) + 1)
        if row == first:
            column += start
        rows = code.count("\n")
        width = len(code) - code.rfind("\n") - 1 if rows else column + len(code)
        return CodeRange((row, column), (row + rows, width))

    def _indentation(self, statement: ast.stmt) -> str:
        line = self.lines[statement.lineno - 1]
        indent = line[: statement.col_offset]
        if indent.strip():
            raise _Unmapped  # `col_offset` counts bytes: a non-ASCII line before it
        return indent

    def _parent_map(self) -> dict[cst.CSTNode, cst.CSTNode]:
        if self._parents is None:
            parents: dict[cst.CSTNode, cst.CSTNode] = {}
            stack: list[cst.CSTNode] = [self.module]
            if self._fresh is not None:  # the module's statements, inside the fresh ones
                parents.update((statement, self.module) for statement in self.module.body)
                stack = list(self._fresh)
            node_types = NODE_TYPES
            while stack:
                parent = stack.pop()
                for name in child_fields(type(parent)):
                    value = getattr(parent, name)
                    kind = type(value)
                    if kind is list or kind is tuple:
                        for item in value:
                            found = node_types.get(type(item))
                            if found or (found is None and is_node_type(type(item))):
                                parents[item] = parent
                                stack.append(item)
                    else:
                        found = node_types.get(kind)
                        if found or (found is None and is_node_type(kind)):
                            parents[value] = parent
                            stack.append(value)
            self._parents = parents
        return self._parents

    def _unit(
        self, node: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]
    ) -> tuple[cst.BaseStatement, cst.CSTNode | None]:
        """The innermost statement of a block (or of the module) that holds `node`, and
        its child on the way to `node` (None when `node` is that statement)."""
        current, child = node, None
        while True:
            parent = parents.get(current)
            if parent is None:
                raise _Unmapped
            if isinstance(current, cst.BaseStatement) and isinstance(
                parent, (cst.Module, cst.IndentedBlock)
            ):
                return current, child
            current, child = parent, current

    def _ast_statement(
        self, statement: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]
    ) -> ast.stmt:
        """CPython's node for a libcst statement of a block (or an `elif`)."""
        owner = parents.get(statement)
        if (
            isinstance(statement, cst.If)
            and isinstance(owner, cst.If)
            and owner.orelse is statement
        ):
            found = self._ast_statement(owner, parents)
            if not isinstance(found, ast.If) or len(found.orelse) != 1:
                raise _Unmapped
            return _checked(statement, found.orelse[0])
        if owner is None:
            raise _Unmapped
        siblings = self._ast_block(owner, parents)
        body = owner.body if isinstance(owner, (cst.Module, cst.IndentedBlock)) else ()
        index = 0
        for sibling in body:
            if sibling is statement:
                return _checked(statement, siblings[index])
            index += len(sibling.body) if isinstance(sibling, cst.SimpleStatementLine) else 1
        raise _Unmapped

    def _ast_block(
        self, block: cst.CSTNode, parents: dict[cst.CSTNode, cst.CSTNode]
    ) -> Sequence[ast.stmt]:
        """CPython's statement list for a libcst block."""
        if isinstance(block, cst.Module):
            return self._ast_tree().body
        owner = parents[block]
        if isinstance(owner, cst.Else):
            return _statements(self._ast_statement(parents[owner], parents), "orelse")
        if isinstance(owner, cst.Finally):
            return _statements(self._ast_statement(parents[owner], parents), "finalbody")
        if isinstance(owner, (cst.ExceptHandler, cst.ExceptStarHandler)):
            tried = parents[owner]
            assert isinstance(tried, (cst.Try, cst.TryStar))
            handlers = _attr(self._ast_statement(tried, parents), "handlers")
            return _statements(handlers[list(tried.handlers).index(owner)], "body")
        if isinstance(owner, cst.MatchCase):
            match = parents[owner]
            assert isinstance(match, cst.Match)
            cases = _attr(self._ast_statement(match, parents), "cases")
            return _statements(cases[list(match.cases).index(owner)], "body")
        return _statements(self._ast_statement(owner, parents), "body")

    def _ast_tree(self) -> ast.Module:
        if self._tree is None:
            self._tree = compile_ast(self._text, "<positions>")
        return self._tree


def _checked(statement: cst.CSTNode, found: Any) -> ast.stmt:
    kinds = _AST_KINDS.get(type(statement))
    if not isinstance(found, ast.stmt):
        raise _Unmapped
    if kinds is not None and not isinstance(found, kinds):
        raise _Unmapped
    if kinds is None and not isinstance(statement, cst.SimpleStatementLine):
        raise _Unmapped
    return found


def _attr(node: Any, name: str) -> Any:
    value = getattr(node, name, None)
    if value is None:
        raise _Unmapped
    return value


def _statements(node: Any, name: str) -> Sequence[ast.stmt]:
    value = _attr(node, name)
    if not isinstance(value, list):
        raise _Unmapped
    return value


def _in_body(unit: cst.CSTNode, child: cst.CSTNode) -> bool:
    for name in _BODY_FIELDS:
        value = getattr(unit, name, None)
        if value is child or (isinstance(value, (list, tuple)) and child in value):
            return True
    return False


def walk_nodes(module: cst.Module) -> Iterator[cst.CSTNode]:
    """Every node the walk descends into (for tests that compare with libcst)."""
    stack: list[cst.CSTNode] = [module]
    while stack:
        node = stack.pop()
        yield node
        for name in child_fields(type(node)):
            value = getattr(node, name)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
            elif isinstance(value, (list, tuple)):
                stack.extend(v for v in value if isinstance(v, cst.CSTNode))
