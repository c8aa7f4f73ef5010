"""Which loops run once per epoch around the places a loader is read, and whether
those reads only evaluate. A loop counts epochs when it is a `for` over a counter
(`range`, `trange`, `tqdm(range(...))`) or a `while`, and is either named for epochs
or trains in its body: `for i in range(3)` around an evaluation is not an epoch loop,
and flagging it would be a false positive. A sampler named for evaluation whose reads
never train is reported without a fix, since the order does not change the result."""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope, resolves_to
from accel_lint.rules.sampler_missing_set_epoch.flow import LOADER, SAMPLER, Flow, Iteration
from accel_lint.rules.sampler_missing_set_epoch.record import Loop, is_self_attribute
from accel_lint.rules.sampler_missing_set_epoch.script import Script
from accel_lint.torch_api import NO_GRAD

# Variables and functions named for evaluation: `sampler_val`, `test_loader`, `evaluate`.
_EVALUATION_NAME = re.compile(
    r"(?:^|_)(?:val|valid|validate|validation|eval|evaluate|evaluation|test|testing)(?:_|$)",
    re.IGNORECASE,
)
# Calls that hand the loader on to the loop around them rather than read it themselves.
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "track", "islice"})
_MAX_DEPTH = 3


def evaluation_only(script: Script, flow: Flow, read: list[Iteration]) -> bool:
    """Every read of the loader only evaluates: a loop over it that runs no backward pass
    or optimizer step (here or in the file's functions it calls), in code that says it
    evaluates (the sampler or loader is named for evaluation, `sampler_val`,
    `test_loader`; or the loop runs under `torch.no_grad()` / `inference_mode()`, or
    in a function named for evaluation or decorated with one), or a call named for
    evaluation that the rule cannot read (`evaluate(model, data_loader_val)`)."""
    names = [h.name for kind in (SAMPLER, LOADER) for h in flow.handles[kind]]
    named = any(_EVALUATION_NAME.search(name) for name in names)
    for iteration in read:
        if isinstance(iteration.place, cst.For):
            if _trains(script, iteration.place):
                return False
            if not (named or _evaluates(script, iteration.place, iteration.function)):
                return False
        else:
            callee = last_name(iteration.place.func) or ""
            if not _EVALUATION_NAME.search(callee) and not (named and callee in _WRAPPERS):
                return False
    return bool(read)


def _evaluates(script: Script, loop: Loop, function: cst.FunctionDef | None) -> bool:
    """The loop runs without autograd, or in a function that says it evaluates."""
    facts = script.facts
    site = facts.loop_sites.get(loop)
    if site is not None and any(
        _no_grad(item.item, site.scope) for w in site.withs for item in w.items
    ):
        return True
    if function is None:
        return False
    if _EVALUATION_NAME.search(function.name.value):
        return True
    scope = facts.scope_of.get(function)
    outer = scope.parent if scope is not None else None
    return outer is not None and any(_no_grad(d.decorator, outer) for d in function.decorators)


def _no_grad(expr: cst.BaseExpression, scope: Scope) -> bool:
    """`torch.no_grad()`, `torch.inference_mode()`, or the bare decorator."""
    return resolves_to(expr.func if isinstance(expr, cst.Call) else expr, scope, NO_GRAD)


def epoch_loops(script: Script, iteration: Iteration, flow: Flow) -> list[Loop]:
    enclosing = iteration.enclosing
    if isinstance(iteration.place, cst.For) and iteration.place in enclosing:
        enclosing = enclosing[: enclosing.index(iteration.place)]
    epoch = _innermost_epoch_loop(script, enclosing)
    if epoch is not None:
        return [epoch]
    if iteration.function is None:
        return []
    return _loops_calling(script, iteration.function, iteration.through_self, flow, 0)


def _loops_calling(
    script: Script, func: cst.FunctionDef, through_self: bool, flow: Flow, depth: int
) -> list[Loop]:
    """Epoch loops that call `func` (handing it the loader, or as a method via self)."""
    if depth > _MAX_DEPTH:
        return []
    found: list[Loop] = []
    for site in script.calls.calls_to(func):
        passes = any(id(arg.value) in flow.values[LOADER] for arg in site.node.args)
        via_self = isinstance(site.node.func, cst.Attribute) and is_self_attribute(site.node.func)
        if not (passes or (through_self and via_self)):
            continue
        epoch = _innermost_epoch_loop(script, site.loops)
        if epoch is not None:
            found.append(epoch)
        elif site.function is not None:
            found.extend(_loops_calling(script, site.function, through_self, flow, depth + 1))
    return found


def _innermost_epoch_loop(script: Script, loops: tuple[Loop, ...]) -> Loop | None:
    epochs = Loops.of(script.facts)
    return next((loop for loop in reversed(loops) if epochs.is_epoch_loop(loop)), None)


def _trains(script: Script, loop: Loop) -> bool:
    return Loops.of(script.facts).trains(loop)
