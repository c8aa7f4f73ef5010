"""Whether every way the file runs a function admits one process: its calls and the
places that hand it on (`register(save)`), followed up through the callers, a few
calls deep. A function the file never calls is judged by its own body; one started
once per process (`mp.spawn(main)`) is every rank's code.

The answer for each function is kept, and the references to each function are
indexed once, so the cost stays linear in the size of the file."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.ranks import RankAnalysis, has_main_process_decorator
from accel_lint.names import resolves_to
from accel_lint.rules.save_on_every_rank.record import Entry, Record
from accel_lint.torch_api import PROCESS_LAUNCHERS

# Calls that run a function once per process, or as the entry point of every process:
# its body is every rank's code.
_LAUNCHERS = PROCESS_LAUNCHERS | {"fire.Fire", "typer.run", "jsonargparse.CLI"}
MAX_CALL_DEPTH = 4


class Callers:
    def __init__(self, record: Record, calls: CallGraph, ranks: RankAnalysis) -> None:
        self.record = record
        self.calls = calls
        self.ranks = ranks
        self._guarded: dict[cst.FunctionDef, bool] = {}
        self._references: dict[cst.FunctionDef, list[tuple[cst.CSTNode, Entry]]] | None = None

    def guarded(self, func: cst.FunctionDef) -> bool:
        """Every way this file runs `func` admits one process.

        A function the file never calls is judged by its own body: its callers are in
        other files, and nothing shows that one process only runs it. A function handed
        to code we cannot see (`register(save)`) is judged where it is handed over."""
        known = self._guarded.get(func)
        if known is None:
            known = self._guarded[func] = self._function_guarded(func, 0, frozenset())
        return known

    def _function_guarded(
        self, func: cst.FunctionDef, depth: int, seen: frozenset[cst.FunctionDef]
    ) -> bool:
        if has_main_process_decorator(func):
            return True
        if depth > MAX_CALL_DEPTH or func in seen:
            return True
        if depth > 0 and func in self._guarded:
            return self._guarded[func]
        inner = seen | {func}
        # made only on rank 0 (`if rank == 0: def save(): ...`), or inside a function
        # that only one process runs: no other process has this function to call
        made = self.record.defs[func]
        if self.ranks.guarded(made.guards, made.scope):
            return True
        if made.enclosing is not None and self._function_guarded(made.enclosing, depth + 1, inner):
            return True
        entries = [
            Entry(site.guards, site.scope, site.function)
            for site, _ in self.calls.invocations(func)
        ]
        for node, entry in self.references(func):
            owner = self.record.arg_call.get(id(node))
            if owner is not None and resolves_to(owner[0].func, owner[1], _LAUNCHERS):
                return False  # started once per process
            entries.append(entry)
        if not entries:
            # `obj(...)` runs `__call__`, `with obj:` runs `__enter__`: callers we cannot see
            return _is_dunder(func) and func.name.value != "__init__"
        for entry in entries:
            if self.ranks.guarded(entry.guards, entry.scope):
                continue
            if entry.function is not None and self._function_guarded(
                entry.function, depth + 1, inner
            ):
                continue
            return False
        return True

    def references(self, func: cst.FunctionDef) -> list[tuple[cst.CSTNode, Entry]]:
        """Uses of `func` other than calls: `mp.spawn(main)`, `callbacks=[self.save]`."""
        if self._references is None:
            self._references = self._index_references()
        return self._references.get(func, [])

    def _index_references(self) -> dict[cst.FunctionDef, list[tuple[cst.CSTNode, Entry]]]:
        """Every reference of the file by the function of the file it denotes: one pass
        over the references, one look-up per reference."""
        by_name: dict[str, list[cst.FunctionDef]] = {}
        for func in self.record.defs:
            by_name.setdefault(func.name.value, []).append(func)
        out: dict[cst.FunctionDef, list[tuple[cst.CSTNode, Entry]]] = {}
        for name, funcs in by_name.items():
            refs = self.record.refs.get(name, ())
            if not refs:
                continue
            members = set(funcs)
            for node, entry in refs:
                if isinstance(node, cst.Attribute):
                    # `self.save` in a class: a method of that class
                    for func in funcs:
                        owner = self.calls.class_of(func)
                        if owner is not None and entry.class_def is owner:
                            out.setdefault(func, []).append((node, entry))
                    continue
                for binding in entry.scope.lookup(name) or ():
                    if binding.node in members:
                        assert isinstance(binding.node, cst.FunctionDef)
                        bucket = out.setdefault(binding.node, [])
                        if not bucket or bucket[-1][0] is not node:
                            bucket.append((node, entry))
        return out


def _is_dunder(func: cst.FunctionDef) -> bool:
    name = func.name.value
    return name.startswith("__") and name.endswith("__")
