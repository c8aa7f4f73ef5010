"""Which module a model expression holds: wrapped in DistributedDataParallel or
DataParallel (`wrap_state`), and what built it before (`builders`). Built once
per file (`Wrappers.of(facts)`) and asked by the distributed rules.

A name is followed through its bindings (`model = DDP(model, ...)`,
`model = model.to(device)`, `net = model`), a parameter through the calls of the
file that fill it, `self.<attr>` through the assignments of its class. The answer
is `Wrap.YES` only when the wrapping is certain where the expression is read: one
wrapping binding, unconditional, after every other binding of the name and before
the read. `Wrap.MAYBE` covers a wrap under a condition (`if args.distributed:`),
in another method, or in a conditional expression; a fix that needs the wrapper
(`model.module`, `model.no_sync()`) is offered only on `YES`.
"""

from __future__ import annotations

from collections.abc import Iterator
from enum import IntEnum

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import FileFacts
from accel_lint.facts.order import Order, Orders, Placed
from accel_lint.facts.syntax import argument_for
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.torch_api import MODULE_RETURNS_SELF

_MAX_DEPTH = 4


class Wrap(IntEnum):
    NO = 0
    MAYBE = 1  # wrapped on some runs or paths only, or where the order is unknown
    YES = 2


class Wrappers:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self._orders = Orders.of(facts)
        self._states: dict[tuple[int, int, frozenset[str], int], Wrap] = {}

    @classmethod
    def of(cls, facts: FileFacts) -> Wrappers:
        return facts.shared(cls)

    def order(self, scope: Scope) -> Order | None:
        """The statement order of the def (or module) that `scope` belongs to."""
        return self._orders.order(scope)

    # -- is it wrapped? ---------------------------------------------------------------

    def wrap_state(
        self,
        expr: cst.BaseExpression,
        scope: Scope,
        wrappers: frozenset[str],
        at: cst.CSTNode | None = None,
        depth: int = 0,
    ) -> Wrap:
        """Does `expr`, read at `at` in `scope`, hold a module wrapped by one of
        `wrappers` (qualified names of their classes)? Each question is answered once
        per file: a parameter's state is asked again by every read of it, and a name
        bound by many definitions of one function (a script pasted twice) would
        otherwise be asked once per path through them."""
        if depth > _MAX_DEPTH:
            return Wrap.NO
        key = (id(expr), id(at), wrappers, depth)
        found = self._states.get(key)
        if found is None:
            found = self._states[key] = self._wrap_state(expr, scope, wrappers, at, depth)
        return found

    def _wrap_state(
        self,
        expr: cst.BaseExpression,
        scope: Scope,
        wrappers: frozenset[str],
        at: cst.CSTNode | None,
        depth: int,
    ) -> Wrap:
        if isinstance(expr, cst.Name):
            return self._name_state(expr, scope, wrappers, at, depth)
        if isinstance(expr, cst.Attribute):
            if expr.attr.value == "module":
                return Wrap.NO  # `model.module` is what the wrapper holds
            if isinstance(expr.value, cst.Name) and expr.value.value == "self":
                return self._self_state(expr.attr.value, scope, wrappers, at, depth)
            return Wrap.NO
        return self._value_state(expr, scope, wrappers, depth)

    def _value_state(
        self, value: cst.BaseExpression, scope: Scope, wrappers: frozenset[str], depth: int
    ) -> Wrap:
        if isinstance(value, cst.Call):
            if resolves_to(value.func, scope, wrappers):
                return Wrap.YES
            func = value.func
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_RETURNS_SELF:
                # `DDP(model).cuda()` is the wrapper; `model.cuda()` is `model`
                return self.wrap_state(func.value, scope, wrappers, value, depth + 1)
            return Wrap.NO
        if isinstance(value, cst.IfExp):
            if any(_unwraps(branch) for branch in (value.body, value.orelse)):
                return Wrap.NO  # `model.module if hasattr(model, "module") else model`
            states = {
                self._value_state(value.body, scope, wrappers, depth + 1),
                self._value_state(value.orelse, scope, wrappers, depth + 1),
            }
            if states == {Wrap.YES}:
                return Wrap.YES
            return Wrap.MAYBE if states - {Wrap.NO} else Wrap.NO
        if isinstance(value, (cst.Name, cst.Attribute)):
            return self.wrap_state(value, scope, wrappers, value, depth + 1)
        return Wrap.NO

    def _name_state(
        self,
        name: cst.Name,
        scope: Scope,
        wrappers: frozenset[str],
        at: cst.CSTNode | None,
        depth: int,
    ) -> Wrap:
        bindings = scope.lookup(name.value)
        if not bindings or any(b.kind is BindingKind.IMPORT for b in bindings):
            return Wrap.NO
        if any(b.value is not None and _unwraps(b.value) for b in bindings):
            # `g_module = generator.module` in one branch, `= generator` in the other:
            # the name holds the bare model on every path
            return Wrap.NO
        order = self.order(bindings[0].scope) if bindings[0].scope is not None else None
        here = order.place(at) if order is not None else None
        wrapping: list[tuple[Placed | None, Wrap]] = []
        others: list[Placed | None] = []
        params: list[Wrap] = []
        for binding in bindings:
            node = binding.node
            if isinstance(node, cst.Param):
                params.append(self._param_state(node, binding.scope, wrappers, depth))
                continue
            if binding.value is None or binding.scope is None:
                others.append(order.place(node) if order is not None else None)
                continue
            place = order.place(node) if order is not None else None
            if here is not None and place is not None and place.order > here.order:
                continue  # bound after the read (a loop may still carry it: not certain)
            state = self._value_state(binding.value, binding.scope, wrappers, depth + 1)
            if state is Wrap.NO:
                others.append(place)
            else:
                wrapping.append((place, state))
        if not wrapping:
            if params and not others and all(p is Wrap.YES for p in params):
                return Wrap.YES
            return Wrap.MAYBE if any(p is not Wrap.NO for p in params) else Wrap.NO
        # a parameter is bound before the body runs: `model = DDP(model)` rebinds it
        if len(wrapping) == 1 and here is not None:
            place, state = wrapping[0]
            if (
                state is Wrap.YES
                and place is not None
                and not place.conditional
                and all(o is not None and o.order < place.order for o in others)
            ):
                return Wrap.YES
        return Wrap.MAYBE

    def _param_state(
        self, param: cst.Param, scope: Scope | None, wrappers: frozenset[str], depth: int
    ) -> Wrap:
        func = scope.node if scope is not None else None
        if not isinstance(func, cst.FunctionDef) or depth > _MAX_DEPTH:
            return Wrap.NO
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        states: list[Wrap] = []
        for site, offset in self.calls.invocations(func):
            value = argument_for(site.node, param.name.value, index, offset)
            if value is None:
                states.append(Wrap.NO)
                continue
            states.append(self.wrap_state(value, site.scope, wrappers, site.node, depth + 1))
        if not states:
            return Wrap.NO
        if all(s is Wrap.YES for s in states):
            return Wrap.YES
        return Wrap.MAYBE if any(s is not Wrap.NO for s in states) else Wrap.NO

    def _self_state(
        self,
        attr: str,
        scope: Scope,
        wrappers: frozenset[str],
        at: cst.CSTNode | None,
        depth: int,
    ) -> Wrap:
        owner = _method_class(scope)
        if owner is None:
            return Wrap.NO
        assignments = [
            a
            for a in self.facts.attribute_assignments.get(attr, ())
            if a.receiver == "self" and a.class_def is owner
        ]
        states = [
            (a, self._value_state(a.value, a.scope, wrappers, depth + 1)) for a in assignments
        ]
        wrapping = [(a, s) for a, s in states if s is not Wrap.NO]
        if not wrapping:
            return Wrap.NO
        if len(wrapping) == 1 and wrapping[0][1] is Wrap.YES:
            # certain only when `__init__` wraps it last and unconditionally
            assignment = wrapping[0][0]
            others = [a for a, s in states if s is Wrap.NO]
            order = self.order(assignment.scope)
            if (
                order is not None
                and _is_init(assignment.scope)
                and all(o.scope is assignment.scope for o in others)
            ):
                place = order.place(assignment.value)
                before = [order.place(o.value) for o in others]
                inside = assignment.scope.function_scope() is scope.function_scope()
                here = order.place(at) if inside else None
                if (
                    place is not None
                    and not place.conditional
                    and all(b is not None and b.order < place.order for b in before)
                    and (not inside or (here is not None and here.order > place.order))
                ):
                    return Wrap.YES
        return Wrap.MAYBE

    # -- what built it ----------------------------------------------------------------

    def builders(
        self, expr: cst.BaseExpression, scope: Scope, depth: int = 0
    ) -> Iterator[tuple[cst.Call, Scope]]:
        """The calls whose result `expr` may hold, followed through names, `self.<attr>`,
        parameters, conditional expressions and the methods that return the module
        itself (`model.to(device)` was built by whatever built `model`)."""
        if depth > _MAX_DEPTH:
            return
        if isinstance(expr, cst.Call):
            yield expr, scope
            func = expr.func
            if isinstance(func, cst.Attribute) and func.attr.value in MODULE_RETURNS_SELF:
                yield from self.builders(func.value, scope, depth + 1)
            return
        if isinstance(expr, cst.IfExp):
            yield from self.builders(expr.body, scope, depth + 1)
            yield from self.builders(expr.orelse, scope, depth + 1)
            return
        if isinstance(expr, cst.Name):
            for binding in scope.lookup(expr.value) or ():
                if binding.kind is BindingKind.IMPORT:
                    continue
                if isinstance(binding.node, cst.Param) and binding.scope is not None:
                    yield from self._param_builders(binding.node, binding.scope, depth)
                elif binding.value is not None and binding.scope is not None:
                    yield from self.builders(binding.value, binding.scope, depth + 1)
            return
        if (
            isinstance(expr, cst.Attribute)
            and isinstance(expr.value, cst.Name)
            and expr.value.value == "self"
        ):
            owner = _method_class(scope)
            for a in self.facts.attribute_assignments.get(expr.attr.value, ()):
                if a.receiver == "self" and a.class_def is owner and owner is not None:
                    yield from self.builders(a.value, a.scope, depth + 1)

    def _param_builders(
        self, param: cst.Param, scope: Scope, depth: int
    ) -> Iterator[tuple[cst.Call, Scope]]:
        func = scope.node
        if not isinstance(func, cst.FunctionDef):
            return
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        for site, offset in self.calls.invocations(func):
            value = argument_for(site.node, param.name.value, index, offset)
            if value is not None:
                yield from self.builders(value, site.scope, depth + 1)


def _method_class(scope: Scope) -> cst.ClassDef | None:
    """The class whose method (or a closure inside it) `scope` is."""
    current: Scope | None = scope
    while current is not None:
        parent = current.parent
        if current.kind == "function" and parent is not None and parent.kind == "class":
            node = parent.node
            return node if isinstance(node, cst.ClassDef) else None
        current = parent
    return None


def _unwraps(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Attribute) and expr.attr.value == "module"


def _is_init(scope: Scope) -> bool:
    """A wrap in `__init__` is in place before any other method runs."""
    node = scope.function_scope().node
    return isinstance(node, cst.FunctionDef) and node.name.value == "__init__"
