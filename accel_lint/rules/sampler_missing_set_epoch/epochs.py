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
from accel_lint.rules.sampler_missing_set_epoch.flow import LOADER, SAMPLER, Flow, Iteration
from accel_lint.rules.sampler_missing_set_epoch.record import Loop, is_self_attribute
from accel_lint.rules.sampler_missing_set_epoch.script import Script

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
    epochs = Loops.of(script.facts)
    return next((loop for loop in reversed(loops) if epochs.is_epoch_loop(loop)), None)


def _trains(script: Script, loop: Loop) -> bool:
    return Loops.of(script.facts).trains(loop)
