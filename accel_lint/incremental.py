"""Parse a new version of an open document by reparsing only the top-level
statements an edit touched (the language server's path; `check` parses whole files).

libcst's parse is the largest single cost of linting a file as it is typed
(docs/performance.md). An edit changes a few lines; every top-level statement
before and after them is the same text at the same indentation, and libcst's tree
of it would be the same. `Reparser` keeps the last tree and how many lines each
top-level statement spans (its code, with the comments and blank lines libcst
attaches to it), reparses the changed statements alone and splices them between
the old ones. The result is the tree `cst.parse_module` gives for the whole text
(`tests/test_incremental.py` compares the two on real files and random edits);
where that could differ, it parses the whole text:

- a statement before the edit is kept only when the code line of the statement
  after it is unchanged too: a top-level line at column 0 closes every block, so
  the lines between (comments and blank lines libcst gives to one statement or the
  other by what follows them) are attributed as before;
- a statement after the edit is kept only when the lines libcst attaches before it
  are empty or column-0 comments: never part of the block before them, whatever
  that block now is;
- a region that holds the first statement starts at the file's first line (libcst
  gives the lines above the first statement to the module's header), and the
  module's defaults (indentation, line ending) must come out the same: libcst
  leaves a block's indentation unset when it is the default.

Nodes of the kept statements are the old tree's own objects, so the ranges found for
them last time stay valid, shifted by the lines inserted above them (`known`).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange

# A lone carriage return is a line break to Python's tokenizer, but not one this
# module counts: such a text is parsed whole.
_LONE_CR = re.compile(r"\r(?!\n)")

# what a module's body holds (both kinds carry the lines libcst attaches above them)
Statement = Union[cst.SimpleStatementLine, cst.BaseCompoundStatement]


@dataclass(frozen=True)
class _Span:
    start: int  # 0-based line where the statement's text starts (its leading lines)
    code: int  # its first line of code (a decorator's, for a decorated definition)
    end: int  # the line after its last


@dataclass
class _Parsed:
    lines: list[str]
    module: cst.Module
    spans: list[_Span]
    # the ranges found for nodes of this tree: node -> (its top-level statement, range)
    ranges: dict[cst.CSTNode, tuple[Statement, CodeRange]] = field(default_factory=dict)
    starts: dict[int, int] = field(default_factory=dict)  # id(statement) -> its span's start
    fresh: list[Statement] | None = None  # the statements parsed anew (None: all)


class Reparser:
    """One open document's last parse; `parse_module` parses its next version."""

    def __init__(self) -> None:
        self._last: _Parsed | None = None

    def parse_module(self, text: str, tree: ast.Module | None = None) -> cst.Module:
        """`cst.parse_module(text)`, reusing the last tree's unchanged statements.
        `tree`: CPython's tree of `text`, which places the statements of a whole parse
        without generating their code."""
        lines = _lines(text)
        spliced = self._splice(lines) if lines is not None and self._last else None
        if spliced is not None:
            self._last = spliced
            return spliced.module
        # raises what the caller reports; a large text is parsed a part at a time
        module = parse_in_parts(text, tree) if tree is not None else cst.parse_module(text)
        self._last = None
        if lines is not None and text.endswith("\n"):
            spans = _spans_from_tree(module, tree, len(lines)) if tree is not None else None
            if spans is None:
                spans = _spans_of(module.body, module, len(module.header))
            if spans is not None and (spans[-1].end if spans else 0) <= len(lines):
                self._last = _Parsed(lines, module, spans)
                self._last.starts = {id(s): span.start for s, span in zip(module.body, spans)}
        return module

    def fresh(self, module: cst.Module) -> list[Statement] | None:
        """The top-level statements of `module` parsed anew (None: it was parsed whole,
        or is not this document's last tree)."""
        last = self._last
        return last.fresh if last is not None and last.module is module else None

    # -- positions carried over -----------------------------------------------------

    def known(self, module: cst.Module, node: cst.CSTNode) -> CodeRange | None:
        """The range of `node` found in an earlier version of `module`'s text, moved to
        where its statement is now; None when it has not been found before."""
        last = self._last
        if last is None or last.module is not module:
            return None
        found = last.ranges.get(node)
        return found[1] if found is not None else None

    def remember(
        self, module: cst.Module, node: cst.CSTNode, statement: cst.CSTNode, rng: CodeRange
    ) -> None:
        """`node`, inside the top-level `statement`, is at `rng` in `module`'s text."""
        last = self._last
        if last is None or last.module is not module:
            return
        if isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
            last.ranges[node] = (statement, rng)

    # -- the splice -------------------------------------------------------------------

    def _splice(self, lines: list[str]) -> _Parsed | None:
        last = self._last
        assert last is not None
        old, spans, module = last.lines, last.spans, last.module
        n = len(spans)
        if n < 2:
            return None
        limit = min(len(old), len(lines))
        same = 0
        while same < limit and old[same] == lines[same]:
            same += 1
        if same == len(old) == len(lines):
            return None  # the same text: parse it as usual (nothing to gain)
        tail = 0
        while tail < limit - same and old[-1 - tail] == lines[-1 - tail]:
            tail += 1
        shift = len(lines) - len(old)
        # kept before the edit: statements whose next statement's code line is unchanged
        first = 0
        while first + 1 < n and spans[first + 1].code < same:
            first += 1
        # kept after the edit: unchanged statements with only empty or column-0 lines above
        stop = n
        # at least one statement is reparsed: lines inserted above a statement are its
        # leading lines (or the header), which a region of no statement cannot hold
        while stop > first + 1 and spans[stop - 1].start >= len(old) - tail:
            if not _plain_leading(old, spans[stop - 1]):
                break
            stop -= 1
        # from the first statement on, the region starts the file: its header is the
        # file's, decided as a whole parse decides it
        start_line = spans[first].start if first else 0
        end_line = (spans[stop].start if stop < n else len(old)) + shift
        region_text = "".join(lines[start_line:end_line])
        try:
            region = cst.parse_module(region_text)
        except (cst.ParserSyntaxError, cst.CSTValidationError, cst.CSTLogicError):
            return None  # the whole text decides what to report
        if not region.body or region.default_newline != module.default_newline:
            return None
        if stop < n and (region.footer or not region_text.endswith("\n")):
            return None
        if not _same_indent(module, region, first, stop):
            return None
        body = [*region.body]
        changes: dict[str, object] = {}
        if first == 0:
            changes["header"] = region.header
            new_spans = _spans_of(body, region, start_line + len(region.header))
        else:  # parsed alone, the lines above the statement went to the region's header
            if region.header:
                body[0] = body[0].with_changes(
                    leading_lines=[*region.header, *body[0].leading_lines]
                )
            new_spans = _spans_of(body, region, start_line)
        footer = len(region.footer) if stop == n else 0  # an EmptyLine is a line
        if new_spans is None or new_spans[-1].end != end_line - footer:
            return None
        changes["body"] = [*module.body[:first], *body, *module.body[stop:]]
        if stop == n:  # the region ran to the end: its end is the file's
            changes["footer"] = region.footer
            changes["has_trailing_newline"] = region.has_trailing_newline
        spliced = module.with_changes(**changes)
        moved = [_Span(s.start + shift, s.code + shift, s.end + shift) for s in spans[stop:]]
        result = _Parsed(lines, spliced, [*spans[:first], *new_spans, *moved])
        result.starts = {id(s): span.start for s, span in zip(spliced.body, result.spans)}
        result.ranges = _carried(last, result)
        result.fresh = body
        return result


def _carried(last: _Parsed, now: _Parsed) -> dict[cst.CSTNode, tuple[Statement, CodeRange]]:
    """The ranges of nodes in kept statements, moved by the lines added above them."""
    carried: dict[cst.CSTNode, tuple[Statement, CodeRange]] = {}
    for node, (statement, rng) in last.ranges.items():
        then, now_at = last.starts.get(id(statement)), now.starts.get(id(statement))
        if then is None or now_at is None:
            continue
        delta = now_at - then
        carried[node] = (
            statement,
            CodeRange(
                (rng.start.line + delta, rng.start.column), (rng.end.line + delta, rng.end.column)
            ),
        )
    return carried


def _lines(text: str) -> list[str] | None:
    """The text's lines as Python counts them (`str.splitlines` also breaks at form
    feeds and other separators that are whitespace to the tokenizer)."""
    if _LONE_CR.search(text) or "\n" not in text:
        return None
    parts = text.split("\n")
    lines = [part + "\n" for part in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def _code(module: cst.Module, nodes: Sequence[cst.CSTNode]) -> str:
    state = CodegenState(
        default_indent=module.default_indent, default_newline=module.default_newline
    )
    for node in nodes:
        node._codegen(state)
    return "".join(state.tokens)


def _spans_from_tree(module: cst.Module, tree: ast.Module, count: int) -> list[_Span] | None:
    """Each statement's lines from CPython's line numbers: its code starts at its
    first line (a decorator's), the lines libcst attaches above it come before, and
    it ends where the next one's start (the last, at the module's footer). None
    where the two trees do not line up."""
    nodes = tree.body
    index = 0
    places: list[tuple[int, int]] = []
    for statement in module.body:
        if index >= len(nodes):
            return None
        node = nodes[index]
        decorators = getattr(node, "decorator_list", None) or []
        code = min([node.lineno, *(d.lineno for d in decorators)]) - 1
        places.append((code - len(statement.leading_lines), code))
        # `a = 1; b = 2` is one line of libcst's and two statements of CPython's
        index += len(statement.body) if isinstance(statement, cst.SimpleStatementLine) else 1
    if index != len(nodes) or not places or places[0][0] != len(module.header):
        return None
    ends = [start for start, _ in places[1:]] + [count - len(module.footer)]
    spans = [_Span(start, code, end) for (start, code), end in zip(places, ends)]
    if any(span.end <= span.code for span in spans):
        return None
    return spans


def _spans_of(
    statements: Sequence[Statement], module: cst.Module, start: int
) -> list[_Span] | None:
    """Each statement's lines from line `start` on; None where a statement's text does
    not end a line (the last one, without a final newline)."""
    spans: list[_Span] = []
    line = start
    for statement in statements:
        code = _code(module, [statement])
        if not code.endswith("\n"):
            return None
        leading = len(statement.leading_lines)
        end = line + code.count("\n")
        spans.append(_Span(line, line + leading, end))
        line = end
    return spans


def _plain_leading(lines: list[str], span: _Span) -> bool:
    for line in lines[span.start : span.code]:
        if line.strip() and not line.startswith("#"):
            return False
        if not line.strip() and line not in ("\n", "\r\n"):
            return False
    return True


def _compound(statement: cst.CSTNode) -> bool:
    return isinstance(statement, cst.BaseCompoundStatement)


def _same_indent(module: cst.Module, region: cst.Module, first: int, stop: int) -> bool:
    """Whether the spliced tree's blocks carry the indentation libcst would give them
    parsing the whole text: the file's default comes from its first indented block."""
    region_blocks = any(_compound(s) for s in region.body)
    if region_blocks and region.default_indent != module.default_indent:
        return False
    if any(_compound(s) for s in module.body[:first]):
        return True  # the file's first block is kept: its default stands
    if region_blocks:
        return True  # the region's first block is the file's first: the same default
    # the first block is after the region now; it must have been there before too
    return not any(_compound(s) for s in module.body[first:stop])


# -- a large file in parts ------------------------------------------------------------

# libcst's native parser needs about 400 bytes of memory per byte of the text it
# parses while it parses (the tree it returns is about 31 bytes per byte): a 5 MB
# file took 2.6 GB. Parsed in parts of this size, the parser's own memory stays
# that of one part (docs/performance.md, "Large files").
PART_CHARS = 64 * 1024


def parse_in_parts(text: str, tree: ast.Module, part_chars: int = PART_CHARS) -> cst.Module:
    """`cst.parse_module(text)`, parsed a run of top-level statements at a time and
    joined, for a text longer than `part_chars`. `tree`: CPython's tree of `text`
    (its statements' lines are enough). A part starts only at a top-level
    statement whose leading lines are empty or column-0 comments (never part of the
    block before them), as the reparse of an edit does. A part that detected another
    default indentation than the file's first block gets its blocks' indentation as
    the whole parse gives it; parts with different line endings, a part that does
    not end where its last statement does, or one that libcst rejects, make it
    parse the whole text (which decides what to report)."""
    lines = _lines(text)
    if lines is None or len(text) <= part_chars:
        return cst.parse_module(text)
    cuts = _cuts(lines, tree, part_chars)
    if not cuts:
        return cst.parse_module(text)
    bounds = list(zip([0, *cuts], [*cuts, len(lines)]))
    body: list[Statement] = []
    first: cst.Module | None = None
    indent: str | None = None
    last: cst.Module | None = None
    for number, (start, stop) in enumerate(bounds):
        try:
            part = cst.parse_module("".join(lines[start:stop]))
        except (cst.ParserSyntaxError, cst.CSTValidationError, cst.CSTLogicError):
            return cst.parse_module(text)  # the whole text decides what to report
        statements = list(part.body)
        if not statements:
            return cst.parse_module(text)
        if first is None:
            first = part
        elif part.default_newline != first.default_newline:
            return cst.parse_module(text)
        elif part.header:  # parsed alone, the lines above its first statement are its header
            statements[0] = statements[0].with_changes(
                leading_lines=[*part.header, *statements[0].leading_lines]
            )
        if any(_indents(s) for s in statements):
            if indent is None:
                indent = part.default_indent  # the file's first block is in this part
            elif part.default_indent != indent:
                # libcst leaves unset the indentation of a block that is the default,
                # which this part detected on its own: give its blocks the file's
                joined = cst.Module(statements).visit(_Reindent(part.default_indent, indent))
                statements = list(joined.body)
                del joined
        if number < len(bounds) - 1 and (part.footer or not part.has_trailing_newline):
            return cst.parse_module(text)
        body.extend(statements)
        last = part
        del part
    assert first is not None and last is not None
    return first.with_changes(
        body=body,
        default_indent=indent if indent is not None else first.default_indent,
        footer=last.footer,
        has_trailing_newline=last.has_trailing_newline,
    )


def _cuts(lines: list[str], tree: ast.Module, part_chars: int) -> list[int]:
    """0-based lines where a part may start, about `part_chars` apart: the first line
    after a top-level statement, when every line up to the next statement's first
    line of code is empty or a column-0 comment."""
    cuts: list[int] = []
    size = 0  # characters of the part so far, up to line `counted`
    counted = 0
    statements = tree.body
    for before, statement in zip(statements, statements[1:]):
        end = before.end_lineno
        if end is None or end > len(lines):
            return []
        decorators = getattr(statement, "decorator_list", None) or []
        code = min([statement.lineno, *(d.lineno for d in decorators)]) - 1
        if code < end:
            continue  # `a = 1; b = 2`: one line, one statement of libcst's
        size += sum(len(line) for line in lines[counted:end])
        counted = end
        if size < part_chars:
            continue
        if statement.col_offset != 0 or not _plain_leading(lines, _Span(end, code, code)):
            continue
        cuts.append(end)
        size = 0
    return cuts


def _indents(statement: cst.CSTNode) -> bool:
    """Whether a top-level statement holds an indented block: the first one of a file
    decides its default indentation. A clause whose body is on its header's line
    holds nothing nested."""
    stack = [statement]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Match) or isinstance(
            getattr(node, "body", None), cst.IndentedBlock
        ):
            return True
        for name in ("orelse", "finalbody"):
            value = getattr(node, name, None)
            if isinstance(value, cst.CSTNode):
                stack.append(value)
        stack.extend(getattr(node, "handlers", ()))
    return False


class _Reindent(cst.CSTTransformer):
    """A part's blocks with the file's default indentation instead of the part's."""

    def __init__(self, part: str, file: str) -> None:
        super().__init__()
        self.part, self.file = part, file

    def _wanted(self, indent: str | None) -> str | None:
        actual = self.part if indent is None else indent
        return None if actual == self.file else actual

    def leave_IndentedBlock(
        self, original_node: cst.IndentedBlock, updated_node: cst.IndentedBlock
    ) -> cst.IndentedBlock:
        return updated_node.with_changes(indent=self._wanted(updated_node.indent))

    def leave_Match(self, original_node: cst.Match, updated_node: cst.Match) -> cst.Match:
        return updated_node.with_changes(indent=self._wanted(updated_node.indent))
