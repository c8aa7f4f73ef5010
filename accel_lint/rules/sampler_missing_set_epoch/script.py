"""The file as `finish()` sees it: the walk's `Record`, the file's facts and its call
index, with the look-ups every later step shares: which variable or `self.<name>` an
assignment target is (`Handle`), where that handle is read, what it is bound to, and
which of the file's own functions a call runs. Following the sampler, finding the
epoch loops and spelling the fix all ask these same questions."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.calls import CallGraph
from accel_lint.names import Scope
from accel_lint.rules.sampler_missing_set_epoch.record import Record, is_self_attribute


@dataclass(frozen=True)
class Handle:
    """A variable (`owner` is its scope) or a `self.<name>` attribute (`owner` is the class)."""

    owner: Scope | cst.ClassDef
    name: str

    def source(self) -> str:
        return f"self.{self.name}" if isinstance(self.owner, cst.ClassDef) else self.name


class Script:
    def __init__(self, facts: FileFacts, record: Record) -> None:
        self.facts = facts
        self.record = record
        self.calls = CallGraph.of(facts)
        self.sites: dict[cst.Call, CallSite] = {site.node: site for site in facts.calls}
        self._uses: dict[str, dict[int, list[cst.BaseExpression]]] = {}

    def handle(
        self, target: cst.BaseExpression, scope: Scope, class_def: cst.ClassDef | None
    ) -> Handle | None:
        if isinstance(target, cst.Name):
            bindings = scope.lookup(target.value)
            owner = bindings[0].scope if bindings else None
            return Handle(owner, target.value) if owner is not None else None
        if is_self_attribute(target) and class_def is not None:
            assert isinstance(target, cst.Attribute)
            return Handle(class_def, target.attr.value)
        return None

    def uses(self, handle: Handle) -> Iterator[cst.BaseExpression]:
        if isinstance(handle.owner, cst.ClassDef):
            for node, cls in self.record.self_attrs.get(handle.name, ()):
                if cls is handle.owner:
                    yield node
            return
        yield from self._variable_uses(handle.name).get(id(handle.owner), ())

    def _variable_uses(self, name: str) -> dict[int, list[cst.BaseExpression]]:
        """The reads of every variable spelled `name`, by the scope that owns it: grouped
        once, so that following many variables of one name costs their reads, not the
        reads of all of them each time."""
        found = self._uses.get(name)
        if found is None:
            found = self._uses[name] = {}
            for node, scope in self.record.names.get(name, ()):
                bindings = scope.lookup(name)
                if bindings and bindings[0].scope is not None:
                    found.setdefault(id(bindings[0].scope), []).append(node)
        return found

    def values_of(self, handle: Handle) -> list[cst.BaseExpression]:
        if isinstance(handle.owner, cst.ClassDef):
            return self.record.attr_values.get((handle.owner, handle.name), [])
        bindings = handle.owner.bindings.get(handle.name, [])
        return [b.value for b in bindings if b.value is not None]

    def local_callee(self, call: cst.Call, scope: Scope) -> tuple[cst.FunctionDef, int] | None:
        """The def this call runs, and how many implicit leading arguments (self) it gets."""
        return self.calls.local_callee(call, scope)

    def methods(self, cls: cst.ClassDef | None, name: str) -> list[cst.FunctionDef]:
        methods = self.calls.methods(name)
        return [f for f in methods if cls is None or self.calls.class_of(f) is cls]
