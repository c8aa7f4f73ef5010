"""Statements of the migration, written as text and parsed in the file's own style."""

from __future__ import annotations

import io
import tokenize

import libcst as cst

from accel_lint.edits import Replacer
from accel_lint.rules.data_parallel.plan import Statement

BLANK = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""), comment=None)
# One level of the templates' indentation; replaced by the file's own.
_TEMPLATE_INDENT = "    "
_EMPTY = cst.Module([])


def statements(text: str, module: cst.Module) -> list[Statement]:
    """Parse `text` (written with 4-space indents and "\\n") as the file would write it."""
    lines = []
    for line in text.splitlines():
        stripped = line.lstrip(" ")
        levels = (len(line) - len(stripped)) // len(_TEMPLATE_INDENT)
        lines.append(module.default_indent * levels + stripped)
    source = module.default_newline.join(lines) + module.default_newline
    body = cst.parse_module(source, config=module.config_for_parsing).body
    return [s for s in body if isinstance(s, (cst.SimpleStatementLine, cst.BaseCompoundStatement))]


def expression(text: str) -> cst.BaseExpression:
    return cst.parse_expression(text)


_HOLE = "__accel_lint_hole__"


def hoisted(
    statement: cst.SimpleStatementLine, value: cst.BaseExpression, prefix: str
) -> cst.BaseExpression:
    """`value`, an argument written inside `statement`, laid out to start the new line
    `<prefix><value>` in the same block: its continuation lines keep their place
    relative to the line they hang from (hanging indent) or to the bracket they
    align with (visual indent)."""
    code = _EMPTY.code_for_node(value)
    if "\n" not in code:
        return value
    holed = statement.visit(Replacer({value: cst.Name(_HOLE)}))
    assert isinstance(holed, cst.SimpleStatementLine)
    text = _EMPTY.code_for_node(holed.with_changes(leading_lines=()))
    at = text.index(_HOLE)
    line = text[text.rfind("\n", 0, at) + 1 : at]
    if "\t" in line:
        return value
    indent = len(line) - len(line.lstrip(" "))
    shift = len(prefix) - len(line) if _visual(code) else -indent
    if not shift:
        return value
    shifted = value.visit(_Shift(shift))
    assert isinstance(shifted, cst.BaseExpression)
    return shifted


def _visual(code: str) -> bool:
    """Whether the lines after the first align with the innermost bracket left open
    on the first line (something follows it there), rather than hang from the line."""
    open_brackets: list[bool] = []  # per bracket: a token follows it on the first line
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            if token.start[0] > 1:
                break
            if token.type in (tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT):
                continue
            if token.type == tokenize.OP and token.string in ")]}":
                if open_brackets:
                    open_brackets.pop()
            elif open_brackets:
                open_brackets[-1] = True
            if token.type == tokenize.OP and token.string in "([{":
                open_brackets.append(False)
    except (tokenize.TokenError, SyntaxError):
        return False
    return bool(open_brackets) and open_brackets[-1]


class _Shift(cst.CSTTransformer):
    """Moves every continuation line (and comment line) inside brackets by `shift`
    columns; inside brackets, any indentation parses."""

    def __init__(self, shift: int) -> None:
        super().__init__()
        self.shift = shift

    def _moved(self, whitespace: cst.SimpleWhitespace) -> cst.SimpleWhitespace:
        text = whitespace.value
        if self.shift > 0:
            return cst.SimpleWhitespace(text + " " * self.shift)
        spaces = len(text) - len(text.lstrip(" "))
        return cst.SimpleWhitespace(text[min(spaces, -self.shift) :])

    def leave_ParenthesizedWhitespace(
        self, original_node: cst.ParenthesizedWhitespace, updated_node: cst.ParenthesizedWhitespace
    ) -> cst.ParenthesizedWhitespace:
        return updated_node.with_changes(last_line=self._moved(updated_node.last_line))

    def leave_EmptyLine(
        self, original_node: cst.EmptyLine, updated_node: cst.EmptyLine
    ) -> cst.EmptyLine:
        if updated_node.comment is None:
            return updated_node
        return updated_node.with_changes(whitespace=self._moved(updated_node.whitespace))
