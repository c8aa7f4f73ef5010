"""ACL321 bce-under-autocast: `nn.BCELoss` or `F.binary_cross_entropy` run inside CUDA
autocast, which refuses them: the first step raises. Page: rules/ACL321.md

Inside means in the body of a `with` of a CUDA autocast that may be on (`Precision`),
in a function decorated with one, or in a function of the file every call of which
is inside one; an inner `with autocast(enabled=False)` turns it off again. The fix
applies when the loss's input is `torch.sigmoid(x)` / `x.sigmoid()`: the loss on the
logits `x` with `binary_cross_entropy_with_logits`, which autocast runs in float32.
It applies too when the input is the output of a model of the file whose last layer
is an `nn.Sigmoid` (of an `nn.Sequential`, or the last call of the class's
`forward`), used nowhere else: the layer is dropped with the sigmoid.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite
from accel_lint.facts.literals import string_value
from accel_lint.facts.precision import Precision
from accel_lint.facts.tree import Tree
from accel_lint.names import Binding, BindingKind, Scope, resolves_to, single_binding, spelling_for
from accel_lint.rule import (
    Equivalence,
    Fix,
    FixSafety,
    Invariant,
    Replacement,
    Rule,
    Verification,
)
from accel_lint.torch_api import (
    BCE_FUNCTION,
    BCE_LOSS,
    BCE_WITH_LOGITS,
    SEQUENTIAL,
    SIGMOID,
    SIGMOID_MODULE,
)

_MAX_DEPTH = 3
# methods of a model that do not run its forward (its output is not seen through them)
_SAFE_METHODS = frozenset(
    {
        "parameters",
        "named_parameters",
        "train",
        "eval",
        "zero_grad",
        "state_dict",
        "load_state_dict",
        "cuda",
        "to",
        "float",
        "half",
        "bfloat16",
        "requires_grad_",
    }
)
# the chain a model's construction may end in: `Net().cuda()`, `Net().to(device)`
_MOVES = frozenset({"cuda", "to", "float", "train"})


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
        dropped: dict[cst.CSTNode, Replacement] = {}
        if logits is None:
            layer = _SigmoidLayer(self, args[0].value, site.scope).plan()
            if isinstance(layer, str):
                return layer
            if layer is None:
                return (
                    "the input is not `torch.sigmoid(<logits>)`: compute the loss from the "
                    "logits with `binary_cross_entropy_with_logits`, or outside autocast"
                )
            logits, dropped = args[0].value, layer
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
        if dropped:
            return Fix(
                "Drop the model's last `nn.Sigmoid` and compute the loss from its logits: "
                f"`{spelled}({code_for(logits)}, ...)`",
                {call: new, **dropped},
                (needed,) if needed else (),
            )
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


class _SigmoidLayer:
    """The loss's input as the output of a model of the file whose last layer is an
    `nn.Sigmoid`: `model(x)`, or a name bound once to it. `plan()` gives the edits that
    drop that layer; None when the input is no such output, a reason when it is but the
    layer cannot be dropped (the model's probabilities are needed elsewhere)."""

    def __init__(self, rule: BceUnderAutocast, expr: cst.BaseExpression, scope: Scope) -> None:
        self.facts = rule.facts
        self.calls = rule._calls
        self.expr = expr
        self.scope = scope
        self.tree = Tree.of(rule.facts)

    def plan(self) -> dict[cst.CSTNode, Replacement] | str | None:
        found = self._model_call()
        if found is None:
            return None
        call, output = found
        if not isinstance(call.func, cst.Name):
            return None
        model = single_binding(call.func, self.scope)
        if model is None or model.kind is not BindingKind.LOCAL or model.value is None:
            return None
        built = model.value
        while (
            isinstance(built, cst.Call)
            and isinstance(built.func, cst.Attribute)
            and built.func.attr.value in _MOVES
        ):
            built = built.func.value
        if not isinstance(built, cst.Call):
            return None
        model_scope = model.scope or self.scope
        edits = self._layer(built, model_scope)
        if edits is None or isinstance(edits, str):
            return edits
        if output is not None and not self._only_use(output, self.expr):
            return (
                "the model's last layer is an `nn.Sigmoid`, but its output is used outside "
                "the loss too (a threshold, a metric, returned), where the probabilities are "
                "needed: drop the layer and apply `torch.sigmoid` there by hand"
            )
        if not self._only_use(model, call.func, methods=True):
            return (
                "the model's last layer is an `nn.Sigmoid`, but the model is used elsewhere "
                "too (called again, passed on, returned), where its probabilities may be needed"
            )
        return edits

    def _model_call(self) -> tuple[cst.Call, Binding | None] | None:
        """The `model(x)` call, and the binding of the name it reaches the loss through."""
        if isinstance(self.expr, cst.Call):
            return self.expr, None
        if isinstance(self.expr, cst.Name):
            output = single_binding(self.expr, self.scope)
            if (
                output is not None
                and output.kind is BindingKind.LOCAL
                and isinstance(output.value, cst.Call)
            ):
                return output.value, output
        return None

    def _only_use(self, binding: Binding, expected: cst.CSTNode, methods: bool = False) -> bool:
        """Every read of `binding` is `expected` (or, for a model, a call of a method that
        does not run it)."""
        for node, _ in self.tree.references(binding):
            if node is expected:
                continue
            parent = self.tree.parent(node)
            if isinstance(parent, cst.AssignTarget):
                continue  # the binding itself: the name is bound once
            if methods and isinstance(parent, cst.Attribute) and parent.value is node:
                above = self.tree.parent(parent)
                if (
                    parent.attr.value in _SAFE_METHODS
                    and isinstance(above, cst.Call)
                    and above.func is parent
                ):
                    continue
            return False
        return True

    # -- the last layer ----------------------------------------------------------------

    def _layer(self, built: cst.Call, scope: Scope) -> dict[cst.CSTNode, Replacement] | str | None:
        if resolves_to(built.func, scope, SEQUENTIAL):
            return self._sequential(built, scope)
        if not isinstance(built.func, cst.Name):
            return None
        binding = single_binding(built.func, scope)
        if binding is None or not isinstance(binding.node, cst.ClassDef):
            return None
        cls = binding.node
        for base in cls.bases:
            if isinstance(base.value, cst.Name):
                bound = single_binding(base.value, binding.scope or scope)
                if bound is None or isinstance(bound.node, cst.ClassDef):
                    return None  # a base of the file's: its methods may run the model
        forward = self._forward(cls)
        if forward is None:
            return None
        last = self._returned(forward)
        if last is None:
            return None
        edits = self._last_call(last, cls)
        if edits is None:
            return edits
        for node, _ in self.tree.references(binding):
            if node is not built.func:
                return (
                    f"the model's class `{cls.name.value}` ends in an `nn.Sigmoid`, but the "
                    "class is used elsewhere too (built again, a base), where its "
                    "probabilities may be needed"
                )
        if self._runs_itself(cls):
            return (
                f"the model's class `{cls.name.value}` ends in an `nn.Sigmoid`, but its own "
                "methods run it (`self(...)`, `.forward`), where its probabilities may be needed"
            )
        return edits

    def _sequential(self, seq: cst.Call, scope: Scope) -> dict[cst.CSTNode, Replacement] | None:
        args = list(seq.args)
        if len(args) < 2 or any(a.keyword is not None or a.star for a in args):
            return None
        last = args[-1].value
        if not (isinstance(last, cst.Call) and not last.args):
            return None
        if not resolves_to(last.func, scope, SIGMOID_MODULE):
            return None
        kept = [*args[:-2], args[-2].with_changes(comma=args[-1].comma)]
        return {seq: seq.with_changes(args=kept)}

    def _forward(self, cls: cst.ClassDef) -> cst.FunctionDef | None:
        body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
        found = [s for s in body if isinstance(s, cst.FunctionDef) and s.name.value == "forward"]
        if len(found) != 1 or found[0].decorators:
            return None
        return found[0]

    def _returned(self, forward: cst.FunctionDef) -> cst.Call | None:
        """The call `forward` returns, when it ends in its only `return <call>`."""
        body = forward.body.body if isinstance(forward.body, cst.IndentedBlock) else ()
        if not body or not isinstance(body[-1], cst.SimpleStatementLine):
            return None
        line = body[-1].body
        if len(line) != 1 or not isinstance(line[0], cst.Return):
            return None
        value = line[0].value
        returns = [
            s
            for s in body[:-1]
            if isinstance(s, cst.SimpleStatementLine)
            and any(isinstance(x, cst.Return) for x in s.body)
        ]
        if returns or any(not isinstance(s, cst.SimpleStatementLine) for s in body):
            return None  # an early return or a branch: the last call is not the only way out
        return value if isinstance(value, cst.Call) else None

    def _last_call(
        self, last: cst.Call, cls: cst.ClassDef
    ) -> dict[cst.CSTNode, Replacement] | None:
        scope = self._scope_in(last, self.facts.module_scope)
        func = last.func
        one_arg = len(last.args) == 1 and last.args[0].keyword is None and not last.args[0].star
        if resolves_to(func, scope, SIGMOID):
            return {last: last.args[0].value} if one_arg else None
        if isinstance(func, cst.Attribute) and func.attr.value == "sigmoid" and not last.args:
            return {last: func.value}
        if not (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
            and one_arg
        ):
            return None
        attr = func.attr.value
        assigned = [
            a
            for a in self.facts.attribute_assignments.get(attr, [])
            if a.receiver == "self" and a.class_def is cls
        ]
        if len(assigned) != 1 or not isinstance(assigned[0].value, cst.Call):
            return None
        value = assigned[0].value
        for node, _ in self.facts.attributes_named(attr):
            if node is func or cls not in self.tree.ancestors(node):
                continue
            if not isinstance(self.tree.parent(node), cst.AssignTarget):
                return None  # the layer is read elsewhere in the class
        if resolves_to(value.func, assigned[0].scope, SEQUENTIAL):
            return self._sequential(value, assigned[0].scope)
        if resolves_to(value.func, assigned[0].scope, SIGMOID_MODULE) and not value.args:
            return {last: last.args[0].value}
        return None

    def _scope_in(self, node: cst.CSTNode, scope: Scope) -> Scope:
        for ancestor in self.tree.ancestors(node):
            found = self.facts.scope_of.get(ancestor)
            if found is not None:
                return found
        return scope

    def _runs_itself(self, cls: cst.ClassDef) -> bool:
        if self.facts.attributes_named("forward"):
            return True
        for site in self.facts.calls:
            func = site.node.func
            if (
                isinstance(func, cst.Name)
                and func.value == "self"
                and self.calls.class_of(site.function) is cls
            ):
                return True
        return False
