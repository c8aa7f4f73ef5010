"""Small node builders shared by the rules' fixes. They keep the file's layout."""

from __future__ import annotations

import functools
from collections.abc import Collection, Mapping

import libcst as cst

from accel_lint.rule import Replacement
from accel_lint.walk import NODE_TYPES, child_fields, is_node_type

_EMPTY_MODULE = cst.Module([])


class Replacer(cst.CSTTransformer):
    """Replaces nodes of the tree it visits, found by identity."""

    def __init__(self, replacements: Mapping[cst.CSTNode, Replacement]) -> None:
        super().__init__()
        self.replacements = replacements

    def on_leave(self, original_node: cst.CSTNode, updated_node: cst.CSTNode) -> Replacement:  # type: ignore[override]
        return self.replacements.get(original_node, updated_node)


class _PathReplacer(Replacer):
    """A `Replacer` that descends only into the nodes on the way to a replaced one:
    every other subtree is kept as it is, shared with the tree visited."""

    def __init__(
        self, replacements: Mapping[cst.CSTNode, Replacement], paths: set[cst.CSTNode]
    ) -> None:
        super().__init__(replacements)
        self.paths = paths

    def on_visit(self, node: cst.CSTNode) -> bool:
        return node in self.paths


def replaced(module: cst.Module, replacements: Mapping[cst.CSTNode, Replacement]) -> cst.Module:
    """`module` with `replacements` made, as `module.visit(Replacer(replacements))`
    makes them, but rebuilding only the nodes on the way to a replaced node: libcst's
    transform rebuilds every node, a second tree as large as the file's (gigabytes at
    5 MB) for a fix that changes one line. One walk over the tree (the fields the
    rules' walk descends) finds those paths; a replaced node it cannot reach
    (punctuation, whitespace) falls back to the full transform."""
    if not replacements:
        return module
    paths: set[cst.CSTNode] = set()
    found = 0
    stack: list[tuple[cst.CSTNode, int]] = [(module, 0)]
    path: list[cst.CSTNode] = []  # the ancestors of the node taken off the stack
    node_types = NODE_TYPES
    while stack:
        node, depth = stack.pop()
        del path[depth:]
        if node in replacements:
            found += 1
            paths.update(path)
        path.append(node)
        for name in child_fields(type(node)):
            value = getattr(node, name)
            kind = type(value)
            for child in value if kind is list or kind is tuple else (value,):
                known = node_types.get(type(child))
                if known or (known is None and is_node_type(type(child))):
                    stack.append((child, depth + 1))
    if found < len(replacements):
        return module.visit(Replacer(replacements))
    result = module.visit(_PathReplacer(replacements, paths))
    assert isinstance(result, cst.Module)
    return result


def code_for(node: cst.CSTNode) -> str:
    """Source text of a node, without its surrounding whitespace."""
    return _EMPTY_MODULE.code_for_node(node)


@functools.lru_cache(maxsize=256)
def expression(text: str) -> cst.BaseExpression:
    """libcst's node for `text`. A fix's value is one of a few spellings (`True`,
    `torch.cuda.is_available()`) that rules write for every finding they report, and
    libcst's nodes are immutable: one parse serves them all."""
    return cst.parse_expression(text)


def keyword_arg(keyword: str, value: str | cst.BaseExpression) -> cst.Arg:
    expr = expression(value) if isinstance(value, str) else value
    return cst.Arg(
        value=expr,
        keyword=cst.Name(keyword),
        equal=cst.AssignEqual(
            whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace("")
        ),
    )


def add_keyword(call: cst.Call, keyword: str, value: str | cst.BaseExpression) -> cst.Call:
    """`call` with `keyword=value` appended after its last argument.

    A multi-line call keeps one argument per line, and a trailing comma stays
    trailing.
    """
    new_arg = keyword_arg(keyword, value)
    args = list(call.args)
    if not args:
        return call.with_changes(args=[new_arg])
    last = args[-1]
    sep = _separator(call)
    if isinstance(last.comma, cst.Comma):
        after = last.comma.whitespace_after
        sep_after = sep.whitespace_after
        if isinstance(after, cst.ParenthesizedWhitespace) and isinstance(
            sep_after, cst.ParenthesizedWhitespace
        ):
            # the last argument keeps its own trailing comment; the new one takes the
            # line break before the closing parenthesis
            kept = sep_after.with_changes(first_line=after.first_line)
            args[-1] = last.with_changes(comma=sep.with_changes(whitespace_after=kept))
            moved = after.with_changes(first_line=cst.TrailingWhitespace())
            args.append(new_arg.with_changes(comma=last.comma.with_changes(whitespace_after=moved)))
        else:
            args[-1] = last.with_changes(comma=sep)
            args.append(new_arg.with_changes(comma=last.comma))
    else:
        # the line break before the closing parenthesis follows the new last argument
        args[-1] = last.with_changes(comma=sep, whitespace_after_arg=cst.SimpleWhitespace(""))
        args.append(new_arg.with_changes(whitespace_after_arg=last.whitespace_after_arg))
    return call.with_changes(args=args)


def set_keyword(call: cst.Call, keyword: str, value: str | cst.BaseExpression) -> cst.Call:
    """`call` with the existing `keyword=` argument's value replaced, or added."""
    expr = expression(value) if isinstance(value, str) else value
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            args[i] = arg.with_changes(value=expr)
            return call.with_changes(args=args)
    return add_keyword(call, keyword, expr)


def _separator(call: cst.Call) -> cst.Comma:
    """The comma style the call already uses between arguments (newline and indent kept,
    comments left where they are)."""
    args = call.args
    for arg in args[:-1]:
        if isinstance(arg.comma, cst.Comma):
            return _without_comments(arg.comma)
    last = args[-1]
    before = call.whitespace_before_args
    if (
        isinstance(last.comma, cst.Comma)
        and isinstance(last.comma.whitespace_after, cst.ParenthesizedWhitespace)
        and isinstance(before, cst.ParenthesizedWhitespace)
    ):
        # a lone argument on its own line: the new one goes on the next line,
        # indented like the first
        return cst.Comma(whitespace_after=before.with_changes(first_line=cst.TrailingWhitespace()))
    return cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))


def _without_comments(comma: cst.Comma) -> cst.Comma:
    ws = comma.whitespace_after
    if isinstance(ws, cst.ParenthesizedWhitespace):
        ws = ws.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
        return comma.with_changes(whitespace_after=ws)
    return comma


def remove_args(call: cst.Call, keywords: Collection[str]) -> cst.Call:
    """`call` without its `keyword=` arguments named in `keywords`; the new last
    argument takes the old last one's ending (a trailing comma, the line break before
    the closing parenthesis)."""
    args = list(call.args)
    keep = [a for a in args if a.keyword is None or a.keyword.value not in keywords]
    if len(keep) == len(args):
        return call
    if not keep:
        return call.with_changes(args=[])
    last = args[-1]
    if keep[-1] is not last:
        keep[-1] = keep[-1].with_changes(
            comma=last.comma, whitespace_after_arg=last.whitespace_after_arg
        )
    return call.with_changes(args=keep)


def move_statement(
    line: cst.SimpleStatementLine | cst.BaseCompoundStatement,
    anchor: cst.BaseStatement,
    *,
    after: bool,
) -> dict[cst.CSTNode, Replacement]:
    """Replacements that move `line` (with the comment lines above it) next to
    `anchor`, in whatever block `anchor` stands: after it, or before it (the
    anchor's own comment lines then stay above the pair)."""
    comments = [empty for empty in line.leading_lines if empty.comment is not None]
    moved: cst.SimpleStatementLine | cst.BaseCompoundStatement = line.with_changes(
        leading_lines=comments
    )
    if after:
        pair: list[cst.BaseStatement] = [anchor, moved]
    else:
        assert isinstance(anchor, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
        pair = [
            moved.with_changes(leading_lines=[*anchor.leading_lines, *comments]),
            anchor.with_changes(leading_lines=()),
        ]
    return {line: cst.RemovalSentinel.REMOVE, anchor: cst.FlattenSentinel(pair)}
