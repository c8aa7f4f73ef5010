"""ACL321 bce-under-autocast: `nn.BCELoss` or `F.binary_cross_entropy` run inside CUDA
autocast, which refuses them: the first step raises. Page: rules/ACL321.md

Inside means in the body of a `with` of a CUDA autocast that may be on (`Precision`),
in a function decorated with one, or in a function of the file every call of which
is inside one; an inner `with autocast(enabled=False)` turns it off again. The fix
applies when the loss's input is `torch.sigmoid(x)` / `x.sigmoid()`: the loss on the
logits `x` with `binary_cross_entropy_with_logits`, which autocast runs in float32.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite
from accel_lint.facts.literals import string_value
from accel_lint.facts.precision import Precision
from accel_lint.names import Scope, resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import BCE_FUNCTION, BCE_LOSS, BCE_WITH_LOGITS, SIGMOID

_MAX_DEPTH = 3


class BceUnderAutocast(Rule):
    code = "ACL321"
    name = "bce-under-autocast"
    summary = "BCELoss or binary_cross_entropy under CUDA autocast, which raises"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.RAISES_THEN_CLOSE)

    def finish(self) -> None:
        precision = Precision.of(self.facts)
        cuda = precision.cuda_autocasts()
        if not cuda:
            return
        self._on = {a.with_node for a in cuda if a.form == "with" and a.with_node is not None}
        self._off = {
            a.with_node
            for a in precision.autocasts
            if a.form == "with" and a.with_node is not None and a.enabled is False
        }
        self._decorated = {a.decorated for a in cuda if a.form == "decorator" and a.decorated}
        self._calls = CallGraph.of(self.facts)
        for site in self.facts.calls:
            functional = resolves_to(site.node.func, site.scope, BCE_FUNCTION)
            built = None if functional else self._criterion(site)
            if not functional and built is None:
                continue
            if not self._under_autocast(site, 0):
                continue
            self._report(site, built)

    # -- what is called, and where --------------------------------------------------------

    def _criterion(self, site: CallSite) -> cst.Call | bool | None:
        """The `nn.BCELoss(...)` call that built the called object: inline, bound to the
        name called, or to the `self.` attribute called. True when it is one of several
        such constructions (reported, not fixed)."""
        func = site.node.func
        values: list[tuple[cst.BaseExpression | None, Scope]] = []
        if isinstance(func, cst.Call):
            values = [(func, site.scope)]
        elif isinstance(func, cst.Name):
            values = [(b.value, b.scope or site.scope) for b in site.scope.lookup(func.value) or []]
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            values = [
                (a.value, a.scope)
                for a in self.facts.attribute_assignments.get(func.attr.value, [])
                if a.receiver == "self"
            ]
        if not values:
            return None
        for value, scope in values:
            if not isinstance(value, cst.Call) or not resolves_to(value.func, scope, BCE_LOSS):
                return None
        first = values[0][0]
        return first if len(values) == 1 and isinstance(first, cst.Call) else True

    def _under_autocast(self, site: CallSite, depth: int) -> bool:
        inside: bool | None = None
        for with_node in site.withs:  # outermost first
            if with_node in self._on:
                inside = True
            elif with_node in self._off:
                inside = False
        if inside is not None:
            return inside
        function = site.function
        if function is None:
            return False
        if function in self._decorated:
            return True
        if depth >= _MAX_DEPTH:
            return False
        callers = self._calls.calls_to(function)
        return bool(callers) and all(self._under_autocast(c, depth + 1) for c in callers)

    # -- report and fix -------------------------------------------------------------------

    def _report(self, site: CallSite, built: cst.Call | bool | None) -> None:
        loss = "binary_cross_entropy" if built is None else "BCELoss"
        message = (
            f"`{loss}` runs under CUDA autocast, which refuses it: the first step raises "
            '("unsafe to autocast"); compute the loss from the logits with '
            "`binary_cross_entropy_with_logits` (`nn.BCEWithLogitsLoss`)"
        )
        planned = self._plan(site, built)
        if isinstance(planned, str):
            self.report(site.node, message, no_fix_reason=planned)
        else:
            self.report(site.node, message, planned)

    def _plan(self, site: CallSite, built: cst.Call | bool | None) -> Fix | str:
        call = site.node
        args = list(call.args)
        if not args or args[0].keyword is not None or args[0].star:
            return "the loss's input is not its first positional argument"
        logits = self._logits(args[0].value, site.scope)
        if logits is None:
            return (
                "the input is not `torch.sigmoid(<logits>)`: compute the loss from the "
                "logits with `binary_cross_entropy_with_logits`, or outside autocast"
            )
        extra: list[cst.Arg] = []
        if built is True:
            return "the criterion is built in more than one place"
        if isinstance(built, cst.Call):
            reduction = self._reduction(built)
            if reduction is None:
                return "the BCELoss is built with arguments other than a literal `reduction`"
            if len(args) != 2 or any(a.keyword is not None or a.star for a in args):
                return "the criterion is not called with an input and a target"
            extra = reduction
        spelled, needed = spelling_for(BCE_WITH_LOGITS, site.scope)
        arguments = [args[0].with_changes(value=logits), *args[1:]]
        if extra:
            space = cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))
            arguments = [*(a.with_changes(comma=space) for a in arguments), *extra]
        new = call.with_changes(func=cst.parse_expression(spelled), args=arguments)
        return Fix(
            f"Compute the loss from the logits: `{spelled}({code_for(logits)}, ...)`",
            {call: new},
            (needed,) if needed else (),
        )

    def _logits(self, expr: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
        """`x` for `torch.sigmoid(x)`, `F.sigmoid(x)` and `x.sigmoid()`."""
        if not isinstance(expr, cst.Call):
            return None
        func = expr.func
        if resolves_to(func, scope, SIGMOID):
            if len(expr.args) == 1 and expr.args[0].keyword is None and not expr.args[0].star:
                return expr.args[0].value
            return None
        if isinstance(func, cst.Attribute) and func.attr.value == "sigmoid" and not expr.args:
            return func.value
        return None

    def _reduction(self, built: cst.Call) -> list[cst.Arg] | None:
        """The constructor's arguments the functional call must repeat: none, or a
        literal `reduction=`; None for anything else (`weight`, positionals)."""
        out: list[cst.Arg] = []
        for arg in built.args:
            if arg.keyword is None or arg.keyword.value != "reduction":
                return None
            if string_value(arg.value) is None:
                return None
            out.append(arg.with_changes(comma=cst.MaybeSentinel.DEFAULT))
        return out
