"""ACL411 wrapped-state-dict-saved: `torch.save(<m>.state_dict(), ...)` where `<m>` is a
DistributedDataParallel or DataParallel wrapper: every key starts with `module.`.
Page: rules/ACL411.md"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.literals import string_value
from accel_lint.facts.order import Orders
from accel_lint.facts.syntax import argument_for, descendants, last_name
from accel_lint.facts.wrappers import Wrap, Wrappers
from accel_lint.names import Binding, BindingKind, Scope, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import MODULE_WRAPPERS, TORCH_SAVE

_MAX_DEPTH = 3
_LOADER_NAME = re.compile(r"load|resume|restore|restart", re.IGNORECASE)
_MESSAGE = (
    "`{model}` is wrapped in DistributedDataParallel or DataParallel, so its "
    "`state_dict()` names every tensor `module.<name>`: the checkpoint no longer loads "
    "into the bare model with `strict=True`"
)


class WrappedStateDictSaved(Rule):
    code = "ACL411"
    name = "wrapped-state-dict-saved"
    summary = "torch.save of a wrapped model's state_dict(): every key gets a `module.` prefix"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.BARE_CHECKPOINT)

    def setup(self) -> None:
        self._choices: list[tuple[cst.IfExp, Scope]] = []

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._choices.append((node, self.facts.scope))

    def finish(self) -> None:
        saves = self.facts.calls_resolving_to(TORCH_SAVE)
        if not saves:
            return
        self._unwrapped_branches = self._branches_without_wrapper()
        self._wrappers = Wrappers.of(self.facts)
        self._calls = CallGraph.of(self.facts)
        self._loads: bool | None = None
        self._expanded: set[int] = set()
        seen: set[cst.Call] = set()
        for site in saves:
            saved = _saved_object(site.node)
            if saved is None:
                continue
            for call, scope in self._state_dicts(saved, site.scope, 0):
                if call not in seen:
                    seen.add(call)
                    self._check(call, scope)

    def _state_dicts(
        self, expr: cst.BaseExpression, scope: Scope, depth: int
    ) -> Iterator[tuple[cst.Call, Scope]]:
        """The `<m>.state_dict()` calls whose result `expr` is or holds: directly, inside
        a dict or list display, through the bindings of a name that reach it, or through a
        parameter of a function of the file that its callers fill."""
        if depth > _MAX_DEPTH or id(expr) in self._expanded:
            return  # followed already: what it holds was found then
        self._expanded.add(id(expr))
        if isinstance(expr, cst.Call):
            if _is_state_dict_call(expr):
                yield expr, scope
            return
        if isinstance(expr, cst.Dict):
            for element in expr.elements:
                if isinstance(element, cst.DictElement):
                    yield from self._state_dicts(element.value, scope, depth + 1)
            return
        if isinstance(expr, (cst.List, cst.Tuple)):
            for item in expr.elements:
                if isinstance(item, cst.Element):
                    yield from self._state_dicts(item.value, scope, depth + 1)
            return
        if not isinstance(expr, cst.Name):
            return
        # a name bound several times (a checkpoint loaded, then rebuilt as a dict
        # for saving) is judged by the bindings that reach this read
        for binding in Orders.of(self.facts).reaching(expr, scope) or ():
            yield from self._bound(binding, expr.value, depth)

    def _bound(self, binding: Binding, name: str, depth: int) -> Iterator[tuple[cst.Call, Scope]]:
        if binding.kind is BindingKind.IMPORT or binding.scope is None:
            return
        if isinstance(binding.node, cst.Param):
            func = binding.scope.node
            if not isinstance(func, cst.FunctionDef):
                return
            positional = [*func.params.posonly_params, *func.params.params]
            index = next((i for i, p in enumerate(positional) if p is binding.node), None)
            for site, offset in self._calls.invocations(func):
                value = argument_for(site.node, name, index, offset)
                if value is not None:
                    yield from self._state_dicts(value, site.scope, depth + 1)
        elif binding.value is not None:
            yield from self._state_dicts(binding.value, binding.scope, depth + 1)

    def _branches_without_wrapper(self) -> set[cst.Call]:
        """`state_dict()` calls where the script itself tested that the model is not
        wrapped: the `else` of `if isinstance(model, DataParallel):` (or of a
        `hasattr(model, "module")` test), as a statement or a conditional expression."""
        out: set[cst.Call] = set()
        for site in self.facts.method_calls("state_dict"):
            func = site.node.func
            assert isinstance(func, cst.Attribute)
            receiver = code_for(func.value)
            if any(
                not positive and self._tests_wrapper(test, receiver, site.scope)
                for test, positive in site.guards
            ):
                out.add(site.node)
        for choice, scope in self._choices:
            receivers = self._tested(choice.test, scope)
            if not receivers:
                continue
            for node in descendants(choice.orelse):
                if isinstance(node, cst.Call) and _is_state_dict_call(node):
                    func = node.func
                    assert isinstance(func, cst.Attribute)
                    if code_for(func.value) in receivers:
                        out.add(node)
        return out

    def _tests_wrapper(self, test: cst.BaseExpression, receiver: str, scope: Scope) -> bool:
        return receiver in self._tested(test, scope)

    def _tested(self, test: cst.BaseExpression, scope: Scope) -> set[str]:
        """The receivers `test` asks "is it wrapped?" about: `isinstance(m, DDP)`,
        `isinstance(m, (DataParallel, DistributedDataParallel))`, `hasattr(m, "module")`."""
        if not isinstance(test, cst.Call) or len(test.args) != 2:
            return set()
        subject, kind = test.args[0].value, test.args[1].value
        if resolves_to(test.func, scope, {"builtins.hasattr"}):
            return {code_for(subject)} if string_value(kind) == "module" else set()
        if not resolves_to(test.func, scope, {"builtins.isinstance"}):
            return set()
        classes = (
            [e.value for e in kind.elements] if isinstance(kind, (cst.Tuple, cst.List)) else [kind]
        )
        if any(resolves_to(c, scope, MODULE_WRAPPERS) for c in classes):
            return {code_for(subject)}
        return set()

    def _check(self, call: cst.Call, scope: Scope) -> None:
        if call in self._unwrapped_branches:
            return
        func = call.func
        assert isinstance(func, cst.Attribute)
        model = func.value
        state = self._wrappers.wrap_state(model, scope, MODULE_WRAPPERS, call)
        if state is Wrap.NO:
            return
        text = code_for(model)
        message = _MESSAGE.format(model=text)
        if state is Wrap.MAYBE:
            reason = (
                f"`{text}` is not certainly the wrapper here (wrapped only on some paths, "
                f"rebound, or read in another function), so `{text}.module` may not exist"
            )
            self.report(call, message, no_fix_reason=reason)
            return
        if self._loads_into_wrapper():
            reason = (
                "the script loads state dicts into the wrapped model too: change its saves "
                "and loads to `.module` together"
            )
            self.report(call, message, no_fix_reason=reason)
            return
        unwrapped = cst.Attribute(value=model, attr=cst.Name("module"))
        fix = Fix(
            f"Save the bare model's state: `{text}.module.state_dict()`",
            {func: func.with_changes(value=unwrapped)},
        )
        self.report(call, message, fix)

    def _loads_into_wrapper(self) -> bool:
        """The script loads checkpoints into a wrapped model: `model.load_state_dict(...)`,
        or the model handed to a loader it cannot read (`restart_from_checkpoint(path,
        state_dict=model)`). Saving without the prefix would break its own resume."""
        if self._loads is None:
            self._loads = any(
                self._wrapped(expr, site)
                for site in self.facts.calls
                for expr in _loaded_into(site.node)
            )
        return self._loads

    def _wrapped(self, expr: cst.BaseExpression, site: CallSite) -> bool:
        state = self._wrappers.wrap_state(expr, site.scope, MODULE_WRAPPERS, site.node)
        return state is not Wrap.NO


def _loaded_into(call: cst.Call) -> Iterator[cst.BaseExpression]:
    """What `call` may load a checkpoint into: the receiver of `load_state_dict`, and
    the plain arguments of a call named for loading or resuming."""
    func = call.func
    name = last_name(func) or ""
    if isinstance(func, cst.Attribute) and name == "load_state_dict":
        yield func.value
    elif _LOADER_NAME.search(name):
        yield from (
            arg.value for arg in call.args if isinstance(arg.value, (cst.Name, cst.Attribute))
        )


def _saved_object(call: cst.Call) -> cst.BaseExpression | None:
    """The `obj` argument of `torch.save(obj, f, ...)`."""
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None or arg.keyword.value == "obj":
            return arg.value
    return None


def _is_state_dict_call(call: cst.Call) -> bool:
    """`<m>.state_dict()` (keyword arguments such as `keep_vars=` allowed)."""
    func = call.func
    return (
        isinstance(func, cst.Attribute)
        and func.attr.value == "state_dict"
        and all(arg.keyword is not None and not arg.star for arg in call.args)
    )
