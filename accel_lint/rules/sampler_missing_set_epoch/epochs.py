"""Which loops run once per epoch around the places a loader is read, and whether
those reads only evaluate. A loop counts epochs when it is a `for` over a counter
(`range`, `trange`, `tqdm(range(...))`) or a `while`, and is either named for epochs
or trains in its body: `for i in range(3)` around an evaluation is not an epoch loop,
and flagging it would be a false positive. A sampler named for evaluation whose reads
never train is reported without a fix, since the order does not change the result."""

from __future__ import annotations

import re

import libcst as cst

from accel_lint.facts import CallSite
from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope, resolves_to
from accel_lint.rules.sampler_missing_set_epoch.flow import LOADER, SAMPLER, Flow, Iteration
from accel_lint.rules.sampler_missing_set_epoch.record import Loop, is_self_attribute
from accel_lint.rules.sampler_missing_set_epoch.script import Script

# A loop whose body calls one of these trains (an evaluation loop does not).
_TRAINING_CALLS = ("backward", "manual_backward", "step")
# A counting loop whose variable is spelled like this counts epochs.
_EPOCH_NAME = re.compile(r"^(?:e|ep|.*epoch.*)$", re.IGNORECASE)
# Variables and functions named for evaluation: `sampler_val`, `test_loader`, `evaluate`.
_EVALUATION_NAME = re.compile(
    r"(?:^|_)(?:val|valid|validate|validation|eval|evaluate|evaluation|test|testing)(?:_|$)",
    re.IGNORECASE,
)
# Calls that hand the loader on to the loop around them rather than read it themselves.
_WRAPPERS = frozenset({"enumerate", "tqdm", "iter", "zip", "track", "islice"})
_MAX_DEPTH = 3


def evaluation_only(script: Script, flow: Flow, read: list[Iteration]) -> bool:
    """The sampler and its loaders are named for evaluation (`sampler_val`,
    `test_loader`) and no epoch reads them to train: no loop over them trains, and
    no code they are handed to is named for training."""
    names = [h.name for kind in (SAMPLER, LOADER) for h in flow.handles[kind]]
    if not any(_EVALUATION_NAME.search(name) for name in names):
        return False
    for iteration in read:
        if isinstance(iteration.place, cst.For):
            if _trains(script, iteration.place):
                return False
        else:
            callee = last_name(iteration.place.func) or ""
            if not _EVALUATION_NAME.search(callee) and callee not in _WRAPPERS:
                return False
    return True


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
    return next((loop for loop in reversed(loops) if _is_epoch_loop(script, loop)), None)


def _is_epoch_loop(script: Script, loop: Loop) -> bool:
    """A loop that runs once per epoch: a `for` over a counter (`range`, `trange`,
    `tqdm(range(...))`) or a `while`, either named for epochs (`for epoch in ...`,
    `range(args.epochs)`, `while epoch < n`) or training in its body. A counter
    that neither says nor shows it (`for i in range(3)` around an evaluation) is not."""
    if isinstance(loop, cst.For) and not _counts(loop.iter, script.record.loops[loop].scope):
        return False
    return names_epochs(loop) or _trains(script, loop)


def names_epochs(loop: Loop) -> bool:
    if isinstance(loop, cst.While):
        return _mentions_epoch(loop.test)
    return _mentions_epoch(loop.target) or _mentions_epoch(loop.iter)


def _trains(script: Script, loop: Loop) -> bool:
    """The loop's body runs a backward pass or an optimizer step, here or in a callee."""
    function = script.record.loops[loop].function
    inside = [s for s in script.calls.by_function.get(function, ()) if loop in s.loops]
    return any(_call_trains(script, s, 0) for s in inside)


def _call_trains(script: Script, site: CallSite, depth: int) -> bool:
    if last_name(site.node.func) in _TRAINING_CALLS and isinstance(site.node.func, cst.Attribute):
        return True
    if depth >= _MAX_DEPTH:
        return False
    callee = script.local_callee(site.node, site.scope)
    if callee is None:
        return False
    func = callee[0]
    return any(_call_trains(script, s, depth + 1) for s in script.calls.by_function.get(func, ()))


def _counts(expr: cst.BaseExpression, scope: Scope) -> bool:
    """`range(...)`, `itertools.count()`, `tqdm(range(...))`, `trange(...)`: an epoch counter."""
    if not isinstance(expr, cst.Call):
        return False
    if resolves_to(expr.func, scope, {"builtins.range", "itertools.count"}):
        return True
    name = last_name(expr.func)
    if name == "trange":
        return True
    if name in ("tqdm", "enumerate", "track") and expr.args and expr.args[0].keyword is None:
        return _counts(expr.args[0].value, scope)
    return False


def _mentions_epoch(expr: cst.CSTNode) -> bool:
    """`epoch`, `ep`, `e`, `epoch_idx`, `args.epochs` appear in the expression."""
    stack = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name) and _EPOCH_NAME.match(node.value):
            return True
        if isinstance(node, cst.Attribute):
            if _EPOCH_NAME.match(node.attr.value):
                return True
            stack.append(node.value)
        elif isinstance(node, cst.Call):
            stack.extend(arg.value for arg in node.args)  # not the callee: `range`, `tqdm`
        else:
            stack.extend(node.children)
    return False
