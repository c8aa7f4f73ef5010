"""Which calls build a `torch.optim` optimizer: torch's classes, and the file's own
subclasses of them (through local classes too). Shared by the optimizer rules
(`Optimizers.of(facts)`)."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.names import LOCAL, Scope, qualified_names


class Optimizers:
    @classmethod
    def of(cls, facts: FileFacts) -> Optimizers:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    def built(self, classes: frozenset[str]) -> list[tuple[CallSite, str]]:
        """Each call that builds one of `classes` (qualified names) or a subclass the
        file defines, with the torch class it is (for a subclass: the torch base)."""
        out: list[tuple[CallSite, str]] = []
        for site in self.facts.calls:
            found = self.torch_class(site.node.func, site.scope, classes, 0)
            if found is not None:
                out.append((site, found))
        return out

    def torch_class(
        self, expr: cst.BaseExpression, scope: Scope, classes: frozenset[str], depth: int
    ) -> str | None:
        names = qualified_names(expr, scope)
        if not names or depth > 4:
            return None
        if LOCAL not in names:
            return min(names) if names <= classes else None
        if not isinstance(expr, cst.Name):
            return None
        bindings = scope.lookup(expr.value) or []
        if len(bindings) != 1 or not isinstance(bindings[0].node, cst.ClassDef):
            return None
        cls = bindings[0].node
        outer = bindings[0].scope or scope
        for base in cls.bases:
            if base.keyword is None:
                found = self.torch_class(base.value, outer, classes, depth + 1)
                if found is not None:
                    return found
        return None
