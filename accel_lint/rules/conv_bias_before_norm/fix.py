"""The ACL201 fix: `bias=False` on the conv. An explicit `bias=True` (by keyword or in
the eighth positional slot) is flipped in place; with no bias argument the keyword
is added, provided every `**kwargs` splat is a dict this file builds and that holds
no `bias`. Anything we cannot read (a `*args` splat, a bias that is not literally
True) gets no fix, and then no finding: a bias already off is not wasted."""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword
from accel_lint.facts import FileFacts
from accel_lint.rule import Fix
from accel_lint.rules.conv_bias_before_norm.collected import Ctor

# (in, out, kernel_size, stride, padding, dilation | output_padding, groups, bias, ...)
BIAS_POSITION = 7


def bias_fix(conv: Ctor, facts: FileFacts, value: str = "False") -> Fix | None:
    """The fix writing `bias=<value>`, or None when the bias is disabled or passed in a
    way we cannot read."""
    call, scope = conv.call, conv.scope
    positional = 0
    splats: list[cst.Arg] = []
    passed: cst.Arg | None = None
    for arg in call.args:
        if arg.star == "*":
            return None
        if arg.star == "**":
            splats.append(arg)
        elif arg.keyword is None:
            if positional == BIAS_POSITION:
                passed = arg
            positional += 1
        elif arg.keyword.value == "bias":
            passed = arg
    if passed is not None:
        literal = facts.literal_value(passed.value, scope)
        if not (isinstance(literal, cst.Name) and literal.value == "True"):
            return None
        return Fix(f"Set `bias={value}`", {passed.value: cst.parse_expression(value)})
    for splat in splats:
        if not isinstance(splat.value, cst.Name):
            return None
        kwargs = facts.kwargs_dict(splat.value, scope)
        if kwargs is None or not kwargs.resolvable or "bias" in kwargs.values:
            return None
    return Fix(f"Add `bias={value}`", {call: add_keyword(call, "bias", value)})
