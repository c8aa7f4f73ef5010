"""ACL301 manual-zero-grad-loop: a loop over a module's parameters (or an optimizer's
`param_groups`) that zero-fills every gradient. Page: rules/ACL301.md

`finish` puts each loop the walk saw to three questions: `loops` (a loop over a
module's parameters or an optimizer's `param_groups`, and whose?), the file's
`TorchObjects` (is that owner clearly not torch's, its `zero_grad` another API?)
and `body` (does the body zero every gradient, and nothing else?). `fix` writes
the replacement statement.

The receiver analysis (`facts.torch_objects`) is shared with ACL302, which asks the
same question of `zero_grad` receivers: is this object built by torch, by this
file, or by something that is clearly not torch's?
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.torch_objects import Kind, TorchObjects
from accel_lint.names import Scope
from accel_lint.rule import Cause, Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.rules.manual_zero_grad_loop.body import BodyReader, statements_of
from accel_lint.rules.manual_zero_grad_loop.fix import describe, replacement
from accel_lint.rules.manual_zero_grad_loop.loops import (
    Loop,
    defines_zero_grad,
    param_groups_loop,
    parameter_loop,
)
from accel_lint.torch_api import SET_TO_NONE_SINCE


class ManualZeroGradLoop(Rule):
    code = "ACL301"
    name = "manual-zero-grad-loop"
    summary = "Loop that zero-fills every gradient instead of zero_grad(set_to_none=True)"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.EXACT, causes=(Cause.PARAMS_WITHOUT_GRAD,))

    def setup(self) -> None:
        self._loops: list[tuple[cst.For, Scope, cst.FunctionDef | None]] = []

    def visit_For(self, node: cst.For) -> None:
        if node.asynchronous is None:
            self._loops.append((node, self.facts.scope, self.facts.function))

    def finish(self) -> None:
        self.objects = TorchObjects.of(self.facts)
        if not self._loops or not self.objects.file_imports_torch():
            return
        if self.objects.adds_into_grads() or self.objects.captures_cuda_graphs():
            return
        for node, scope, function in self._loops:
            # `param_groups` of dicts with "params" is torch's optimizer protocol: the
            # owner is an optimizer unless it is clearly not torch's.
            loop = param_groups_loop(node) or parameter_loop(node)
            if loop is None or self.objects.kind(loop.owner, scope) is Kind.OTHER:
                continue
            if defines_zero_grad(function, loop.owner):
                continue  # the class's own zero_grad: calling it there would recurse
            self._check(loop, scope)

    def _check(self, loop: Loop, scope: Scope) -> None:
        reader = BodyReader(loop.var, scope)
        reader.read(statements_of(loop.inner.body))
        body = reader.body
        if not body.zeroes or body.skips or loop.outer_skips:
            return
        owner = code_for(loop.owner)
        message = (
            f"Gradients are zero-filled one by one in a loop over `{loop.what}`: "
            "a memset per parameter, and backward then adds into the zeros"
        )
        extra = body.extra or loop.outer_extra or loop.inner.orelse
        reason: str | None = None
        if extra is not None:
            reason = f"the loop also runs {describe(extra)}"
        elif loop.narrower is not None:
            reason = loop.narrower
        elif (defining := self.objects.own_zero_grad(loop.owner, scope)) is not None:
            reason = f"`{defining}` defines its own `zero_grad`"
        else:
            target = self.ctx.target_torch
            if target is not None and target < SET_TO_NONE_SINCE:
                version = ".".join(map(str, target))
                reason = (
                    f"torch {version} has no `set_to_none`; "
                    f"set `{loop.var}.grad = None` in the loop instead"
                )
        if reason is not None:
            self.report(loop.outer, message, no_fix_reason=reason)
            return
        call = f"{owner}.zero_grad(set_to_none=True)"
        fix = Fix(
            f"Replace the loop with `{call}`",
            {loop.outer: replacement(loop.outer, call, self.ctx.module)},
        )
        self.report(loop.outer, message, fix)
