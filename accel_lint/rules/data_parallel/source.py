"""Statements of the migration, written as text and parsed in the file's own style."""

from __future__ import annotations

import libcst as cst

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


def fits(text: str, depth: int, module: cst.Module, width: int = 88) -> bool:
    """Whether one line of `text`, `depth` blocks deep, stays within black's `width`."""
    return depth * len(module.default_indent.expandtabs(4)) + len(text) <= width


def split_call(call: cst.Call, module: cst.Module, depth: int) -> cst.Call:
    """`call` laid out as black would once it no longer fits on its line (at `depth`
    blocks): the arguments on one indented line, or one per line with a trailing comma."""
    args = list(call.args)
    if not args:
        return call
    texts = [_EMPTY.code_for_node(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in args]
    one_line = ", ".join(texts)
    if fits(one_line, depth + 1, module):
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
    statement = statements(text, module)[0]
    assert isinstance(statement, cst.SimpleStatementLine)
    expr = statement.body[0]
    assert isinstance(expr, cst.Expr) and isinstance(expr.value, cst.Call)
    return expr.value
