"""ACL302 zero-grad-keeps-tensors: `zero_grad(set_to_none=False)`, or a plain
`zero_grad()` when the code must run on torch < 2.0 (where that was the default).
Page: rules/ACL302.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword, code_for, keyword_arg
from accel_lint.facts import CallSite
from accel_lint.facts.torch_objects import Kind, TorchObjects
from accel_lint.rule import Cause, Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import SET_TO_NONE_DEFAULT_SINCE, SET_TO_NONE_SINCE


def _with_set_to_none(call: cst.Call) -> cst.Call:
    """`call` with `set_to_none=True` added; `f(\n)` becomes `f(set_to_none=True)`."""
    ws = call.whitespace_before_args
    if not call.args and not (isinstance(ws, cst.ParenthesizedWhitespace) and _has_comment(ws)):
        call = call.with_changes(whitespace_before_args=cst.SimpleWhitespace(""))
    return add_keyword(call, "set_to_none", "True")


def _has_comment(ws: cst.ParenthesizedWhitespace) -> bool:
    return ws.first_line.comment is not None or any(line.comment for line in ws.empty_lines)


def _version(target: tuple[int, int]) -> str:
    return ".".join(map(str, target))


class ZeroGradKeepsTensors(Rule):
    code = "ACL302"
    name = "zero-grad-keeps-tensors"
    summary = "zero_grad(set_to_none=False), or a plain zero_grad() on torch < 2.0"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.EXACT, causes=(Cause.PARAMS_WITHOUT_GRAD,), noop_since=SET_TO_NONE_DEFAULT_SINCE
    )

    def finish(self) -> None:
        self.objects = TorchObjects.of(self.facts)
        sites = self.facts.method_calls("zero_grad")
        if not sites or not self.objects.file_imports_torch():
            return
        if self.objects.adds_into_grads() or self.objects.captures_cuda_graphs():
            return
        for site in sites:
            func = site.node.func
            assert isinstance(func, cst.Attribute)
            kind = self.objects.kind(func.value, site.scope)
            if kind is not Kind.OTHER:
                self._check(site, kind)

    def _check(self, site: CallSite, kind: Kind) -> None:
        call = site.node
        arg: cst.Arg | None = None
        for index, candidate in enumerate(call.args):
            if candidate.star:
                return  # `*args` / `**kwargs`: we cannot tell what is passed
            if (candidate.keyword is None and index == 0) or (
                candidate.keyword is not None and candidate.keyword.value == "set_to_none"
            ):
                arg = candidate
        target = self.ctx.target_torch
        receiver = code_for(call.func)
        replacements: dict[cst.CSTNode, cst.CSTNode]
        if arg is None:
            if target is None or target >= SET_TO_NONE_DEFAULT_SINCE:
                return
            assert isinstance(call.func, cst.Attribute)
            receiver_expr = call.func.value
            if self.objects.own_zero_grad(receiver_expr, site.scope) is not None:
                return  # a `zero_grad` of this file: its default is its own
            if kind is Kind.UNKNOWN and not self.objects.used_as_torch(receiver_expr, site.scope):
                # nothing says this `zero_grad` is torch's (a project's trainer class
                # may define its own): a plain call passes no `set_to_none` to prove it
                return
            message = (
                f"`{receiver}()` zero-fills every gradient on torch < 2.0 "
                f"(target-torch is {_version(target)})"
            )
            replacements = {call: _with_set_to_none(call)}
            fix_message = "Add `set_to_none=True`"
        else:
            literal = self.facts.literal_value(arg.value, site.scope)
            if not (isinstance(literal, cst.Name) and literal.value == "False"):
                return
            keyword = "set_to_none=" if arg.keyword is not None else ""
            message = f"`{receiver}({keyword}{code_for(arg.value)})` zero-fills every gradient"
            if literal is not arg.value:
                message += f" (`{code_for(arg.value)}` is False)"
                # the constant is the knob the user set
                replacements = {literal: cst.Name("True")}
            elif arg.keyword is None:
                replacements = {
                    arg: keyword_arg("set_to_none", "True").with_changes(comma=arg.comma)
                }
            else:
                replacements = {arg.value: cst.Name("True")}
            fix_message = "Pass `set_to_none=True`"
        message += ": a memset per parameter, and backward then adds into the zeros"
        if target is not None and target < SET_TO_NONE_SINCE:
            self.report(
                call,
                message,
                no_fix_reason=f"torch {_version(target)} has no `set_to_none`; "
                "set `p.grad = None` in a loop over the parameters instead",
            )
            return
        self.report(call, message, Fix(fix_message, replacements))
