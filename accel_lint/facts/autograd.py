"""Where autograd records a graph and what the file backpropagates, built once per
file (`Autograd.of(facts)`):

- grad mode: whether a call may run with autograd off (under `torch.no_grad()`,
  `torch.inference_mode()` or `torch.set_grad_enabled(<not True>)`, as a context, as
  a decorator, after a statement that switches it off, or because every call site of
  its function in the file runs that way: "follow the calls");
- backward passes: every call that backpropagates, with the expression it
  backpropagates (`loss` for `loss.backward()`, `scaler.scale(loss).backward()`,
  `accelerator.backward(loss)`, apex's `with amp.scale_loss(loss, opt) as s:
  s.backward()`);
- code that needs gradients: a function that backpropagates, differentiates
  (`torch.autograd.grad`, `torch.func`), steps an optimizer, switches grad mode on or
  reads `.grad`, here or in a function of the file it calls.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.syntax import children, last_name
from accel_lint.names import LOCAL, BindingKind, Scope, qualified_names, resolves_to
from accel_lint.torch_api import (
    AUTOGRAD_BACKWARD,
    AUTOGRAD_GRAD,
    DIFFERENTIATE,
    ENABLE_GRAD,
    NO_GRAD,
    SET_GRAD_ENABLED,
)

_MAX_DEPTH = 3
# Wrappers spelled for switching autograd off (`@smart_inference_mode()`, `@no_grad()`).
_NO_GRAD_NAME = re.compile(r"no_?grad|inference_mode|grad_disabled|disable_grad", re.I)
_BACKWARD = ("backward", "manual_backward")
# Receivers whose `.backward(loss)` backpropagates its argument, not itself
# (accelerate, Lightning Fabric, DeepSpeed engines, trainers).
_BACKWARD_OWNERS = ("accelerator", "fabric", "engine", "trainer", "self", "strategy", "autograd")


@dataclass(frozen=True)
class Backward:
    """A call that backpropagates `expr` (the loss, before any loss scaler)."""

    site: CallSite
    expr: cst.BaseExpression

    def names(self) -> set[str]:
        """The variables `expr` reads (`loss` and `k` in `(loss / k)`)."""
        return names_read(self.expr)


def names_read(expr: cst.BaseExpression) -> set[str]:
    """Variables an expression reads: `loss` and `n` in `loss.mean() / n`, not the
    attribute or method names (`mean`), nor keyword names (`dim` in `sum(dim=1)`);
    lambdas are not entered."""
    out: set[str] = set()
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        if isinstance(node, cst.Name):
            out.add(node.value)
        # the walk's fields: labels (attribute and keyword names) are not reads, and
        # libcst's `children` property rebuilds the node (slow)
        stack.extend(children(node))
    return out


class Autograd:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self._with_items: set[int] = {
            id(item.item) for site in facts.calls for w in site.withs for item in w.items
        }
        self._function_off: dict[cst.FunctionDef, bool] = {}
        self._needs_grad: dict[cst.FunctionDef | None, bool] = {}
        self._backwards: list[Backward] | None = None
        self._torch: bool | None = None
        self.switched_off_at_module_level = any(
            site.function is None and self._switches_off(site) for site in facts.calls
        )

    @classmethod
    def of(cls, facts: FileFacts) -> Autograd:
        return facts.shared(cls)

    @property
    def may_use_torch(self) -> bool:
        """The file imports torch, or names that a star import may bring (a file of
        another framework, such as Chainer's `loss.backward()`, is not ours)."""
        if self._torch is None:
            self._torch = bool(self.facts.module_scope.star_imports) or any(
                b.kind is BindingKind.IMPORT
                and b.target is not None
                and (b.target == "torch" or b.target.startswith("torch."))
                for scope in [self.facts.module_scope, *self.facts.scope_of.values()]
                for bindings in scope.bindings.values()
                for b in bindings
            )
        return self._torch

    # -- grad mode --------------------------------------------------------------

    def off_context(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        """`torch.no_grad()`, `torch.inference_mode()`, `torch.set_grad_enabled(x)` with
        `x` anything but True (a flag may be False): a context or decorator under which
        autograd may record nothing. A wrapper spelled like one (`@no_grad()` from a star
        import or a helper module) counts too: autograd may be off there."""
        call = expr if isinstance(expr, cst.Call) else None
        func = call.func if call is not None else expr
        name = last_name(func)
        if resolves_to(func, scope, SET_GRAD_ENABLED) or name == "set_grad_enabled":
            return call is not None and not _first_arg_is(call, "True")
        if resolves_to(func, scope, NO_GRAD) or (name and _NO_GRAD_NAME.search(name)):
            return call is None or not _first_arg_is(call, "False")  # inference_mode(False)
        return self._wraps_in_no_grad(func, scope)

    def _wraps_in_no_grad(self, func: cst.BaseExpression, scope: Scope) -> bool:
        """A decorator or context manager of this file whose code switches autograd off."""
        if not isinstance(func, cst.Name):
            return False
        bindings = scope.lookup(func.value)
        if not bindings or len(bindings) != 1:
            return False
        node = bindings[0].node
        if not isinstance(node, (cst.FunctionDef, cst.ClassDef)):
            return False
        code = self.facts.module.code_for_node(node)
        return any(word in code for word in ("no_grad", "inference_mode", "set_grad_enabled"))

    def _switches_off(self, site: CallSite) -> bool:
        """A `torch.set_grad_enabled(<not True>)` statement (not a `with` item)."""
        return (
            id(site.node) not in self._with_items
            and resolves_to(site.node.func, site.scope, SET_GRAD_ENABLED)
            and not _first_arg_is(site.node, "True")
        )

    def may_be_off(self, site: CallSite, depth: int = 0) -> bool:
        """Autograd may be off where `site` runs: a `with` block around it, its function
        (decorator, a statement switching it off), or every call site of its function in
        the file (a few calls deep)."""
        for block in site.withs:
            if any(self.off_context(item.item, site.scope) for item in block.items):
                return True
        if self.switched_off_at_module_level:
            return True
        if site.function is None:
            return False
        return self.function_may_be_off(site.function, depth)

    def function_may_be_off(self, func: cst.FunctionDef, depth: int = 0) -> bool:
        """Autograd may be off in all of `func`'s body: decorated, switched off by a
        statement inside, or every call site of it in the file is (a function with no
        call site in the file is judged on its own)."""
        found = self._function_off.get(func)
        if found is not None:
            return found
        self._function_off[func] = False  # a recursive call does not make it off
        found = self._own_off(func)
        if not found and depth < _MAX_DEPTH:
            callers = self.calls.calls_to(func)
            found = bool(callers) and all(self.may_be_off(c, depth + 1) for c in callers)
        self._function_off[func] = found
        return found

    def _own_off(self, func: cst.FunctionDef) -> bool:
        scope = self.facts.scope_of.get(func)
        outer = scope.parent if scope is not None else None
        if outer is not None and any(self.off_context(d.decorator, outer) for d in func.decorators):
            return True
        return any(self._switches_off(s) for s in self.calls.by_function.get(func, ()))

    # -- backward passes ----------------------------------------------------------

    def backwards(self) -> list[Backward]:
        """Every backward pass of the file, with what it backpropagates."""
        if self._backwards is None:
            self._backwards = [b for b in map(self._backward, self.facts.calls) if b is not None]
        return self._backwards

    def backwards_in(self, function: cst.FunctionDef | None) -> Iterator[Backward]:
        return (b for b in self.backwards() if b.site.function is function)

    def _backward(self, site: CallSite) -> Backward | None:
        call = site.node
        func = call.func
        if resolves_to(func, site.scope, AUTOGRAD_BACKWARD):
            return Backward(site, call.args[0].value) if call.args else None
        if not isinstance(func, cst.Attribute) or func.attr.value not in _BACKWARD:
            return None
        receiver = func.value
        owner = (last_name(receiver) or "").lower()
        if func.attr.value == "manual_backward" or any(o in owner for o in _BACKWARD_OWNERS):
            if call.args and call.args[0].keyword is None:
                return Backward(site, call.args[0].value)
            return None
        if (
            isinstance(receiver, cst.Call)
            and last_name(receiver.func) == "scale"
            and receiver.args
            and receiver.args[0].keyword is None
        ):
            return Backward(site, receiver.args[0].value)  # GradScaler
        scaled = self._apex_scaled(receiver, site.scope)
        return Backward(site, scaled if scaled is not None else receiver)

    def _apex_scaled(self, receiver: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
        """`loss` for `s` bound by `with amp.scale_loss(loss, optimizer) as s:`."""
        if not isinstance(receiver, cst.Name):
            return None
        bindings = scope.lookup(receiver.value)
        if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.WithItem):
            return None
        item = bindings[0].node.item
        if isinstance(item, cst.Call) and last_name(item.func) == "scale_loss" and item.args:
            return item.args[0].value
        return None

    # -- code that needs gradients ---------------------------------------------------

    def needs_grad(self, func: cst.FunctionDef | None, depth: int = 0) -> bool:
        """`func`'s body (or a function of the file it calls) backpropagates,
        differentiates, steps an optimizer, switches grad mode on, asks for gradients
        (`requires_grad_()`, `x.requires_grad = True`) or reads `.grad`."""
        found = self._needs_grad.get(func)
        if found is not None:
            return found
        self._needs_grad[func] = False
        found = self._reads_grads(func) or any(
            self._needs_grad_call(site, depth) for site in self.calls.by_function.get(func, ())
        )
        self._needs_grad[func] = found
        return found

    def _needs_grad_call(self, site: CallSite, depth: int) -> bool:
        call = site.node
        name = last_name(call.func)
        if name in _BACKWARD or name == "requires_grad_":
            return True
        if name == "step" and isinstance(call.func, cst.Attribute):
            receiver = (last_name(call.func.value) or "").lower()
            if "sched" not in receiver:  # an optimizer (or anything else) stepped
                return True
        names = qualified_names(call.func, site.scope)
        if names and LOCAL not in names:
            if names <= AUTOGRAD_GRAD or names <= ENABLE_GRAD or names <= AUTOGRAD_BACKWARD:
                return True
            if names <= SET_GRAD_ENABLED and not _first_arg_is(call, "False"):
                return True
            if names <= DIFFERENTIATE:
                return True
        if depth < _MAX_DEPTH:
            callee = self.calls.local_callee(call, site.scope)
            if callee is not None and self.needs_grad(callee[0], depth + 1):
                return True
        return False

    def _reads_grads(self, func: cst.FunctionDef | None) -> bool:
        """`func` reads `.grad` or sets `x.requires_grad = <anything but False>`."""
        if any(_function_of(scope) is func for _, scope in self.facts.attributes_named("grad")):
            return True
        return any(
            _function_of(a.scope) is func
            and not (isinstance(a.value, cst.Name) and a.value.value == "False")
            for a in self.facts.attribute_assignments.get("requires_grad", ())
        )


def _function_of(scope: Scope) -> cst.FunctionDef | None:
    """The def whose body a scope belongs to (comprehensions and lambdas look outward)."""
    current: Scope | None = scope
    while current is not None:
        if current.kind == "function" and isinstance(current.node, cst.FunctionDef):
            return current.node
        if current.kind in ("module", "class"):
            return None
        current = current.parent
    return None


def _first_arg_is(call: cst.Call, literal: str) -> bool:
    for arg in call.args:
        if arg.keyword is None or arg.keyword.value == "mode":
            return isinstance(arg.value, cst.Name) and arg.value.value == literal
    return False
