"""The fix: the loop becomes one `<owner>.zero_grad(set_to_none=True)` statement
that keeps every comment the loop had (they often explain why the loop exists).
When there is no fix, `describe` quotes the statement that prevents it.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for


class _Comments(cst.CSTVisitor):
    def __init__(self) -> None:
        self.found: list[cst.Comment] = []

    def visit_Comment(self, node: cst.Comment) -> None:
        self.found.append(node)


def replacement(loop: cst.For, call_code: str, module: cst.Module) -> cst.SimpleStatementLine:
    """`call_code` as a statement in place of `loop`, keeping every comment of the loop:
    its own leading lines, the header's comment as the trailing comment, and the
    comments of the body as lines above the call."""
    stmt = cst.parse_statement(call_code + module.default_newline, config=module.config_for_parsing)
    assert isinstance(stmt, cst.SimpleStatementLine)
    header: cst.TrailingWhitespace | None = None
    if isinstance(loop.body, cst.IndentedBlock):
        header = loop.body.header
    elif isinstance(loop.body, cst.SimpleStatementSuite):
        header = loop.body.trailing_whitespace
    collector = _Comments()
    loop.with_changes(leading_lines=()).visit(collector)
    inner = [c for c in collector.found if header is None or c is not header.comment]
    # `visit` on a copy keeps the comment nodes themselves (libcst reuses unchanged children)
    lines = [
        *loop.leading_lines,
        *(
            cst.EmptyLine(indent=True, whitespace=cst.SimpleWhitespace(""), comment=c)
            for c in inner
        ),
    ]
    trailing = stmt.trailing_whitespace
    if header is not None and header.comment is not None:
        trailing = trailing.with_changes(whitespace=header.whitespace, comment=header.comment)
    return stmt.with_changes(leading_lines=lines, trailing_whitespace=trailing)


def describe(node: cst.CSTNode) -> str:
    """A short quote of a statement for a message."""
    if isinstance(node, cst.Else):
        return "an `else:` block"
    lines = code_for(node).strip().splitlines()
    text = lines[0] if lines else ""
    if isinstance(node, cst.BaseCompoundStatement) or len(lines) > 1:
        text = text.rstrip(":") + ": ..." if text.endswith(":") else text + " ..."
    return f"`{text}`" if len(text) <= 48 else f"`{text[:45]}...`"
