"""Where one `DistributedSampler(...)` goes: through assignments, `self.<attribute>`s,
calls of the file's own functions, returns and `x if c else y`, into the DataLoaders
given it as `sampler=` (or, through a `BatchSampler`, as `batch_sampler=`), and from
them into the `for` loops and calls that read them. The rule needs every place the
sampler is read, to find the epoch loops around them, and every expression that holds
it, to know whether a `set_epoch()` call is on it; code it cannot read that takes the
sampler may set its epoch itself, so that is recorded too."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope, resolves_to
from accel_lint.rules.sampler_missing_set_epoch.record import (
    Assigned,
    Branch,
    Iterated,
    Loop,
    Passed,
    Receiver,
    Returned,
    is_self_attribute,
)
from accel_lint.rules.sampler_missing_set_epoch.script import Handle, Script
from accel_lint.torch_api import BATCH_SAMPLER, DATALOADER

# DataLoader(dataset, batch_size, shuffle, sampler, ...)
_SAMPLER_POSITION = 3
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_BATCH_SAMPLER_POSITION = 4
# Calls that take a loader without iterating it: `len(loader)`, `print(loader)`.
_NOT_ITERATING = frozenset(
    {
        "len",
        "print",
        "str",
        "repr",
        "isinstance",
        "hasattr",
        "getattr",
        "type",
        "id",
        "vars",
        "range",
    }
)

SAMPLER = "sampler"
LOADER = "loader"
WRAPPED = "wrapped"  # enumerate(loader), tqdm(loader): iterating it iterates the loader
BATCH = "batch"  # BatchSampler(sampler, ...): a loader given it as batch_sampler= reads the sampler


@dataclass(frozen=True)
class Iteration:
    """Where a loader is read: a `for` over it, or a call handed it that the rule cannot
    follow (`train_one_epoch(model, loader)` imported from another module)."""

    place: cst.For | cst.Call
    enclosing: tuple[Loop, ...]
    function: cst.FunctionDef | None
    through_self: bool  # the loader was reached as `self.<attribute>`


@dataclass
class Flow:
    """Where one sampler goes: the expressions that hold it or its loaders."""

    sampler: cst.Call
    values: dict[str, set[int]] = field(
        default_factory=lambda: {SAMPLER: set(), LOADER: set(), BATCH: set()}
    )
    handles: dict[str, set[Handle]] = field(
        default_factory=lambda: {SAMPLER: set(), LOADER: set(), BATCH: set()}
    )
    # DataLoader calls given the sampler, the argument that carried it, and its scope
    loaders: list[tuple[cst.Call, cst.BaseExpression, Scope]] = field(default_factory=list)
    iterations: list[Iteration] = field(default_factory=list)
    # given to a class the rule cannot read: harmless if its result is then used as a
    # DataLoader's batch_sampler= (a batch sampler, which cannot know the epoch)
    maybe_handed_over: bool = False
    batched_loader: bool = False


def follow(script: Script, sampler: cst.Call) -> Flow:
    flow = Flow(sampler)
    work: list[tuple[cst.BaseExpression, str]] = [(sampler, SAMPLER)]
    seen: set[tuple[int, str]] = set()
    while work:
        expr, kind = work.pop()
        if (id(expr), kind) in seen:
            continue
        seen.add((id(expr), kind))
        if kind in flow.values:
            flow.values[kind].add(id(expr))
        for value, next_kind in _next(script, expr, kind, flow):
            work.append((value, next_kind))
    return flow


def _next(
    script: Script, expr: cst.BaseExpression, kind: str, flow: Flow
) -> Iterator[tuple[cst.BaseExpression, str]]:
    """Where the value of `expr` goes next, one step."""
    context = script.record.contexts.get(id(expr))
    if isinstance(context, Assigned) and kind != WRAPPED:
        targets = (
            [t.target for t in context.node.targets]
            if isinstance(context.node, cst.Assign)
            else [context.node.target]
        )
        for target in targets:
            handle = script.handle(target, context.scope, context.class_def)
            if handle is not None:
                flow.handles[kind].add(handle)
                yield from ((use, kind) for use in script.uses(handle))
    elif isinstance(context, Passed):
        yield from _passed(script, context, expr, kind, flow)
    elif isinstance(context, Returned) and kind != WRAPPED:
        yield from ((site.node, kind) for site in script.calls.calls_to(context.function))
    elif isinstance(context, Branch):
        yield context.ifexp, kind
    elif isinstance(context, Iterated) and kind in (LOADER, WRAPPED):
        info = script.record.loops[context.loop]
        flow.iterations.append(
            Iteration(context.loop, info.enclosing, info.function, _through_self(expr))
        )
    elif isinstance(context, Receiver) and kind == LOADER:
        yield context.attribute, SAMPLER


def _passed(
    script: Script, context: Passed, expr: cst.BaseExpression, kind: str, flow: Flow
) -> Iterator[tuple[cst.BaseExpression, str]]:
    call = context.call
    if kind == SAMPLER and resolves_to(call.func, context.scope, DATALOADER):
        if context.keyword == "sampler" or context.index == _SAMPLER_POSITION:
            flow.loaders.append((call, expr, context.scope))
            yield call, LOADER
        return
    if kind == BATCH:
        if resolves_to(call.func, context.scope, DATALOADER) and (
            context.keyword == "batch_sampler" or context.index == _BATCH_SAMPLER_POSITION
        ):
            # `loader.sampler` is not this sampler: no entry in flow.loaders
            flow.batched_loader = True
            yield call, LOADER
        return
    if kind == SAMPLER and resolves_to(call.func, context.scope, BATCH_SAMPLER):
        yield call, BATCH
        return
    callee = script.local_callee(call, context.scope)
    if callee is not None:
        func, offset = callee
        if kind == WRAPPED:
            return
        param = _parameter(func, context.index, context.keyword, offset)
        scope = script.facts.scope_of.get(func)
        if param is not None and scope is not None:
            handle = Handle(scope, param.name.value)
            flow.handles[kind].add(handle)
            yield from ((use, kind) for use in script.uses(handle))
        return
    name = last_name(call.func)
    if kind == SAMPLER and name not in _NOT_ITERATING:
        # `train(..., sampler=sampler)` imported from another module may call
        # `sampler.set_epoch(epoch)` itself (pytorch/examples' FSDP T5 script),
        # unless what it returns turns out to be a DataLoader's batch sampler
        # (torchvision's references: `GroupedBatchSampler(train_sampler, ...)`)
        flow.maybe_handed_over = True
        yield call, BATCH
        return
    if kind in (LOADER, WRAPPED) and name is not None and name not in _NOT_ITERATING:
        # code we cannot read is assumed to read the loader it is handed; and
        # `enumerate(loader)`, `tqdm(loader)` hand it on to whatever iterates them
        site = script.sites.get(call)
        if site is not None:
            flow.iterations.append(Iteration(call, site.loops, site.function, _through_self(expr)))
        if context.index is not None:
            yield call, WRAPPED


def _parameter(
    func: cst.FunctionDef, index: int | None, keyword: str | None, offset: int
) -> cst.Param | None:
    params = func.params
    if keyword is not None:
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == keyword:
                return param
        return None
    positional = [*params.posonly_params, *params.params]
    if index is None or index + offset >= len(positional):
        return None
    return positional[index + offset]


def _through_self(expr: cst.BaseExpression) -> bool:
    """`self.train_data`, `enumerate(self.train_data)`."""
    while isinstance(expr, cst.Call) and expr.args:
        expr = expr.args[0].value
    return is_self_attribute(expr)
