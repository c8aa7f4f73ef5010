"""ACL205 compile-mode-positional: `torch.compile(model, "reduce-overhead")` raises
TypeError, because every parameter after the model is keyword-only.
Page: rules/ACL205.md"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import keyword_arg
from accel_lint.facts.literals import string_value
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import COMPILE_BACKENDS, COMPILE_MODES, TORCH_COMPILE


class CompileModePositional(Rule):
    code = "ACL205"
    name = "compile-mode-positional"
    summary = 'torch.compile(model, "mode"): mode is keyword-only, the call raises TypeError'
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.ORIGINAL_RAISES)

    def finish(self) -> None:
        for site in self.facts.calls_resolving_to(TORCH_COMPILE):
            call = site.node
            if any(arg.star for arg in call.args):
                continue
            positional = [arg for arg in call.args if arg.keyword is None]
            if len(positional) < 2:
                continue
            second = positional[1]
            text = string_value(self.facts.literal_value(second.value, site.scope))
            shown = f'"{text}"' if text is not None else "a second positional argument"
            message = (
                f"`torch.compile` takes only the model by position, so passing {shown} after "
                "it raises TypeError: `mode` (like every other option) is keyword-only"
            )
            reason = self._no_fix(call, positional, text)
            if reason is not None:
                self.report(call, message, no_fix_reason=reason)
                continue
            new = keyword_arg("mode", second.value).with_changes(
                comma=second.comma, whitespace_after_arg=second.whitespace_after_arg
            )
            self.report(call, message, Fix(f'Pass it as `mode="{text}"`', {second: new}))

    def _no_fix(self, call: cst.Call, positional: list[cst.Arg], text: str | None) -> str | None:
        if len(positional) > 2:
            return "more than one argument follows the model by position"
        if any(arg.keyword is not None and arg.keyword.value == "mode" for arg in call.args):
            return "the call also passes `mode=`"
        if text is None:
            return "the argument is not a literal string, so it may be a mode or a backend"
        if text in COMPILE_BACKENDS:
            return f'"{text}" names a backend: pass it as `backend="{text}"`'
        if text not in COMPILE_MODES:
            return f'"{text}" is not one of torch.compile\'s modes'
        return None
