"""ACL103 blocking-host-to-device-copy: in a loop over a DataLoader that pins memory,
`.cuda()` / `.to(<accelerator>)` of the batch without `non_blocking=True`.
Page: rules/ACL103.md

The batch tensors are the loop's targets (`for x, y in loader`, `for i, batch in
enumerate(tqdm(loader))`) and what is unpacked or indexed from them in the loop
body, statement by statement: a name rebound to anything else (`x = x.float()`, a
pageable copy) stops being a batch tensor. A batch handed to a function of the file
is followed into it when every call of that function hands it a batch.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.edits import add_keyword
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.devices import DeviceKind, Devices
from accel_lint.facts.literals import string_value
from accel_lint.facts.loader_args import passed
from accel_lint.facts.loader_flow import LoaderFlow
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import ACCELERATOR_TYPES, DEFAULT_COLLATE, DEVICE_TESTS, VARIABLE
from accel_lint.walk import all_children

_MAX_DEPTH = 2
_ITEM_VIEWS = frozenset({"items", "values"})


@dataclass
class _Loaders:
    """What the loaders behind a loop do: all pin memory; all collate with torch's
    default (so a batch's parts are tensors, whose `.to()` takes `non_blocking`)."""

    default_collate: bool


@dataclass
class _Found:
    call: cst.Call
    scope: Scope
    default_collate: bool


@dataclass
class _Handoff:
    """Batches handed to a function of the file, by call site and parameter."""

    sites: dict[int, set[str]] = field(default_factory=dict)  # id(call) -> params
    default_collate: bool = True


class BlockingHostToDeviceCopy(Rule):
    code = "ACL103"
    name = "blocking-host-to-device-copy"
    summary = "Batch from a pinned-memory DataLoader copied to the GPU without non_blocking=True"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.EXACT,
        needs_accelerator="an asynchronous copy overlaps only with work on an accelerator",
    )

    def finish(self) -> None:
        flow = LoaderFlow.of(self.facts)
        pinning = {
            site.node: self._collates_by_default(site.node, site.scope)
            for site in flow.loaders
            if self._pins(site.node, site.scope)
        }
        if not pinning:
            return
        self._devices = Devices.of(self.facts)
        self._calls = CallGraph.of(self.facts)
        self._found: dict[cst.Call, _Found] = {}
        self._handoffs: dict[cst.FunctionDef, _Handoff] = {}
        for site in self.facts.loop_sites.values():
            loop = site.node
            if not isinstance(loop, cst.For):
                continue
            seeds: set[str] = set()
            default = True
            for target, source in flow.batch_targets(loop, site.scope):
                origins = flow.origins(source, site.scope)
                if not origins.complete or not origins.loaders:
                    continue
                if not all(call in pinning for call in origins.loaders):
                    continue
                default = default and all(pinning[call] for call in origins.loaders)
                seeds |= set(_target_names(target))
            if seeds:
                _Walk(self, site.scope, default).block(loop.body, seeds)
        self._follow_handoffs()
        for found in self._found.values():
            self._report(found)

    # -- the loaders ------------------------------------------------------------------

    def _pins(self, call: cst.Call, scope: Scope) -> bool:
        """`pin_memory=True` (also on the paths a `**kwargs` dict gets it), an argparse
        option whose default is True, or a device test (`torch.cuda.is_available()`)."""
        got = passed(call, "pin_memory", self.facts, scope)
        if got.absent or not got.known or got.value is None:
            return False
        value = got.value
        option = self.facts.argparse_option_for(value)
        if option is not None:
            default = option.default
            return default is not None and _is_true(self.facts.literal_value(default, scope))
        if _is_true(self.facts.literal_value(value, scope)):
            return True
        return self._device_test(value, scope, 0)

    def _device_test(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        if depth > 3:
            return False
        if isinstance(expr, cst.Call):
            return resolves_to(expr.func, scope, DEVICE_TESTS)
        if isinstance(expr, cst.BooleanOperation):
            return self._device_test(expr.left, scope, depth + 1) or self._device_test(
                expr.right, scope, depth + 1
            )
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            op = expr.comparisons[0].operator
            for side in (expr.left, expr.comparisons[0].comparator):
                text = string_value(side)
                if text is None:
                    continue
                if isinstance(op, (cst.Equal, cst.In)) and text.split(":")[0] in ACCELERATOR_TYPES:
                    return True
                if isinstance(op, cst.NotEqual) and text == "cpu":
                    return True
            return False
        values: list[tuple[cst.BaseExpression, Scope]] = []
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if not bindings:
                return False
            for b in bindings:
                if b.kind is BindingKind.IMPORT or b.value is None:
                    return False
                values.append((b.value, b.scope or scope))
        elif isinstance(expr, cst.Attribute) and isinstance(expr.value, cst.Name):
            values = [
                (a.value, a.scope)
                for a in self.facts.attribute_assignments.get(expr.attr.value, ())
                if a.receiver == expr.value.value
            ]
        return bool(values) and all(self._device_test(v, s, depth + 1) for v, s in values)

    def _collates_by_default(self, call: cst.Call, scope: Scope) -> bool:
        got = passed(call, "collate_fn", self.facts, scope)
        if got.absent:
            return True
        if not got.known or got.value is None:
            return False
        return resolves_to(got.value, scope, DEFAULT_COLLATE)

    # -- following batches into the file's functions ----------------------------------

    def hand_off(self, call: cst.Call, scope: Scope, batch: set[str], default: bool) -> None:
        """`train_step(model, batch)`: remember which parameters get a batch."""
        callee = self._calls.local_callee(call, scope)
        if callee is None:
            return
        func, offset = callee
        params = [*func.params.posonly_params, *func.params.params]
        got: set[str] = set()
        position = offset
        for arg in call.args:
            if arg.star:
                return
            if arg.keyword is not None:
                if _derived(arg.value, batch, scope):
                    got.add(arg.keyword.value)
                continue
            if _derived(arg.value, batch, scope) and position < len(params):
                got.add(params[position].name.value)
            position += 1
        if got:
            handoff = self._handoffs.setdefault(func, _Handoff())
            handoff.sites.setdefault(id(call), set()).update(got)
            handoff.default_collate = handoff.default_collate and default

    def _follow_handoffs(self) -> None:
        done: set[cst.FunctionDef] = set()
        for _ in range(_MAX_DEPTH):
            pending = [(f, h) for f, h in self._handoffs.items() if f not in done]
            if not pending:
                return
            for func, handoff in pending:
                done.add(func)
                invocations = self._calls.invocations(func)
                if not invocations or any(
                    id(site.node) not in handoff.sites for site, _ in invocations
                ):
                    continue  # some call hands it something else
                common = set.intersection(*(handoff.sites[id(s.node)] for s, _ in invocations))
                scope = self.facts.scope_of.get(func)
                if common and scope is not None and isinstance(func.body, cst.IndentedBlock):
                    _Walk(self, scope, handoff.default_collate).block(func.body, common)

    # -- report -----------------------------------------------------------------------

    def candidate(self, call: cst.Call, scope: Scope, default_collate: bool) -> None:
        if call not in self._found:
            self._found[call] = _Found(call, scope, default_collate)

    def _report(self, found: _Found) -> None:
        call = found.call
        func = call.func
        assert isinstance(func, cst.Attribute)
        method = func.attr.value
        message = (
            f"`.{method}()` of a batch from a DataLoader that pins memory waits for the copy: "
            "with `non_blocking=True` it overlaps with the GPU's work"
        )
        if not found.default_collate:
            reason = (
                "the loader's `collate_fn` may build objects whose `.to()` takes no `non_blocking`"
            )
            self.report(call, message, no_fix_reason=reason)
            return
        existing = _non_blocking(call, method)
        if existing is not None:
            fix = Fix("Set `non_blocking=True`", {existing: cst.Name("True")})
        else:
            fix = Fix("Add `non_blocking=True`", {call: add_keyword(call, "non_blocking", "True")})
        self.report(call, message, fix)

    def moves_to_device(self, call: cst.Call, scope: Scope) -> bool:
        """`.cuda(...)` or `.to(<accelerator>, ...)` without `non_blocking` (or with it
        literally False)."""
        func = call.func
        if not isinstance(func, cst.Attribute) or func.attr.value not in ("cuda", "to"):
            return False
        method = func.attr.value
        slots = (
            ("device", "non_blocking")
            if method == "cuda"
            else (
                "device",
                "dtype",
                "non_blocking",
                "copy",
            )
        )
        found: dict[str, cst.BaseExpression] = {}
        position = 0
        for arg in call.args:
            if arg.star:
                return False
            if arg.keyword is None:
                if position >= len(slots):
                    return False
                found[slots[position]] = arg.value
                position += 1
            else:
                found[arg.keyword.value] = arg.value
        blocking = found.get("non_blocking")
        if blocking is not None and not (
            isinstance(blocking, cst.Name) and blocking.value == "False"
        ):
            return False
        if method == "cuda":
            return True
        device = found.get("device")
        return device is not None and self._devices.kind(device, scope) is DeviceKind.ACCELERATOR


class _Walk:
    """The statements of a loop body (or of a function handed a batch) in order, with
    the names that hold batch tensors at each point."""

    def __init__(self, rule: BlockingHostToDeviceCopy, scope: Scope, default: bool) -> None:
        self.rule = rule
        self.scope = scope
        self.default = default

    def block(self, body: cst.BaseSuite, batch: set[str]) -> set[str]:
        if isinstance(body, cst.SimpleStatementSuite):
            return self.small(body.body, batch)
        for stmt in body.body if isinstance(body, cst.IndentedBlock) else ():
            batch = self.statement(stmt, batch)
        return batch

    def statement(self, stmt: cst.BaseStatement, batch: set[str]) -> set[str]:
        if isinstance(stmt, cst.SimpleStatementLine):
            return self.small(stmt.body, batch)
        if isinstance(stmt, cst.If):
            self.scan(stmt.test, batch)
            batch = self.block(stmt.body, set(batch))
            if stmt.orelse is not None:
                orelse = stmt.orelse
                if isinstance(orelse, cst.If):
                    batch = self.statement(orelse, batch)
                else:
                    batch = self.block(orelse.body, batch)
            return batch
        if isinstance(stmt, cst.For):
            self.scan(stmt.iter, batch)
            names = _target_names(stmt.target)
            if _iterates_batch(stmt.iter, batch, self.scope):
                batch = batch | set(names)
            else:
                batch = batch - set(names)
            batch = self.block(stmt.body, batch)
            return self.block(stmt.orelse.body, batch) if stmt.orelse is not None else batch
        if isinstance(stmt, cst.While):
            self.scan(stmt.test, batch)
            return self.block(stmt.body, batch)
        if isinstance(stmt, cst.With):
            for item in stmt.items:
                self.scan(item.item, batch)
                if item.asname is not None:
                    batch = batch - set(_target_names(item.asname.name))
            return self.block(stmt.body, batch)
        if isinstance(stmt, cst.Try):
            batch = self.block(stmt.body, batch)
            for handler in stmt.handlers:
                batch = self.block(handler.body, batch)
            if stmt.orelse is not None:
                batch = self.block(stmt.orelse.body, batch)
            if stmt.finalbody is not None:
                batch = self.block(stmt.finalbody.body, batch)
            return batch
        return batch  # nested defs and classes run elsewhere

    def small(self, statements: Sequence[cst.BaseSmallStatement], batch: set[str]) -> set[str]:
        for small in statements:
            if isinstance(small, cst.Assign):
                self.scan(small.value, batch)
                for target in small.targets:
                    batch = _bind(target.target, small.value, batch, self.scope)
            elif isinstance(small, cst.AnnAssign):
                if small.value is not None:
                    self.scan(small.value, batch)
                    batch = _bind(small.target, small.value, batch, self.scope)
            elif isinstance(small, cst.AugAssign):
                self.scan(small.value, batch)
                batch = batch - set(_target_names(small.target))
            else:
                for child in all_children(small):
                    if isinstance(child, cst.BaseExpression):
                        self.scan(child, batch)
        return batch

    def scan(self, expr: cst.BaseExpression, batch: set[str]) -> None:
        """Find the moves of batch tensors (and batches handed on) inside `expr`."""
        if not batch:
            return
        for node, names in _expressions(expr, batch, self.scope):
            if not isinstance(node, cst.Call):
                continue
            func = node.func
            if (
                isinstance(func, cst.Attribute)
                and _derived(func.value, names, self.scope)
                and self.rule.moves_to_device(node, self.scope)
            ):
                self.rule.candidate(node, self.scope, self.default)
            self.rule.hand_off(node, self.scope, names, self.default)


def _expressions(
    expr: cst.CSTNode, batch: set[str], scope: Scope
) -> Iterator[tuple[cst.CSTNode, set[str]]]:
    """Every node inside `expr` with the batch names visible there: a comprehension
    over a batch (`{k: v.to(device) for k, v in batch.items()}`) adds its targets."""
    stack: list[tuple[cst.CSTNode, set[str]]] = [(expr, batch)]
    while stack:
        node, names = stack.pop()
        if isinstance(node, cst.Lambda):
            continue
        yield node, names
        if isinstance(node, (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)):
            inner = set(names)
            comp: cst.CompFor | None = node.for_in
            while comp is not None:
                stack.append((comp.iter, set(inner)))
                targets = set(_target_names(comp.target))
                inner = (
                    inner | targets if _iterates_batch(comp.iter, inner, scope) else inner - targets
                )
                stack.extend((condition.test, set(inner)) for condition in comp.ifs)
                comp = comp.inner_for_in
            parts: list[cst.CSTNode] = (
                [node.key, node.value] if isinstance(node, cst.DictComp) else [node.elt]
            )
            stack.extend((part, inner) for part in parts)
            continue
        stack.extend((child, names) for child in all_children(node))


def _derived(expr: cst.BaseExpression, batch: set[str], scope: Scope) -> bool:
    """A batch tensor: a batch name, an item of one (`batch[0]`, `batch["image"]`), or
    one wrapped in the old `Variable(...)` (which returns the tensor itself)."""
    if isinstance(expr, cst.Name):
        return expr.value in batch
    if isinstance(expr, cst.Subscript):
        return _derived(expr.value, batch, scope)
    if (
        isinstance(expr, cst.Call)
        and len(expr.args) == 1
        and expr.args[0].keyword is None
        and not expr.args[0].star
        and resolves_to(expr.func, scope, VARIABLE)
    ):
        return _derived(expr.args[0].value, batch, scope)
    return False


def _iterates_batch(expr: cst.BaseExpression, batch: set[str], scope: Scope) -> bool:
    """`for t in batch`, `for k, v in batch.items()`."""
    if _derived(expr, batch, scope):
        return True
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in _ITEM_VIEWS
        and not expr.args
        and _derived(expr.func.value, batch, scope)
    )


def _bind(
    target: cst.BaseExpression, value: cst.BaseExpression, batch: set[str], scope: Scope
) -> set[str]:
    names = _target_names(target)
    if (
        isinstance(target, (cst.Tuple, cst.List))
        and isinstance(value, (cst.Tuple, cst.List))
        and len(target.elements) == len(value.elements)
    ):
        for t, v in zip(target.elements, value.elements):
            batch = _bind(t.value, v.value, batch, scope)
        return batch
    if _derived(value, batch, scope):
        return batch | set(names)
    return batch - set(names)


def _target_names(target: cst.BaseExpression) -> list[str]:
    if isinstance(target, cst.Name):
        return [target.value]
    if isinstance(target, (cst.Tuple, cst.List)):
        out: list[str] = []
        for element in target.elements:
            inner = element.value
            if isinstance(inner, cst.StarredElement):
                inner = inner.value
            out.extend(_target_names(inner))
        return out
    if isinstance(target, cst.StarredElement):
        return _target_names(target.value)
    return []


def _non_blocking(call: cst.Call, method: str) -> cst.BaseExpression | None:
    """The expression passed as `non_blocking` (it is literally False here)."""
    position = 0
    slot = 1 if method == "cuda" else 2
    for arg in call.args:
        if arg.keyword is None:
            if position == slot:
                return arg.value
            position += 1
        elif arg.keyword.value == "non_blocking":
            return arg.value
    return None


def _is_true(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "True"
