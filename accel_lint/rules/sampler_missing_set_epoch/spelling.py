"""How an epoch loop can name the sampler for its `set_epoch()` call: a variable or
`self.<attribute>` the loop can read, bound before the loop starts, that holds this
sampler on every path (or this sampler or None: the call is then guarded), or else
`<loader>.sampler` when every loader got the sampler unconditionally. A variable that
holds another sampler on some runs (`RandomSampler(...)` when not distributed) cannot
be used, and is named in the report instead."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.syntax import argument_for
from accel_lint.names import Scope
from accel_lint.rules.sampler_missing_set_epoch.flow import LOADER, SAMPLER, Flow
from accel_lint.rules.sampler_missing_set_epoch.record import LoopInfo
from accel_lint.rules.sampler_missing_set_epoch.script import Handle, Script


def sampler_at(script: Script, flow: Flow, loop: LoopInfo) -> tuple[str, bool] | None:
    """How the epoch loop can spell the sampler, and whether it may be None there."""
    guarded: str | None = None
    for handle in sorted(flow.handles[SAMPLER], key=lambda h: h.name):
        values = _bound_values(script, handle, loop)
        if not values:
            continue
        if all(_surely(v, flow.values[SAMPLER]) for v in values):
            return handle.source(), False
        if guarded is None and all(_or_none(v, flow.values[SAMPLER]) for v in values):
            guarded = handle.source()
    # `loader.sampler` is this sampler only if every loader got it unconditionally
    if flow.loaders and all(_certain(script, expr, scope, flow) for _, expr, scope in flow.loaders):
        for handle in sorted(flow.handles[LOADER], key=lambda h: h.name):
            values = _bound_values(script, handle, loop)
            if values and all(_surely(v, flow.values[LOADER]) for v in values):
                return f"{handle.source()}.sampler", False
    return (guarded, True) if guarded is not None else None


def shared_variable(script: Script, flow: Flow, loop: LoopInfo) -> str | None:
    """A sampler variable the loop can read that holds this sampler on some runs and
    another one (`RandomSampler(...)`) on others."""
    for handle in sorted(flow.handles[SAMPLER], key=lambda h: h.name):
        values = _bound_values(script, handle, loop)
        if values and any(id(v) in flow.values[SAMPLER] for v in values):
            return handle.source()
    return None


def _certain(script: Script, expr: cst.BaseExpression, scope: Scope, flow: Flow) -> bool:
    """The `sampler=` argument is this sampler on every path (not `s if d else None`)."""
    if expr is flow.sampler:
        return True
    handle = script.handle(expr, scope, None)
    if handle is None or handle not in flow.handles[SAMPLER]:
        return False
    values = script.values_of(handle)
    return bool(values) and all(_surely(v, flow.values[SAMPLER]) for v in values)


def _bound_values(
    script: Script, handle: Handle, loop: LoopInfo
) -> list[cst.BaseExpression] | None:
    """The values `handle` is given, when the loop can read it and it is set before the
    loop starts; None otherwise."""
    if isinstance(handle.owner, cst.ClassDef):
        if script.calls.class_of(loop.function) is not handle.owner:
            return None
        return script.record.attr_values.get((handle.owner, handle.name), [])
    bindings = loop.scope.lookup(handle.name)
    if not bindings or bindings[0].scope is not handle.owner:
        return None
    values: list[cst.BaseExpression] = []
    same_scope = handle.owner is loop.scope.function_scope()
    for binding in bindings:
        if isinstance(binding.node, cst.Param) and loop.function is not None:
            passed = _arguments_for(script, binding.node, loop.function)
            if passed is None:
                return None
            values.extend(passed)
            continue
        if binding.value is None or binding.node is None:
            return None
        if same_scope and script.record.order.get(binding.node, -1) > loop.order:
            return None  # set inside the loop: the first epoch would not see it
        values.append(binding.value)
    return values


def _arguments_for(
    script: Script, param: cst.Param, func: cst.FunctionDef
) -> list[cst.BaseExpression] | None:
    """What every call of `func` in this file passes for `param`; None if one does not."""
    invocations = script.calls.invocations(func)
    if not invocations:
        return None
    positional = [*func.params.posonly_params, *func.params.params]
    index = next((i for i, p in enumerate(positional) if p is param), None)
    out: list[cst.BaseExpression] = []
    for site, offset in invocations:
        value = argument_for(site.node, param.name.value, index, offset)
        if value is None:
            return None
        out.append(value)
    return out


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _surely(value: cst.BaseExpression, values: set[int]) -> bool:
    """`value` is the followed object on every path (`s if distributed else None` is not)."""
    return id(value) in values and not isinstance(value, cst.IfExp)


def _or_none(value: cst.BaseExpression, values: set[int]) -> bool:
    """`value` is the followed object or None."""
    if _is_none(value) or _surely(value, values):
        return True
    return isinstance(value, cst.IfExp) and all(
        _or_none(branch, values) for branch in (value.body, value.orelse)
    )
