"""ACL210 compiled-state-dict-saved: `torch.save(<m>.state_dict(), ...)` where `<m>` may
hold the module `torch.compile` returned: every key starts with `_orig_mod.`.
Page: rules/ACL210.md

The state dicts are found as ACL411 finds them (saved directly, inside a dict or list
display, or through a name bound once to one); `<m>` is held against `torch.compile`
through its bindings, also under a flag (`if args.compile: model =
torch.compile(model)`), and through a DistributedDataParallel or DataParallel wrapper
built around a compiled model. The fix reads the original module with
`getattr(<m>, "_orig_mod", <m>)`, which is `<m>` itself when it was not compiled.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.edits import code_for, expression
from accel_lint.facts.syntax import last_name
from accel_lint.facts.wrappers import Wrap, Wrappers
from accel_lint.names import Binding, BindingKind, Scope, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import MODULE_WRAPPERS, TORCH_COMPILE, TORCH_SAVE

_MAX_DEPTH = 3


class CompiledStateDictSaved(Rule):
    code = "ACL210"
    name = "compiled-state-dict-saved"
    summary = "torch.save of a compiled model's state_dict(): every key gets an `_orig_mod.` prefix"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.BARE_CHECKPOINT)

    def finish(self) -> None:
        saves = self.facts.calls_resolving_to(TORCH_SAVE)
        if not saves:
            return
        self._wrappers = Wrappers.of(self.facts)
        self._loads: bool | None = None
        seen: set[cst.Call] = set()
        for site in saves:
            saved = _saved_object(site.node)
            if saved is None:
                continue
            for call, scope in self._state_dicts(saved, site.scope, site.node, 0):
                if call not in seen:
                    seen.add(call)
                    self._check(call, scope)

    def _state_dicts(
        self, expr: cst.BaseExpression, scope: Scope, at: cst.CSTNode, depth: int
    ) -> Iterator[tuple[cst.Call, Scope]]:
        """The `<m>.state_dict()` calls whose result `expr` is or holds: directly, inside
        a dict or list display, or through a name: the binding that reaches `at` (the
        last one before it in the same body, when the name is bound several times)."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(expr, cst.Call):
            func = expr.func
            if (
                isinstance(func, cst.Attribute)
                and func.attr.value == "state_dict"
                and all(arg.keyword is not None and not arg.star for arg in expr.args)
            ):
                yield expr, scope
            return
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    yield from self._state_dicts(element.value, scope, at, depth + 1)
            return
        if isinstance(expr, (cst.List, cst.Tuple)):
            for item in expr.elements:
                if isinstance(item, cst.Element):
                    yield from self._state_dicts(item.value, scope, at, depth + 1)
            return
        if not isinstance(expr, cst.Name):
            return
        binding = self._reaching(expr, scope, at)
        if binding is None or binding.value is None or binding.scope is None:
            return
        yield from self._state_dicts(binding.value, binding.scope, binding.node or at, depth + 1)

    def _reaching(self, name: cst.Name, scope: Scope, at: cst.CSTNode) -> Binding | None:
        bindings = scope.lookup(name.value)
        if not bindings or any(
            b.kind is BindingKind.IMPORT or isinstance(b.node, cst.Param) for b in bindings
        ):
            return None
        if len(bindings) == 1:
            return bindings[0]
        owner = bindings[0].scope
        order = self._wrappers.order(owner) if owner is not None else None
        here = order.place(at) if order is not None else None
        if order is None or here is None or any(b.scope is not owner for b in bindings):
            return None
        before = [
            (place.order, b)
            for b in bindings
            if (place := order.place(b.node)) is not None and place.order < here.order
        ]
        return max(before, key=lambda item: item[0])[1] if before else None

    def _check(self, call: cst.Call, scope: Scope) -> None:
        func = call.func
        assert isinstance(func, cst.Attribute)
        model = func.value
        if _unwraps_compile(model):
            return
        compiled, holder = self._compiled(model, scope, call)
        if compiled is Wrap.NO:
            return
        text = code_for(holder)
        message = (
            f"`{code_for(model)}` may hold the module `torch.compile` returned, whose "
            "`state_dict()` names every tensor `_orig_mod.<name>`: the checkpoint no longer "
            "loads into the plain model"
        )
        if holder is not model:
            message = message.replace(code_for(model), text, 1) + (
                f" (inside the wrapper `{code_for(model)}`)"
            )
        if self._loads_into_compiled():
            reason = (
                "the script loads state dicts into the compiled model too: change its saves "
                "and loads to the original module together"
            )
            self.report(call, message, no_fix_reason=reason)
            return
        original = expression(f'getattr({text}, "_orig_mod", {text})')
        fix = Fix(
            f'Save the original module\'s state: `getattr({text}, "_orig_mod", {text})`',
            {func: func.with_changes(value=original)},
        )
        self.report(call, message, fix)

    def _compiled(
        self, model: cst.BaseExpression, scope: Scope, at: cst.CSTNode
    ) -> tuple[Wrap, cst.BaseExpression]:
        """Whether `model` may hold a compiled module, and the expression that holds it
        (`model` itself, or `model.module` around a wrapper of a compiled model)."""
        state = self._wrappers.wrap_state(model, scope, TORCH_COMPILE, at)
        if state is not Wrap.NO:
            return state, model
        choice = _chosen(model, scope)
        if choice is not None:
            # `raw_model = model.module if ddp else model` (nanoGPT): either side may hold
            # the compiled module, and `getattr(raw_model, "_orig_mod", ...)` fits both
            branches, where = choice
            if any(self._compiled(b, where, b)[0] is not Wrap.NO for b in branches):
                return Wrap.MAYBE, model
            return Wrap.NO, model
        inner: cst.BaseExpression = model
        if isinstance(model, cst.Attribute) and model.attr.value == "module":
            inner = model.value  # already unwrapped: `ddp.module.state_dict()`
        elif self._wrappers.wrap_state(model, scope, MODULE_WRAPPERS, at) is Wrap.NO:
            return Wrap.NO, model
        for builder, where in self._wrappers.builders(inner, scope):
            if not resolves_to(builder.func, where, MODULE_WRAPPERS) or not builder.args:
                continue
            first = builder.args[0]
            if first.keyword is not None and first.keyword.value != "module":
                continue
            if self._wrappers.wrap_state(first.value, where, TORCH_COMPILE, builder) is Wrap.NO:
                continue
            holder = model if inner is not model else cst.Attribute(model, cst.Name("module"))
            return Wrap.MAYBE, holder
        return Wrap.NO, model

    def _loads_into_compiled(self) -> bool:
        if self._loads is None:
            self._loads = False
            for site in self.facts.method_calls("load_state_dict"):
                func = site.node.func
                assert isinstance(func, cst.Attribute)
                state, _ = self._compiled(func.value, site.scope, site.node)
                if state is not Wrap.NO:
                    self._loads = True
                    break
        return self._loads


def _chosen(
    expr: cst.BaseExpression, scope: Scope
) -> tuple[tuple[cst.BaseExpression, cst.BaseExpression], Scope] | None:
    """The two sides of the conditional expression a name is bound to, once."""
    if not isinstance(expr, cst.Name):
        return None
    bindings = scope.lookup(expr.value)
    if not bindings or len(bindings) != 1:
        return None
    value, where = bindings[0].value, bindings[0].scope
    if not isinstance(value, cst.IfExp) or where is None:
        return None
    return (value.body, value.orelse), where


def _unwraps_compile(expr: cst.BaseExpression) -> bool:
    """`model._orig_mod`, `getattr(model, "_orig_mod", model)`: already the original."""
    if isinstance(expr, cst.Attribute):
        return expr.attr.value == "_orig_mod"
    if isinstance(expr, cst.Call) and last_name(expr.func) == "getattr" and len(expr.args) >= 2:
        return code_for(expr.args[1].value).strip("'\"") == "_orig_mod"
    return False


def _saved_object(call: cst.Call) -> cst.BaseExpression | None:
    """The `obj` argument of `torch.save(obj, f, ...)`."""
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "obj":
            return arg.value
    return None
