"""Line layout after fixing: a line a fix made too long is split, as black would.

Fixes add arguments in place (`num_workers=...`, `pin_memory=True`, `bias=False`),
so a call that fitted its line may not any more. After the fix loop, every line
the fixes lengthened past the file's width (88, or the file's own longest line if
longer: a file that has long lines is not held to 88) is laid out again:

- a call that is the outermost bracket of its line is split black's way: its
  arguments on one indented line, or one per line with a trailing comma;
- a line inside a call that already spans several lines is filled: the argument
  that no longer fits starts a new line, indented as the call's other arguments.

- a bare tuple that a statement assigns or returns (`a, b = x.to(d), y.to(d)`) is
  parenthesized, one element per line with a trailing comma (black's and ruff
  format's way);
- on a line with brackets side by side, the call whose `)` ends the line is split
  at its `(` (black's right-hand split).

Anything else (a long list display, a long string) is left as it is. Only the
split brackets change; the text of what they hold does not. `laid_out` is the one
layout for every path that writes a fix: the fixer, and `engine.fix_edits` (the
edits of `--output-format json` and of the language server's quick fixes).

A trailing comment follows the closing bracket, as black puts it, except a
suppression (`# noqa`): it belongs to the reported line, the call's first, and
stays there (`DataLoader(  # noqa: ACL102`), so what was suppressed stays so.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, ParentNodeProvider, PositionProvider

from accel_lint.edits import replaced

BLACK_WIDTH = 88
# comments bound to the line they are on: kept on the split call's first line
_LINE_BOUND = re.compile(r"#\s*noqa\b", re.IGNORECASE)
_EMPTY = cst.Module([])
# nodes that open a bracket of their own: the outermost one on a line is what black splits
_BRACKETED = (cst.Call, cst.List, cst.Tuple, cst.Dict, cst.Set, cst.Subscript, cst.ListComp,
              cst.SetComp, cst.DictComp, cst.GeneratorExp)  # fmt: skip


def width_for(original: str) -> int:
    """88, or the file's longest line of code if longer (a long URL in a comment
    does not count)."""
    code = (line for line in original.splitlines() if not line.lstrip().startswith("#"))
    return max([BLACK_WIDTH, *(len(line) for line in code)])


def fits(text: str, depth: int, module: cst.Module, width: int = BLACK_WIDTH) -> bool:
    """Whether one line of `text`, `depth` blocks deep, stays within `width`."""
    return depth * len(module.default_indent.expandtabs(4)) + len(text) <= width


def split_call(
    call: cst.Call, module: cst.Module, depth: int, width: int = BLACK_WIDTH
) -> cst.Call:
    """`call` laid out as black would once it no longer fits on its line (at `depth`
    blocks): the arguments on one indented line (always so for a single argument), or
    one per line with a trailing comma."""
    args = list(call.args)
    if not args:
        return call
    texts = [_EMPTY.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in args]
    one_line = ", ".join(texts)
    if len(args) == 1 or fits(one_line, depth + 1, module, width):
        layout = _template("f(\n    a\n)\n", module)
        args[-1] = args[-1].with_changes(
            comma=cst.MaybeSentinel.DEFAULT,
            whitespace_after_arg=layout.args[-1].whitespace_after_arg,
        )
        for i in range(len(args) - 1):
            args[i] = args[i].with_changes(
                comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            )
        return call.with_changes(whitespace_before_args=layout.whitespace_before_args, args=args)
    layout = _template("f(\n    a,\n    b,\n)\n", module)
    between, trailing = layout.args[0].comma, layout.args[-1].comma
    args = [
        a.with_changes(comma=between, whitespace_after_arg=cst.SimpleWhitespace("")) for a in args
    ]
    args[-1] = args[-1].with_changes(comma=trailing)
    return call.with_changes(whitespace_before_args=layout.whitespace_before_args, args=args)


def _template(text: str, module: cst.Module) -> cst.Call:
    source = text.replace("    ", module.default_indent).replace("\n", module.default_newline)
    statement = cst.parse_module(source, config=module.config_for_parsing).body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    expr = statement.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)
    return expr.value


def needs_layout(original: str, fixed_text: str) -> bool:
    """Whether `fixed_text` has a line past the width that `original` did not have (a
    string test, so the caller parses only when there is something to lay out)."""
    width = width_for(original)
    if all(len(line) <= width for line in fixed_text.splitlines()):
        return False
    before = set(original.splitlines())
    return any(len(line) > width and line not in before for line in fixed_text.splitlines())


def laid_out(original: str, fixed: cst.Module, passes: int = 10) -> cst.Module:
    """`fixed` with every line its fixes made too long split (`reflow` until nothing
    changes, bounded): the one layout for every path that writes a fix (`fix`, `fix
    --apply`, the edits in `--output-format json`, the language server's quick fixes)."""
    module = fixed
    for _ in range(passes):
        again = reflow(original, module)
        if again is module:
            break
        module = again
    return module


def reflow(original: str, fixed: cst.Module) -> cst.Module:
    """`fixed` with the lines the fixes made too long split (see the module's doc).
    Lines that were already in `original` are never touched; one edit per call, so a
    caller that wants every line done calls it until nothing changes."""
    width = width_for(original)
    before = set(original.splitlines())
    lines = fixed.code.splitlines()
    long_lines = [
        number
        for number, line in enumerate(lines, 1)
        if len(line) > width and line not in before and not line.lstrip(" ").startswith("#")
    ]
    if not long_lines:
        return fixed
    wrapper = MetadataWrapper(fixed, unsafe_skip_copy=True)
    places = _Places(wrapper.resolve(PositionProvider), wrapper.resolve(ParentNodeProvider))
    replacements: dict[cst.CSTNode, cst.CSTNode] = {}
    edited: list[CodeRange] = []
    for number in long_lines:
        if any(r.start.line <= number <= r.end.line for r in edited):
            continue
        edit = _edit_for_line(number, lines[number - 1], fixed, places, width)
        if edit is not None:
            call, new = edit
            trailing = places.trailing.get(number)
            if (
                isinstance(call, cst.Call)
                and isinstance(new, cst.Call)
                and places.range(call).start.line == number
                and new.whitespace_before_args is not call.whitespace_before_args
                and trailing is not None
                and isinstance(trailing.comment, cst.Comment)
                and _LINE_BOUND.search(trailing.comment.value)
                and isinstance(new.whitespace_before_args, cst.ParenthesizedWhitespace)
            ):
                new = _comment_after_bracket(new, new.whitespace_before_args, trailing)
                replacements[trailing] = trailing.with_changes(
                    whitespace=cst.SimpleWhitespace(""), comment=None
                )
            replacements[call] = new
            edited.append(places.range(call))
    return replaced(fixed, replacements)


def _comment_after_bracket(
    call: cst.Call, before_args: cst.ParenthesizedWhitespace, trailing: cst.TrailingWhitespace
) -> cst.Call:
    """`call` with the statement's trailing comment right after its `(`."""
    first = before_args.first_line.with_changes(
        whitespace=cst.SimpleWhitespace("  "), comment=trailing.comment
    )
    return call.with_changes(whitespace_before_args=before_args.with_changes(first_line=first))


class _Places:
    def __init__(
        self,
        positions: Mapping[cst.CSTNode, CodeRange],
        parents: Mapping[cst.CSTNode, cst.CSTNode],
    ) -> None:
        self.positions = positions
        self.parents = parents
        self.bracketed: dict[int, list[cst.CSTNode]] = {}  # by first line
        # the end of a statement line or block header, by line
        self.trailing: dict[int, cst.TrailingWhitespace] = {}
        for node, where in positions.items():
            if isinstance(node, _BRACKETED):
                self.bracketed.setdefault(where.start.line, []).append(node)
            elif isinstance(node, cst.TrailingWhitespace):
                self.trailing[where.start.line] = node

    def range(self, node: cst.CSTNode) -> CodeRange:
        return self.positions[node]

    def statement_line(self, node: cst.CSTNode) -> int | None:
        """The first line of the statement that holds `node`."""
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, cst.BaseStatement):
            parent = self.parents.get(parent)
        return None if parent is None else self.positions[parent].start.line

    def enclosing_bracket(self, node: cst.CSTNode) -> cst.CSTNode | None:
        parent = self.parents.get(node)
        while parent is not None and not isinstance(parent, cst.BaseStatement):
            if isinstance(parent, _BRACKETED):
                return parent
            parent = self.parents.get(parent)
        return None


def _edit_for_line(
    number: int, line: str, module: cst.Module, places: _Places, width: int
) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    indent = _indent(line)
    if "\t" in line[:indent]:
        return None
    on_line = [
        node for node in places.bracketed.get(number, []) if places.range(node).end.line == number
    ]
    outermost = [node for node in on_line if places.enclosing_bracket(node) is None]
    if len(outermost) == 1 and isinstance(outermost[0], cst.Call):
        step = len(module.default_indent)
        if indent % step or places.statement_line(outermost[0]) != number:
            return None  # a continuation line: black's indent would not match it
        top = outermost[0]
        return top, split_call(top, module, indent // step, width)
    if outermost:
        # several brackets side by side: a bare tuple assigned or returned
        # (`a, b = x.to(d), y.to(d)`) goes in parentheses, one element per line; else
        # black's right-hand split, at the call whose `)` ends the line; a long list
        # display stays as it is
        return _explode_tuple(number, line, module, places) or _right_hand_split(
            number, line, module, places, width
        )
    call = _call_holding_line(number, places)
    if call is None:
        return None
    filled = _fill(call, number, line, places, width)
    return None if filled is None else (call, filled)


_TUPLE_HOLDERS = (cst.Assign, cst.AugAssign, cst.AnnAssign, cst.Return)


def _explode_tuple(
    number: int, line: str, module: cst.Module, places: _Places
) -> tuple[cst.CSTNode, cst.CSTNode] | None:
    """The bare tuple a statement on line `number` assigns or returns, parenthesized
    with one element per line and a trailing comma, as black writes it."""
    indent = _indent(line)
    step = len(module.default_indent)
    trailing = places.trailing.get(number)
    if not step or indent % step or (trailing is not None and trailing.comment is not None):
        return None  # a comment would end up after the `)`, off the reported line
    for node in places.bracketed.get(number, []):
        where = places.range(node)
        if not (
            isinstance(node, cst.Tuple)
            and not node.lpar
            and len(node.elements) > 1
            and where.end.line == number
            and isinstance(places.parents.get(node), _TUPLE_HOLDERS)
            and places.statement_line(node) == number
        ):
            continue
        layout = _statement_value("x = (\n    a,\n    b,\n)\n", module)
        assert isinstance(layout, cst.Tuple)
        between, last = layout.elements[0].comma, layout.elements[-1].comma
        elements = [e.with_changes(comma=between) for e in node.elements]
        elements[-1] = elements[-1].with_changes(comma=last)
        return node, node.with_changes(lpar=layout.lpar, rpar=layout.rpar, elements=elements)
    return None


def _statement_value(text: str, module: cst.Module) -> cst.BaseExpression:
    source = text.replace("    ", module.default_indent).replace("\n", module.default_newline)
    statement = cst.parse_module(source, config=module.config_for_parsing).body[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    return assign.value


def _right_hand_split(
    number: int, line: str, module: cst.Module, places: _Places, width: int
) -> tuple[cst.Call, cst.Call] | None:
    """The call that closes line `number` (nothing but `:` or a comment after its `)`)
    split black's way, when the statement starts on this line and what stays before its
    `(` fits; black splits a line at its last opening bracket the same way."""
    indent = _indent(line)
    step = len(module.default_indent)
    if not step or indent % step:
        return None
    for nodes in places.bracketed.values():
        for node in nodes:
            where = places.range(node)
            if not (
                isinstance(node, cst.Call)
                and node.args
                and where.start.line == number
                and where.end.line == number
            ):
                continue
            rest = line[where.end.column :].split("#", 1)[0].strip()
            if rest not in ("", ":") or places.statement_line(node) != number:
                continue
            head = places.range(node.func).end.column + 1  # through the `(`
            if head > width:
                return None
            return node, split_call(node, module, indent // step, width)
    return None


def _call_holding_line(number: int, places: _Places) -> cst.Call | None:
    """The innermost call over several lines with an argument starting on line `number`."""
    found: cst.Call | None = None
    for first, nodes in places.bracketed.items():
        if first > number:
            continue
        for node in nodes:
            where = places.range(node)
            if (
                isinstance(node, cst.Call)
                and where.end.line > where.start.line
                and where.end.line >= number
                and any(places.range(a).start.line == number for a in node.args)
                and (found is None or where.start.line >= places.range(found).start.line)
            ):
                found = node
    return found


def _fill(call: cst.Call, number: int, line: str, places: _Places, width: int) -> cst.Call | None:
    """`call` with line `number` broken before each argument that would end past
    `width`; the new lines start where the call's other argument lines start."""
    continuation = _continuation(call, places)
    if continuation is None:
        return None
    newline, column = continuation
    args = list(call.args)
    on_line = [i for i, a in enumerate(args) if places.range(a).start.line == number]
    if any(places.range(args[i]).end.line != number for i in on_line):
        return None
    last = on_line[-1]
    tail = len(line) - places.range(args[last]).end.column  # `)` and whatever follows
    shift = 0
    for k, i in enumerate(on_line):
        where = places.range(args[i])
        end = where.end.column - shift + (tail if i == last else 1)  # 1: the comma
        if k == 0 or end <= width:
            continue
        comma = args[i - 1].comma
        if not isinstance(comma, cst.Comma):
            return None
        args[i - 1] = args[i - 1].with_changes(comma=comma.with_changes(whitespace_after=newline))
        shift = where.start.column - column
    new = call.with_changes(args=args)
    return None if new.deep_equals(call) else new


def _continuation(
    call: cst.Call, places: _Places
) -> tuple[cst.ParenthesizedWhitespace, int] | None:
    """The line break before the call's first argument that starts a line (without the
    comments and blank lines that came with it), and the column that argument starts at."""
    breaks = [
        call.whitespace_before_args,
        *(a.comma.whitespace_after if isinstance(a.comma, cst.Comma) else None for a in call.args),
    ]
    for whitespace, arg in zip(breaks, call.args):
        if isinstance(whitespace, cst.ParenthesizedWhitespace):
            bare = whitespace.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
            return bare, places.range(arg).start.column
    return None


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" \t"))
