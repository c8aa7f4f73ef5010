"""Where the file's DataLoaders are read. Built once per file (`LoaderFlow.of(facts)`).

`origins(expr, scope)` answers "which `DataLoader(...)` calls can this expression
hold?", following names through their assignments (a tuple unpacked from a helper's
`return a, b` too), `self.<attr>` through the class's assignments, parameters
through the file's calls of their function, the file's own functions through their
returns, `x if c else y`, the parts of tuple, list and dict displays however they
travel (`loaders[phase]`, a loop over a list of loaders, `a, b = loaders` where the
caller passed `[train_loader, val_loader]`, `zip(*loaders)`), a name bound several
times by the bindings that reach the read, and the wrappers that hand a loader's
batches on (`enumerate`, `tqdm`, `iter`, `islice`, `zip`). The answer says whether
every path was seen.

`reads()` lists every place a loader is read: a `for` over it (through those
wrappers), an `iter(loader)`, or a call that hands it to code outside the file
(`train_one_epoch(model, loader)` imported from elsewhere reads it).
`batch_targets(loop)` pairs a `for` loop's target with the expression each part of
a batch comes from (`for i, (x, y) in enumerate(loader)`: `(x, y)` from `loader`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Union

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.literals import string_value
from accel_lint.facts.order import Orders
from accel_lint.facts.syntax import argument_for, last_name, returns
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.torch_api import DATALOADER
from accel_lint.walk import all_children

_MAX_DEPTH = 12
# Calls whose iteration yields the batches of their first argument.
_PASS_THROUGH = frozenset({"tqdm", "track", "iter", "islice", "cycle"})
# Calls handed a loader without reading its batches.
_NOT_READING = frozenset(
    {
        "len",
        "next",
        "print",
        "str",
        "repr",
        "isinstance",
        "hasattr",
        "getattr",
        "setattr",
        "type",
        "id",
        "vars",
        "range",
        "enumerate",
        "zip",
        "tqdm",
        "trange",
        "track",
        "islice",
        "cycle",
        "append",
        "extend",
        "format",
        "info",
        "debug",
        "warning",
        "log",
    }
)


@dataclass(frozen=True)
class Origins:
    """The DataLoader calls an expression can hold; `complete` when every path that
    reaches it was seen (a value from another module makes it incomplete)."""

    loaders: frozenset[cst.Call] = frozenset()
    complete: bool = True

    def __or__(self, other: Origins) -> Origins:
        return Origins(self.loaders | other.loaders, self.complete and other.complete)


NOTHING = Origins()
UNSEEN = Origins(frozenset(), False)


Comprehension = Union[cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp]


@dataclass(frozen=True)
class Read:
    """A place where a loader's batches are read: a `for` loop, a comprehension, or a
    call (`iter(...)`, or code of another module handed the loader)."""

    place: cst.For | cst.Call | Comprehension
    scope: Scope
    function: cst.FunctionDef | None
    bodies: tuple[cst.For | cst.While, ...]  # loops whose body runs the read
    loaders: Origins


class LoaderFlow:
    @classmethod
    def of(cls, facts: FileFacts) -> LoaderFlow:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self.loaders: list[CallSite] = facts.calls_resolving_to(DATALOADER)
        self.orders = Orders.of(facts)
        self._memo: dict[int, Origins] = {}
        self._parts: dict[tuple[int, int | str | None], Origins] = {}
        self._parts_active: set[tuple[int, int | str | None]] = set()
        self._active: set[int] = set()
        self._reads: list[Read] | None = None

    # -- origins ------------------------------------------------------------------

    def origins(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> Origins:
        key = id(expr)
        found = self._memo.get(key)
        if found is not None:
            return found
        if key in self._active or depth > _MAX_DEPTH:
            return UNSEEN
        self._active.add(key)
        try:
            found = self._origins(expr, scope, depth)
        finally:
            self._active.discard(key)
        self._memo[key] = found
        return found

    def _origins(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> Origins:
        if isinstance(expr, cst.Call):
            return self._call(expr, scope, depth)
        if isinstance(expr, cst.Name):
            if expr.value == "None":
                return NOTHING
            return self._name(expr, scope, depth)
        if isinstance(expr, cst.Attribute):
            return self._attribute(expr, scope, depth)
        if isinstance(expr, cst.IfExp):
            return self.origins(expr.body, scope, depth + 1) | self.origins(
                expr.orelse, scope, depth + 1
            )
        if isinstance(expr, cst.Subscript):
            return self._subscript(expr, scope, depth)
        return UNSEEN

    def _call(self, call: cst.Call, scope: Scope, depth: int) -> Origins:
        if resolves_to(call.func, scope, DATALOADER):
            return Origins(frozenset({call}))
        name = last_name(call.func)
        if name in _PASS_THROUGH or name == "enumerate":
            first = _first_positional(call)
            return self.origins(first, scope, depth + 1) if first is not None else UNSEEN
        if name == "zip":
            out = NOTHING
            for arg in call.args:
                if arg.keyword is None and not arg.star:
                    out = out | self.origins(arg.value, scope, depth + 1)
                elif arg.star == "*":  # `zip(*loaders)`
                    out = out | self._part(arg.value, None, scope, depth + 1)
            return out
        callee = self.calls.local_callee(call, scope)
        if callee is None:
            # code of another module handed a loader may hand it back, wrapped
            # (`loader = accelerator.prepare(loader)`): what it returns is unseen
            handed = NOTHING
            for arg in call.args:
                if not arg.star and _may_hold_loader(arg.value):
                    handed = handed | self.origins(arg.value, scope, depth + 1)
            return Origins(handed.loaders, False)
        func = callee[0]
        inner = self.facts.scope_of.get(func)
        values = list(returns(func))
        if inner is None or not values:
            return UNSEEN
        out = NOTHING
        for value in values:
            out = out | (self.origins(value, inner, depth + 1) if value is not None else NOTHING)
        return out

    def _name(self, name: cst.Name, scope: Scope, depth: int) -> Origins:
        bindings = self.orders.reaching(name, scope)
        if not bindings:
            return UNSEEN
        out = NOTHING
        for binding in bindings:
            owner = binding.scope or scope
            node = binding.node
            if binding.kind is BindingKind.IMPORT:
                return UNSEEN
            if isinstance(node, cst.Param):
                out = out | self._parameter(node, owner, depth)
            elif isinstance(node, (cst.Assign, cst.AnnAssign)) and binding.value is not None:
                out = out | self.origins(binding.value, owner, depth + 1)
            elif isinstance(node, cst.Assign):
                index = _tuple_index(node, name.value)
                if index is None:
                    return UNSEEN
                out = out | self._part(node.value, index, owner, depth)
            elif isinstance(node, cst.For) and isinstance(node.target, cst.Name):
                out = out | self._part(node.iter, None, owner, depth)
            else:
                return UNSEEN
        return out

    def _part(
        self, expr: cst.BaseExpression, key: int | str | None, scope: Scope, depth: int
    ) -> Origins:
        """What an element of the container `expr` can hold: the one at `key` (a
        position or a string key) or any of them (`None`), through tuple, list and dict
        displays, names, the parameters the file's calls fill, and returns:
        `train_loader, val_loader = loaders` where `loaders` is a parameter handed
        `[train_loader, val_loader]`, `for loader in loaders`, `loaders["train"]`."""
        memo_key = (id(expr), key)
        found = self._parts.get(memo_key)
        if found is not None:
            return found
        if memo_key in self._parts_active or depth > _MAX_DEPTH:
            return UNSEEN
        self._parts_active.add(memo_key)
        try:
            found = self._find_part(expr, key, scope, depth)
        finally:
            self._parts_active.discard(memo_key)
        self._parts[memo_key] = found
        return found

    def _find_part(
        self, expr: cst.BaseExpression, key: int | str | None, scope: Scope, depth: int
    ) -> Origins:
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            elements = expr.elements
            starred = [isinstance(e, cst.StarredElement) for e in elements]
            if isinstance(key, int) and not any(starred[: key + 1]):
                if key >= len(elements):
                    return UNSEEN
                return self.origins(elements[key].value, scope, depth + 1)
            out = NOTHING
            for element in elements:
                if isinstance(element, cst.StarredElement):
                    out = out | self._part(element.value, None, scope, depth + 1)
                else:
                    out = out | self.origins(element.value, scope, depth + 1)
            return out
        if isinstance(expr, cst.Dict):
            out = NOTHING
            for entry in expr.elements:
                if not isinstance(entry, cst.DictElement):
                    return UNSEEN
                if isinstance(key, str) and string_value(entry.key) == key:
                    return self.origins(entry.value, scope, depth + 1)
                out = out | self.origins(entry.value, scope, depth + 1)
            return out
        if isinstance(expr, cst.DictComp):
            inner = self.facts.scope_of.get(expr, scope)
            return self.origins(expr.value, inner, depth + 1)
        if isinstance(expr, cst.Name):
            return self._name_part(expr, key, scope, depth)
        if isinstance(expr, cst.Call):
            name = last_name(expr.func)
            if name in ("list", "tuple") and isinstance(expr.func, cst.Name):
                first = _first_positional(expr)
                return self._part(first, key, scope, depth + 1) if first is not None else NOTHING
            if name == "values" and isinstance(expr.func, cst.Attribute) and not expr.args:
                return self._part(expr.func.value, None, scope, depth + 1)  # `loaders.values()`
            callee = self.calls.local_callee(expr, scope)
            if callee is None:
                return UNSEEN
            inner_scope = self.facts.scope_of.get(callee[0])
            values = list(returns(callee[0]))
            if inner_scope is None or not values:
                return UNSEEN
            out = NOTHING
            for value in values:
                if value is not None:
                    out = out | self._part(value, key, inner_scope, depth + 1)
            return out
        return UNSEEN

    def _name_part(
        self, name: cst.Name, key: int | str | None, scope: Scope, depth: int
    ) -> Origins:
        bindings = self.orders.reaching(name, scope)
        if not bindings:
            return UNSEEN
        out = NOTHING
        for binding in bindings:
            owner = binding.scope or scope
            node = binding.node
            if isinstance(node, cst.Param):
                out = out | self._arguments(node, owner, depth, key)
            elif isinstance(node, (cst.Assign, cst.AnnAssign)) and binding.value is not None:
                out = out | self._part(binding.value, key, owner, depth + 1)
            else:
                return UNSEEN
        return out

    def _parameter(self, param: cst.Param, scope: Scope, depth: int) -> Origins:
        return self._arguments(param, scope, depth, None, whole=True)

    def _arguments(
        self,
        param: cst.Param,
        scope: Scope,
        depth: int,
        key: int | str | None,
        whole: bool = False,
    ) -> Origins:
        """Over the file's calls of the parameter's function: the argument each passes
        (or the default), asked `whole` or for its part at `key` (see `_part`)."""
        func = scope.node
        if not isinstance(func, cst.FunctionDef):
            return UNSEEN
        params = func.params
        positional = [*params.posonly_params, *params.params]
        index = positional.index(param) if param in positional else None
        invocations = self.calls.invocations(func)
        if not invocations:
            return UNSEEN
        out = NOTHING
        for site, offset in invocations:
            value = argument_for(site.node, param.name.value, index, offset)
            if value is None:
                if param.default is None:
                    return UNSEEN
                value, where = param.default, scope.parent or scope
            else:
                where = site.scope
            if whole:
                out = out | self.origins(value, where, depth + 1)
            else:
                out = out | self._part(value, key, where, depth + 1)
        return out

    def _attribute(self, attr: cst.Attribute, scope: Scope, depth: int) -> Origins:
        receiver = attr.value
        if not (isinstance(receiver, cst.Name) and receiver.value == "self"):
            return UNSEEN
        cls = _class_of(scope)
        values = [
            a
            for a in self.facts.attribute_assignments.get(attr.attr.value, ())
            if a.receiver == "self" and a.class_def is cls and cls is not None
        ]
        if not values:
            return UNSEEN
        out = NOTHING
        for assignment in values:
            out = out | self.origins(assignment.value, assignment.scope, depth + 1)
        return out

    def _subscript(self, sub: cst.Subscript, scope: Scope, depth: int) -> Origins:
        """`loaders[phase]`, `loaders["train"]`, `loaders[0]`: a part of a container."""
        key: int | str | None = None
        if len(sub.slice) == 1 and isinstance(sub.slice[0].slice, cst.Index):
            index = sub.slice[0].slice.value
            key = index.evaluated_value if isinstance(index, cst.Integer) else string_value(index)
        return self._part(sub.value, key, scope, depth)

    # -- reads --------------------------------------------------------------------

    def reads(self) -> list[Read]:
        """Every place a DataLoader of this file is read (see the module docstring)."""
        if self._reads is None:
            self._reads = self._find_reads() if self.loaders else []
        return self._reads

    def reads_of(self, loader: cst.Call) -> list[Read]:
        return [r for r in self.reads() if loader in r.loaders.loaders]

    def _find_reads(self) -> list[Read]:
        found: list[Read] = []
        for site in self.facts.loop_sites.values():
            loop = site.node
            if not isinstance(loop, cst.For):
                continue
            got = self.origins(loop.iter, site.scope)
            if got.loaders:
                found.append(Read(loop, site.scope, site.function, site.bodies, got))
        found.extend(self._comprehension_reads())
        for call_site in self.facts.calls:
            call = call_site.node
            name = last_name(call.func)
            if name is None or name in _NOT_READING:
                continue
            if name == "iter":
                first = _first_positional(call)
                targets = [first] if first is not None else []
            elif self.calls.local_callee(call, call_site.scope) is not None:
                continue  # the file's own code: its loops are reads themselves
            elif resolves_to(call.func, call_site.scope, DATALOADER):
                continue
            else:
                targets = [
                    arg.value
                    for arg in call.args
                    if not arg.star and isinstance(arg.value, (cst.Name, cst.Attribute))
                ]
            got = NOTHING
            for target in targets:
                if _may_hold_loader(target):
                    got = got | self.origins(target, call_site.scope)
            if got.loaders:
                found.append(Read(call, call_site.scope, call_site.function, call_site.bodies, got))
        return found

    def _comprehension_reads(self) -> list[Read]:
        """`sum(model(x) for x, _ in loader)`: the outermost `for` of a comprehension,
        read where the comprehension runs (the loops around a call inside it)."""
        found: list[Read] = []
        sites: dict[cst.Call, CallSite] | None = None
        for node, scope in self.facts.scope_of.items():
            if not isinstance(node, (cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)):
                continue
            outer = scope.parent or scope
            got = self.origins(node.for_in.iter, outer)
            if not got.loaders:
                continue
            if sites is None:
                sites = {site.node: site for site in self.facts.calls}
            inner = next((sites[n] for n in _calls_in(node) if n in sites), None)
            function = outer.node if isinstance(outer.node, cst.FunctionDef) else None
            bodies = inner.bodies if inner is not None else ()
            found.append(Read(node, outer, function, bodies, got))
        return found

    # -- batches ----------------------------------------------------------------------

    def batch_targets(
        self, loop: cst.For, scope: Scope
    ) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
        """The parts of `loop`'s target that receive batches, each with the expression
        whose batches they receive: `for i, (x, y) in enumerate(loader)` gives
        `[((x, y), loader)]`; `for a, b in zip(la, lb)` gives `[(a, la), (b, lb)]`."""
        return _split(loop.target, loop.iter, scope, 0)


def _split(
    target: cst.BaseExpression, iterable: cst.BaseExpression, scope: Scope, depth: int
) -> list[tuple[cst.BaseExpression, cst.BaseExpression]]:
    if depth > 3:
        return []
    if isinstance(iterable, cst.Name):
        bindings = scope.lookup(iterable.value)
        if (
            bindings
            and len(bindings) == 1
            and isinstance(bindings[0].value, cst.Call)
            and _wrapper(bindings[0].value) is not None
        ):
            iterable = bindings[0].value  # `pbar = tqdm(loader)`
    if isinstance(iterable, cst.Call):
        kind = _wrapper(iterable)
        if kind == "enumerate":
            first = _first_positional(iterable)
            elements = _target_elements(target)
            if first is None or elements is None or len(elements) != 2:
                return []
            return _split(elements[1], first, scope, depth + 1)
        if kind == "zip":
            elements = _target_elements(target)
            sources = [a.value for a in iterable.args if a.keyword is None and not a.star]
            if elements is None or len(elements) != len(sources):
                return []
            out: list[tuple[cst.BaseExpression, cst.BaseExpression]] = []
            for element, source in zip(elements, sources):
                out.extend(_split(element, source, scope, depth + 1))
            return out
        if kind == "pass":
            first = _first_positional(iterable)
            return _split(target, first, scope, depth + 1) if first is not None else []
    return [(target, iterable)]


def _calls_in(node: cst.CSTNode) -> list[cst.Call]:
    out: list[cst.Call] = []
    stack: list[cst.CSTNode] = [node]
    while stack:
        current = stack.pop()
        if isinstance(current, cst.Call):
            out.append(current)
        stack.extend(all_children(current))
    return out


def _wrapper(call: cst.Call) -> str | None:
    name = last_name(call.func)
    if name == "enumerate":
        return "enumerate"
    if name == "zip":
        return "zip"
    if name in _PASS_THROUGH:
        return "pass"
    return None


def _target_elements(target: cst.BaseExpression) -> list[cst.BaseExpression] | None:
    if not isinstance(target, (cst.Tuple, cst.List)):
        return None
    if any(isinstance(e, cst.StarredElement) for e in target.elements):
        return None
    return [e.value for e in target.elements]


def _first_positional(call: cst.Call) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is None:
            return arg.value
    return None


def _tuple_index(node: cst.Assign, name: str) -> int | None:
    for target in node.targets:
        inner = target.target
        if isinstance(inner, (cst.Tuple, cst.List)):
            for i, element in enumerate(inner.elements):
                if isinstance(element.value, cst.Name) and element.value.value == name:
                    return i
    return None


def _may_hold_loader(expr: cst.BaseExpression) -> bool:
    """Names and `self.<attr>`s are followed; `args.data` and the like are not."""
    if isinstance(expr, cst.Name):
        return True
    return (
        isinstance(expr, cst.Attribute)
        and isinstance(expr.value, cst.Name)
        and expr.value.value == "self"
    )


def _class_of(scope: Scope) -> cst.ClassDef | None:
    current: Scope | None = scope
    while current is not None:
        if current.kind == "class" and isinstance(current.node, cst.ClassDef):
            return current.node
        current = current.parent
    return None
