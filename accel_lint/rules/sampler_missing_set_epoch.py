"""ACL404 sampler-missing-set-epoch: a shuffling `DistributedSampler` whose loader is
iterated every epoch, with no `set_epoch()` on it: every epoch sees epoch 0's order.
Page: rules/ACL404.md"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from accel_lint.facts import DATALOADER, CallSite
from accel_lint.names import LOCAL, Scope, qualified_names, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule
from accel_lint.rules._distributed import (
    DISTRIBUTED_SAMPLER,
    CallIndex,
    argument_for,
    last_name,
)

# DistributedSampler(dataset, num_replicas, rank, shuffle, seed, drop_last)
_SHUFFLE_POSITION = 3
# DataLoader(dataset, batch_size, shuffle, sampler, ...)
_SAMPLER_POSITION = 3
_BATCH_SAMPLER = frozenset(
    {"torch.utils.data.BatchSampler", "torch.utils.data.sampler.BatchSampler"}
)
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

SAMPLER = "sampler"
LOADER = "loader"
WRAPPED = "wrapped"  # enumerate(loader), tqdm(loader): iterating it iterates the loader
BATCH = "batch"  # BatchSampler(sampler, ...): a loader given it as batch_sampler= reads the sampler
# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, ...)
_BATCH_SAMPLER_POSITION = 4


@dataclass(frozen=True)
class _Assigned:
    node: cst.Assign | cst.AnnAssign
    scope: Scope
    class_def: cst.ClassDef | None


@dataclass(frozen=True)
class _Passed:
    call: cst.Call
    index: int | None  # positional index; None for keywords and after a `*args`
    keyword: str | None
    scope: Scope


@dataclass(frozen=True)
class _Returned:
    function: cst.FunctionDef


@dataclass(frozen=True)
class _Branch:
    ifexp: cst.IfExp


@dataclass(frozen=True)
class _Iterated:
    loop: cst.For


@dataclass(frozen=True)
class _Receiver:
    attribute: cst.Attribute


_Context = Union[_Assigned, _Passed, _Returned, _Branch, _Iterated, _Receiver]


Loop = Union[cst.For, cst.While]


@dataclass(frozen=True)
class _Loop:
    node: Loop
    scope: Scope
    function: cst.FunctionDef | None
    enclosing: tuple[Loop, ...]  # loops around it inside its own function, outermost first
    order: int


@dataclass(frozen=True)
class _Iteration:
    """Where a loader is read: a `for` over it, or a call handed it that the rule cannot
    follow (`train_one_epoch(model, loader)` imported from another module)."""

    place: cst.For | cst.Call
    enclosing: tuple[Loop, ...]
    function: cst.FunctionDef | None
    through_self: bool  # the loader was reached as `self.<attribute>`


@dataclass(frozen=True)
class _Handle:
    """A variable (`owner` is its scope) or a `self.<name>` attribute (`owner` is the class)."""

    owner: Scope | cst.ClassDef
    name: str

    def source(self) -> str:
        return f"self.{self.name}" if isinstance(self.owner, cst.ClassDef) else self.name


@dataclass
class _Flow:
    """Where one sampler goes: the expressions that hold it or its loaders."""

    sampler: cst.Call
    values: dict[str, set[int]] = field(
        default_factory=lambda: {SAMPLER: set(), LOADER: set(), BATCH: set()}
    )
    handles: dict[str, set[_Handle]] = field(
        default_factory=lambda: {SAMPLER: set(), LOADER: set(), BATCH: set()}
    )
    # DataLoader calls given the sampler, the argument that carried it, and its scope
    loaders: list[tuple[cst.Call, cst.BaseExpression, Scope]] = field(default_factory=list)
    iterations: list[_Iteration] = field(default_factory=list)
    handed_over: bool = False  # given to code the rule cannot read, which may set its epoch
    # given to a class the rule cannot read: harmless if its result is then used as a
    # DataLoader's batch_sampler= (a batch sampler, which cannot know the epoch)
    maybe_handed_over: bool = False
    batched_loader: bool = False


class SamplerMissingSetEpoch(Rule):
    code = "ACL404"
    name = "sampler-missing-set-epoch"
    summary = (
        "DistributedSampler iterated every epoch without set_epoch(): the same order each epoch"
    )
    fix_safety = FixSafety.UNSAFE
    equivalence = Equivalence.INTENDED_CHANGE
    triggers = (b"DistributedSampler",)

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._contexts: dict[int, _Context] = {}
        self._names: dict[str, list[tuple[cst.Name, Scope]]] = {}
        self._self_attrs: dict[str, list[tuple[cst.Attribute, cst.ClassDef | None]]] = {}
        self._attr_values: dict[tuple[cst.ClassDef, str], list[cst.BaseExpression]] = {}
        self._loops: dict[Loop, _Loop] = {}
        self._order: dict[cst.CSTNode, int] = {}

    # -- walk: record where each expression's value goes -------------------------

    def _tick(self, node: cst.CSTNode) -> int:
        self._order[node] = len(self._order)
        return self._order[node]

    def visit_Assign(self, node: cst.Assign) -> None:
        self._tick(node)
        self._contexts[id(node.value)] = _Assigned(node, self.facts.scope, self.facts.class_def)
        for target in node.targets:
            self._note_attribute_store(target.target, node.value)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._tick(node)
        if node.value is not None:
            self._contexts[id(node.value)] = _Assigned(node, self.facts.scope, self.facts.class_def)
            self._note_attribute_store(node.target, node.value)

    def _note_attribute_store(self, target: cst.BaseExpression, value: cst.BaseExpression) -> None:
        cls = self.facts.class_def
        if cls is not None and _is_self_attribute(target):
            assert isinstance(target, cst.Attribute)
            self._attr_values.setdefault((cls, target.attr.value), []).append(value)

    def visit_Call(self, node: cst.Call) -> None:
        index: int | None = 0
        for arg in node.args:
            if arg.star == "*":
                index = None
            keyword = arg.keyword.value if arg.keyword is not None else None
            position = index if keyword is None and not arg.star else None
            self._contexts[id(arg.value)] = _Passed(node, position, keyword, self.facts.scope)
            if keyword is None and index is not None and not arg.star:
                index += 1

    def visit_Return(self, node: cst.Return) -> None:
        function = self.facts.function
        if node.value is not None and function is not None:
            self._contexts[id(node.value)] = _Returned(function)

    def visit_IfExp(self, node: cst.IfExp) -> None:
        self._contexts[id(node.body)] = _Branch(node)
        self._contexts[id(node.orelse)] = _Branch(node)

    def visit_For(self, node: cst.For) -> None:
        self._note_loop(node)
        self._contexts[id(node.iter)] = _Iterated(node)

    def visit_While(self, node: cst.While) -> None:
        self._note_loop(node)

    def _note_loop(self, node: Loop) -> None:
        # `facts.loops` holds the loops of the current function only, this one last
        enclosing = tuple(self.facts.loops[:-1])
        self._loops[node] = _Loop(
            node, self.facts.scope, self.facts.function, enclosing, self._tick(node)
        )

    def visit_Attribute(self, node: cst.Attribute) -> None:
        if node.attr.value == "sampler":  # the one attribute that leads somewhere
            self._contexts[id(node.value)] = _Receiver(node)
        if _is_self_attribute(node):
            self._self_attrs.setdefault(node.attr.value, []).append((node, self.facts.class_def))

    def visit_Name(self, node: cst.Name) -> None:
        self._names.setdefault(node.value, []).append((node, self.facts.scope))

    # -- finish ------------------------------------------------------------------

    def finish(self) -> None:
        self._calls = CallIndex(self.facts)
        self._sites = {site.node: site for site in self.facts.calls}
        flows = [
            self._follow(site.node)
            for site in self.facts.calls
            if resolves_to(site.node.func, site.scope, DISTRIBUTED_SAMPLER)
            and self._shuffles(site.node, site.scope)
        ]
        if not flows:
            return
        unset = {id(flow.sampler) for flow in flows}
        for site in self.facts.method_calls("set_epoch"):
            assert isinstance(site.node.func, cst.Attribute)
            receiver = id(site.node.func.value)
            owners = [flow for flow in flows if receiver in flow.values[SAMPLER]]
            if not owners:
                return  # set_epoch on something we cannot follow: it may be this sampler
            unset -= {id(flow.sampler) for flow in owners}
        for flow in flows:
            if id(flow.sampler) in unset:
                self._check(flow)

    def _shuffles(self, call: cst.Call, scope: Scope) -> bool:
        """True when the sampler certainly shuffles (`shuffle` absent or literally True)."""
        position = 0
        for arg in call.args:
            if arg.star:
                if arg.star == "**" and isinstance(arg.value, cst.Name):
                    kwargs = self.facts.kwargs_dict(arg.value, scope)
                    if kwargs is not None and kwargs.resolvable:
                        value = kwargs.values.get("shuffle")
                        if value is None:
                            continue
                        return _is_true(self.facts.literal_value(value, scope))
                return False
            if arg.keyword is None:
                if position == _SHUFFLE_POSITION:
                    return _is_true(self.facts.literal_value(arg.value, scope))
                position += 1
            elif arg.keyword.value == "shuffle":
                return _is_true(self.facts.literal_value(arg.value, scope))
        return True

    def _follow(self, sampler: cst.Call) -> _Flow:
        flow = _Flow(sampler)
        work: list[tuple[cst.BaseExpression, str]] = [(sampler, SAMPLER)]
        seen: set[tuple[int, str]] = set()
        while work:
            expr, kind = work.pop()
            if (id(expr), kind) in seen:
                continue
            seen.add((id(expr), kind))
            if kind in flow.values:
                flow.values[kind].add(id(expr))
            for value, next_kind in self._next(expr, kind, flow):
                work.append((value, next_kind))
        return flow

    def _next(
        self, expr: cst.BaseExpression, kind: str, flow: _Flow
    ) -> Iterator[tuple[cst.BaseExpression, str]]:
        """Where the value of `expr` goes next, one step."""
        context = self._contexts.get(id(expr))
        if isinstance(context, _Assigned) and kind != WRAPPED:
            targets = (
                [t.target for t in context.node.targets]
                if isinstance(context.node, cst.Assign)
                else [context.node.target]
            )
            for target in targets:
                handle = self._handle(target, context.scope, context.class_def)
                if handle is not None:
                    flow.handles[kind].add(handle)
                    yield from ((use, kind) for use in self._uses(handle))
        elif isinstance(context, _Passed):
            yield from self._passed(context, expr, kind, flow)
        elif isinstance(context, _Returned) and kind != WRAPPED:
            yield from ((site.node, kind) for site in self._call_sites(context.function))
        elif isinstance(context, _Branch):
            yield context.ifexp, kind
        elif isinstance(context, _Iterated) and kind in (LOADER, WRAPPED):
            info = self._loops[context.loop]
            flow.iterations.append(
                _Iteration(context.loop, info.enclosing, info.function, _through_self(expr))
            )
        elif (
            isinstance(context, _Receiver)
            and kind == LOADER
            and context.attribute.attr.value == "sampler"
        ):
            yield context.attribute, SAMPLER

    def _passed(
        self, context: _Passed, expr: cst.BaseExpression, kind: str, flow: _Flow
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
        if kind == SAMPLER and resolves_to(call.func, context.scope, _BATCH_SAMPLER):
            yield call, BATCH
            return
        callee = self._local_callee(call, context.scope)
        if callee is not None:
            func, offset = callee
            if kind == WRAPPED:
                return
            param = _parameter(func, context.index, context.keyword, offset)
            scope = self.facts.scope_of.get(func)
            if param is not None and scope is not None:
                handle = _Handle(scope, param.name.value)
                flow.handles[kind].add(handle)
                yield from ((use, kind) for use in self._uses(handle))
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
            site = self._sites.get(call)
            if site is not None:
                flow.iterations.append(
                    _Iteration(call, site.loops, site.function, _through_self(expr))
                )
            if context.index is not None:
                yield call, WRAPPED

    def _handle(
        self, target: cst.BaseExpression, scope: Scope, class_def: cst.ClassDef | None
    ) -> _Handle | None:
        if isinstance(target, cst.Name):
            bindings = scope.lookup(target.value)
            owner = bindings[0].scope if bindings else None
            return _Handle(owner, target.value) if owner is not None else None
        if _is_self_attribute(target) and class_def is not None:
            assert isinstance(target, cst.Attribute)
            return _Handle(class_def, target.attr.value)
        return None

    def _uses(self, handle: _Handle) -> Iterator[cst.BaseExpression]:
        if isinstance(handle.owner, cst.ClassDef):
            for node, cls in self._self_attrs.get(handle.name, ()):
                if cls is handle.owner:
                    yield node
            return
        for name, scope in self._names.get(handle.name, ()):
            bindings = scope.lookup(handle.name)
            if bindings and bindings[0].scope is handle.owner:
                yield name

    def _local_callee(self, call: cst.Call, scope: Scope) -> tuple[cst.FunctionDef, int] | None:
        """The def this call runs, and how many implicit leading arguments (self) it gets."""
        func = call.func
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if not bindings or len(bindings) != 1:
                return None
            node = bindings[0].node
            if isinstance(node, cst.FunctionDef):
                return node, 0
            if isinstance(node, cst.ClassDef):
                init = self._methods(node, "__init__")
                return (init[0], 1) if len(init) == 1 else None
            return None
        if isinstance(func, cst.Attribute):
            names = qualified_names(func.value, scope)
            if names and LOCAL not in names:
                return None  # a module's function (`torch.save`), not one of ours
            methods = self._methods(None, func.attr.value)
            return (methods[0], 1) if len(methods) == 1 else None
        return None

    def _methods(self, cls: cst.ClassDef | None, name: str) -> list[cst.FunctionDef]:
        methods = self._calls.methods(name)
        return [f for f in methods if cls is None or self._calls.class_of(f) is cls]

    def _call_sites(self, func: cst.FunctionDef) -> list[CallSite]:
        return self._calls.calls_to(func)

    # -- epoch loops ----------------------------------------------------------------

    def _check(self, flow: _Flow) -> None:
        if flow.handed_over or (flow.maybe_handed_over and not flow.batched_loader):
            return
        epochs: list[Loop] = []
        read: list[_Iteration] = []  # the reads that repeat every epoch
        for iteration in flow.iterations:
            found = self._epoch_loops(iteration, flow)
            if found:
                read.append(iteration)
            for epoch in found:
                if epoch not in epochs:
                    epochs.append(epoch)
        if not epochs:
            return
        epochs.sort(key=lambda loop: self._loops[loop].order)  # source order
        message = (
            "DistributedSampler shuffles with the same permutation every epoch: `set_epoch()` "
            "is never called on it, so each epoch repeats epoch 0's order"
        )
        if self._evaluation_only(flow, read):
            # the order does not change an evaluation's result; a fixed one may be wanted
            reason = (
                "it only feeds evaluation, whose result does not depend on the order: pass "
                "`shuffle=False`, or call `set_epoch()` each epoch if a new order is wanted"
            )
            self.report(flow.sampler, f"{message} (no fix: {reason})")
            return
        fix, reason = self._fix(flow, epochs)
        if fix is None:
            self.report(flow.sampler, f"{message} (no fix: {reason})")
        else:
            self.report(flow.sampler, message, fix)

    def _evaluation_only(self, flow: _Flow, read: list[_Iteration]) -> bool:
        """The sampler and its loaders are named for evaluation (`sampler_val`,
        `test_loader`) and no epoch reads them to train: no loop over them trains, and
        no code they are handed to is named for training."""
        names = [h.name for kind in (SAMPLER, LOADER) for h in flow.handles[kind]]
        if not any(_EVALUATION_NAME.search(name) for name in names):
            return False
        for iteration in read:
            if isinstance(iteration.place, cst.For):
                if self._trains(iteration.place):
                    return False
            else:
                callee = last_name(iteration.place.func) or ""
                if not _EVALUATION_NAME.search(callee) and callee not in _WRAPPERS:
                    return False
        return True

    def _epoch_loops(self, iteration: _Iteration, flow: _Flow) -> list[Loop]:
        enclosing = iteration.enclosing
        if isinstance(iteration.place, cst.For) and iteration.place in enclosing:
            enclosing = enclosing[: enclosing.index(iteration.place)]
        epoch = self._innermost_epoch_loop(enclosing)
        if epoch is not None:
            return [epoch]
        if iteration.function is None:
            return []
        return self._loops_calling(iteration.function, iteration.through_self, flow, 0)

    def _loops_calling(
        self, func: cst.FunctionDef, through_self: bool, flow: _Flow, depth: int
    ) -> list[Loop]:
        """Epoch loops that call `func` (handing it the loader, or as a method via self)."""
        if depth > _MAX_DEPTH:
            return []
        found: list[Loop] = []
        for site in self._call_sites(func):
            passes = any(id(arg.value) in flow.values[LOADER] for arg in site.node.args)
            via_self = isinstance(site.node.func, cst.Attribute) and _is_self_attribute(
                site.node.func
            )
            if not (passes or (through_self and via_self)):
                continue
            epoch = self._innermost_epoch_loop(site.loops)
            if epoch is not None:
                found.append(epoch)
            elif site.function is not None:
                found.extend(self._loops_calling(site.function, through_self, flow, depth + 1))
        return found

    def _innermost_epoch_loop(self, loops: tuple[Loop, ...]) -> Loop | None:
        return next((loop for loop in reversed(loops) if self._is_epoch_loop(loop)), None)

    def _is_epoch_loop(self, loop: Loop) -> bool:
        """A loop that runs once per epoch: a `for` over a counter (`range`, `trange`,
        `tqdm(range(...))`) or a `while`, either named for epochs (`for epoch in ...`,
        `range(args.epochs)`, `while epoch < n`) or training in its body. A counter
        that neither says nor shows it (`for i in range(3)` around an evaluation) is not."""
        if isinstance(loop, cst.For) and not _counts(loop.iter, self._loops[loop].scope):
            return False
        return self._names_epochs(loop) or self._trains(loop)

    def _names_epochs(self, loop: Loop) -> bool:
        if isinstance(loop, cst.While):
            return _mentions_epoch(loop.test)
        return _mentions_epoch(loop.target) or _mentions_epoch(loop.iter)

    def _trains(self, loop: Loop) -> bool:
        """The loop's body runs a backward pass or an optimizer step, here or in a callee."""
        function = self._loops[loop].function
        inside = [s for s in self._calls.by_function.get(function, ()) if loop in s.loops]
        return any(self._call_trains(s, 0) for s in inside)

    def _call_trains(self, site: CallSite, depth: int) -> bool:
        if last_name(site.node.func) in _TRAINING_CALLS and isinstance(
            site.node.func, cst.Attribute
        ):
            return True
        if depth >= _MAX_DEPTH:
            return False
        callee = self._local_callee(site.node, site.scope)
        if callee is None:
            return False
        func = callee[0]
        return any(self._call_trains(s, depth + 1) for s in self._calls.by_function.get(func, ()))

    # -- fix -------------------------------------------------------------------------

    def _fix(self, flow: _Flow, epochs: list[Loop]) -> tuple[Fix | None, str]:
        replacements: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]] = {}
        shown: list[str] = []
        for epoch in epochs:
            if isinstance(epoch, cst.While):
                return (
                    None,
                    "the loader is read again on each pass of a `while` loop, which "
                    "has no loop variable to pass to `set_epoch()`",
                )
            if not isinstance(epoch.target, cst.Name) or epoch.target.value == "_":
                return None, "the epoch loop has no loop variable to pass to `set_epoch()`"
            if not self._names_epochs(epoch):
                return None, (
                    f"`{epoch.target.value}` may count steps rather than epochs; call "
                    "`set_epoch()` wherever a new pass over the loader starts"
                )
            if self._created_in(flow.sampler, epoch):
                return (
                    None,
                    "the sampler is created inside the epoch loop; call `set_epoch()` there",
                )
            spelled = self._sampler_at(flow, self._loops[epoch])
            if spelled is None:
                shared = self._shared_variable(flow, self._loops[epoch])
                if shared is not None:
                    return None, (
                        f"`{shared}` holds another sampler on some runs; call "
                        f"`{shared}.set_epoch({epoch.target.value})` where it is distributed"
                    )
                return None, "the sampler cannot be named from the epoch loop"
            receiver, maybe_none = spelled
            call = f"{receiver}.set_epoch({epoch.target.value})"
            statement = _set_epoch_statement(call, receiver if maybe_none else None)
            key, value = _prepend(epoch.body, statement)
            replacements[key] = value
            described = f"{call}` (when `{receiver}` is not None)" if maybe_none else f"{call}`"
            if described not in shown:
                shown.append(described)
        fix = Fix(
            f"Call `{', `'.join(shown)} at the start of each epoch",
            replacements,
            (),
            self.fix_safety,
        )
        return fix, ""

    def _created_in(self, sampler: cst.Call, loop: Loop) -> bool:
        return any(site.node is sampler and loop in site.loops for site in self.facts.calls)

    def _sampler_at(self, flow: _Flow, loop: _Loop) -> tuple[str, bool] | None:
        """How the epoch loop can spell the sampler, and whether it may be None there."""
        guarded: str | None = None
        for handle in sorted(flow.handles[SAMPLER], key=lambda h: h.name):
            values = self._bound_values(handle, loop)
            if not values:
                continue
            if all(_surely(v, flow.values[SAMPLER]) for v in values):
                return handle.source(), False
            if guarded is None and all(_or_none(v, flow.values[SAMPLER]) for v in values):
                guarded = handle.source()
        # `loader.sampler` is this sampler only if every loader got it unconditionally
        if flow.loaders and all(
            self._certain(expr, scope, flow) for _, expr, scope in flow.loaders
        ):
            for handle in sorted(flow.handles[LOADER], key=lambda h: h.name):
                values = self._bound_values(handle, loop)
                if values and all(_surely(v, flow.values[LOADER]) for v in values):
                    return f"{handle.source()}.sampler", False
        return (guarded, True) if guarded is not None else None

    def _shared_variable(self, flow: _Flow, loop: _Loop) -> str | None:
        """A sampler variable the loop can read that holds this sampler on some runs and
        another one (`RandomSampler(...)`) on others."""
        for handle in sorted(flow.handles[SAMPLER], key=lambda h: h.name):
            values = self._bound_values(handle, loop)
            if values and any(id(v) in flow.values[SAMPLER] for v in values):
                return handle.source()
        return None

    def _certain(self, expr: cst.BaseExpression, scope: Scope, flow: _Flow) -> bool:
        """The `sampler=` argument is this sampler on every path (not `s if d else None`)."""
        if expr is flow.sampler:
            return True
        handle = self._handle(expr, scope, None)
        if handle is None or handle not in flow.handles[SAMPLER]:
            return False
        values = self._values_of(handle)
        return bool(values) and all(_surely(v, flow.values[SAMPLER]) for v in values)

    def _bound_values(self, handle: _Handle, loop: _Loop) -> list[cst.BaseExpression] | None:
        """The values `handle` is given, when the loop can read it and it is set before the
        loop starts; None otherwise."""
        if isinstance(handle.owner, cst.ClassDef):
            if self._class_of(loop.function) is not handle.owner:
                return None
            return self._attr_values.get((handle.owner, handle.name), [])
        bindings = loop.scope.lookup(handle.name)
        if not bindings or bindings[0].scope is not handle.owner:
            return None
        values: list[cst.BaseExpression] = []
        same_scope = handle.owner is loop.scope.function_scope()
        for binding in bindings:
            if isinstance(binding.node, cst.Param) and loop.function is not None:
                passed = self._arguments_for(binding.node, loop.function)
                if passed is None:
                    return None
                values.extend(passed)
                continue
            if binding.value is None or binding.node is None:
                return None
            if same_scope and self._order.get(binding.node, -1) > loop.order:
                return None  # set inside the loop: the first epoch would not see it
            values.append(binding.value)
        return values

    def _arguments_for(
        self, param: cst.Param, func: cst.FunctionDef
    ) -> list[cst.BaseExpression] | None:
        """What every call of `func` in this file passes for `param`; None if one does not."""
        invocations = self._calls.invocations(func)
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

    def _values_of(self, handle: _Handle) -> list[cst.BaseExpression]:
        if isinstance(handle.owner, cst.ClassDef):
            return self._attr_values.get((handle.owner, handle.name), [])
        bindings = handle.owner.bindings.get(handle.name, [])
        return [b.value for b in bindings if b.value is not None]

    def _class_of(self, func: cst.FunctionDef | None) -> cst.ClassDef | None:
        return self._calls.class_of(func)


def _is_self_attribute(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    )


def _through_self(expr: cst.BaseExpression) -> bool:
    """`self.train_data`, `enumerate(self.train_data)`."""
    while isinstance(expr, cst.Call) and expr.args:
        expr = expr.args[0].value
    return _is_self_attribute(expr)


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"


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


def _set_epoch_statement(call: str, none_check: str | None) -> cst.BaseStatement:
    line = cst.SimpleStatementLine(body=[cst.Expr(cst.parse_expression(call))])
    if none_check is None:
        return line
    return cst.If(
        test=cst.parse_expression(f"{none_check} is not None"),
        body=cst.IndentedBlock(body=[line]),
    )


def _is_set_epoch_line(statement: cst.BaseStatement) -> bool:
    if isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        inner = statement.body.body
        return len(inner) == 1 and statement.orelse is None and _is_set_epoch_line(inner[0])
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Call)
        and last_name(statement.body[0].value.func) == "set_epoch"
    )


def _prepend(
    body: cst.BaseSuite, statement: cst.BaseStatement
) -> tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]]:
    """The replacement that makes `statement` the first of the loop body."""
    if isinstance(body, cst.IndentedBlock):
        # after the set_epoch calls already inserted there, so they keep source order
        leading = 0
        while leading < len(body.body) - 1 and _is_set_epoch_line(body.body[leading]):
            leading += 1
        if leading:
            anchor = body.body[leading - 1]
            return anchor, cst.FlattenSentinel([anchor, statement])
        first = body.body[0]
        return first, cst.FlattenSentinel([statement, first])
    assert isinstance(body, cst.SimpleStatementSuite)
    # `for epoch in range(n): train(loader)` becomes a block
    rest = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in body.body]
    lines = [
        cst.SimpleStatementLine(body=[small], trailing_whitespace=body.trailing_whitespace)
        if i == len(rest) - 1
        else cst.SimpleStatementLine(body=[small])
        for i, small in enumerate(rest)
    ]
    return body, cst.IndentedBlock(body=[statement, *lines])
