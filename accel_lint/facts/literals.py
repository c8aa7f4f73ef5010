"""Literal values as a file spells them: numbers, strings, booleans, dict displays."""

from __future__ import annotations

import libcst as cst


def is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, (cst.Integer, cst.Float))
    )


def int_value(expr: cst.BaseExpression) -> int | None:
    """The integer a literal denotes (`0`, `0x0`, `False`), else None."""
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return int(expr.value == "True")
    return None


def string_value(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _literal_dict(expr: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """Keys and values of `{'a': 1}` / `dict(a=1)` when every key is a literal string."""
    if isinstance(expr, cst.Dict):
        out: dict[str, cst.BaseExpression] = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                return None
            key = string_value(element.key)
            if key is None:
                return None
            out[key] = element.value
        return out
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
        out = {}
        for arg in expr.args:
            if arg.keyword is None:
                return None
            out[arg.keyword.value] = arg.value
        return out
    return None


def _is_dict_display(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Dict) or (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict"
    )


def device_template(expr: cst.BaseExpression) -> str | None:
    """The literal text before the first placeholder of a device string built at run
    time, when that text names the device type: `"cuda:"` for `f"cuda:{rank}"`,
    `"cuda:{:d}".format(rank)` and `"cuda:%d" % rank`."""
    text: str | None = None
    if isinstance(expr, cst.FormattedString):
        first = expr.parts[0] if expr.parts else None
        if isinstance(first, cst.FormattedStringText):
            text = first.value
    elif isinstance(expr, cst.BinaryOperation) and isinstance(expr.operator, cst.Modulo):
        template = string_value(expr.left)
        if template is not None:
            text = template.split("%", 1)[0]
    elif (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value == "format"
    ):
        template = string_value(expr.func.value)
        if template is not None:
            text = template.split("{", 1)[0]
    if text is None or ":" not in text:
        return None
    return text
