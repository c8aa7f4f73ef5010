"""What runs when the file is imported: its `if __name__ == "__main__":` guard, and
whether a call runs at import time (module-level code outside the guard, or a
function of the file that such code calls, a few calls deep).

Worker processes started with `spawn` or `forkserver` (macOS, Windows, Linux from
Python 3.14) import the script again; whatever runs at import runs in every worker.
Built once per file (`Entry.of(facts)`).
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.literals import string_value

_MAX_DEPTH = 4


def is_main_guard(node: cst.If) -> bool:
    """`if __name__ == "__main__":` (either side first, either quote)."""
    test = node.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    if not isinstance(test.comparisons[0].operator, cst.Equal):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = {s.value for s in sides if isinstance(s, cst.Name)}
    return names == {"__name__"} and "__main__" in {string_value(s) for s in sides}


class Entry:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self.guards = [
            stmt for stmt in facts.module.body if isinstance(stmt, cst.If) and is_main_guard(stmt)
        ]
        self._at_import: dict[cst.FunctionDef, bool] = {}

    @classmethod
    def of(cls, facts: FileFacts) -> Entry:
        return facts.shared(cls)

    @property
    def has_main_guard(self) -> bool:
        return bool(self.guards)

    def runs_at_import(self, site: CallSite) -> bool:
        """`site` runs when the module is imported: it is module-level code outside the
        `__main__` guard, or in a function that such code calls (through the file's own
        functions and classes, a few calls deep)."""
        return self._runs_at_import(site, 0, set())

    def _runs_at_import(self, site: CallSite, depth: int, seen: set[cst.FunctionDef]) -> bool:
        if site.function is None:
            return not any(self._in_guard(site, guard) for guard in self.guards)
        func = site.function
        known = self._at_import.get(func)
        if known is not None:
            return known
        if depth >= _MAX_DEPTH or func in seen:
            return False
        seen.add(func)
        found = any(
            self._runs_at_import(caller, depth + 1, seen)
            for caller, _ in self.calls.invocations(func)
        )
        if depth == 0:
            self._at_import[func] = found
        return found

    def _in_guard(self, site: CallSite, guard: cst.If) -> bool:
        return any(test is guard.test and inside for test, inside in site.guards)
