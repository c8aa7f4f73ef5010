"""The code that runs once the process group exists."""

from __future__ import annotations

from collections.abc import Callable

import libcst as cst

from accel_lint.facts import CallSite, FileFacts
from accel_lint.rules.data_parallel.tree import Block, Tree

_CALL_DEPTH = 4


class Region:
    """The anchor block from the setup on, and the file's functions called only
    from there (transitively): their calls, and those functions."""

    def __init__(
        self, facts: FileFacts, tree: Tree, block: Block, setup_before: cst.BaseStatement
    ) -> None:
        self.tree = tree
        self.block = block
        self.sites = [
            s
            for s in facts.calls
            if tree.same_function(s.node, block) and not tree.precedes(s.node, setup_before)
        ]
        inside = {s.node for s in self.sites}
        callers = _callers(facts)
        self.helpers: list[cst.FunctionDef] = []
        for _ in range(_CALL_DEPTH):
            grew = False
            for func, _scope, _class in facts.function_defs:
                if func in self.helpers or tree.inside(block, func):
                    continue
                calls = callers(func)
                if calls and all(c.node in inside for c in calls):
                    self.helpers.append(func)
                    own = [s for s in facts.calls if s.function is func]
                    inside.update(s.node for s in own)
                    self.sites.extend(own)
                    grew = True
            if not grew:
                break

    def in_block(self, site: CallSite) -> bool:
        """The call is in the anchor block itself (not in a helper)."""
        return self.tree.same_function(site.node, self.block)


def _callers(facts: FileFacts) -> Callable[[cst.FunctionDef], list[CallSite]]:
    """`FileFacts.calls_to_function`, with the calls indexed by name once."""
    by_name: dict[str, list[CallSite]] = {}
    for site in facts.calls:
        func = site.node.func
        if isinstance(func, cst.Name):
            by_name.setdefault(func.value, []).append(site)
        elif (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value in ("self", "cls")
        ):
            by_name.setdefault(func.attr.value, []).append(site)

    def callers(func: cst.FunctionDef) -> list[CallSite]:
        name = func.name.value
        return [
            site
            for site in by_name.get(name, ())
            if not isinstance(site.node.func, cst.Name)
            or any(b.node is func for b in site.scope.lookup(name) or ())
        ]

    return callers
