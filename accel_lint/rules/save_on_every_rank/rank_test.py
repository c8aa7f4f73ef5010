"""The test the fix writes: `rank == 0` with the script's own rank variable when one is
bound before the save on every path to it, else the file's own main-process predicate
(`is_main_process()`), else `hvd.rank() == 0` in a Horovod script, else
`dist.get_rank() == 0` (with `not dist.is_initialized() or` when the script sets up
its process group only on some runs). After `destroy_process_group()` no test can ask
the rank. File-wide answers (where the process group is set up, whether Horovod is
used, what each function binds) are computed once."""

from __future__ import annotations

from functools import cached_property

import libcst as cst

from accel_lint.facts import CallSite, FileFacts, Guard
from accel_lint.facts.ranks import RankAnalysis
from accel_lint.facts.syntax import sub_expressions
from accel_lint.names import Scope, qualified_names, resolves_to, spelling_for
from accel_lint.rules.save_on_every_rank.record import Record, Save
from accel_lint.torch_api import DDP, GET_RANK, INIT_PROCESS_GROUP, IS_INITIALIZED

_DESTROY = frozenset({"torch.distributed.destroy_process_group"})


class RankTest:
    def __init__(self, facts: FileFacts, record: Record, ranks: RankAnalysis) -> None:
        self.facts = facts
        self.record = record
        self.ranks = ranks
        self._bound_in: dict[cst.FunctionDef, set[cst.CSTNode]] = {}

    def zero_test(self, save: Save) -> tuple[str | None, tuple[str, ...]]:
        """The test and the imports it needs; None when the rank cannot be asked here."""
        for variable in self.ranks.rank_variables(save.scope):
            if self._bound_before(variable.binding_nodes, save):
                return variable.zero_test(), ()
        if self._after_destroy(save):
            return None, ()
        predicate = self.ranks.main_process_predicate(save.scope)
        if predicate is not None and self._defined_before(predicate, save):
            return f"{predicate.name.value}()", ()
        horovod = self._horovod_module
        if horovod is not None and not self._setup_sites:
            spelled, needed = spelling_for(f"{horovod}.rank", save.scope)
            return f"{spelled}() == 0", (needed,) if needed else ()
        get_rank, needed = spelling_for(GET_RANK, save.scope)
        imports = [needed] if needed else []
        test = f"{get_rank}() == 0"
        if self._setup_is_conditional:
            # without a process group (a single-process run) get_rank() raises
            initialized, needed = spelling_for(IS_INITIALIZED, save.scope)
            if needed and needed not in imports:
                imports.append(needed)
            test = f"not {initialized}() or {test}"
        return test, tuple(imports)

    def _after_destroy(self, save: Save) -> bool:
        """A `dist.destroy_process_group()` runs earlier in the save's own function."""
        return any(
            order < save.order and resolves_to(call.func, scope, _DESTROY)
            for call, scope, order in self.record.destroys.get(save.function, ())
        )

    def _defined_before(self, func: cst.FunctionDef, save: Save) -> bool:
        """The def runs unconditionally before the save: at import, for a save in a
        function; earlier in the module, for a module-level save."""
        made = self.record.defs[func]
        return not made.guards and (save.function is not None or made.order < save.order)

    def _bound_before(self, nodes: tuple[cst.CSTNode | None, ...], save: Save) -> bool:
        """Some binding of the variable runs before the save on every path to it."""
        if not nodes:
            return True
        local = self._bound_in_function(save.function) if save.function is not None else set()
        for node in nodes:
            if isinstance(node, cst.Param):
                return True
            noted = self.record.assigned.get(node) if node is not None else None
            if noted is None:
                continue
            order, guards = noted
            if order < save.order and _is_prefix(guards, save.guards):
                return True
            if (
                save.function is not None
                and node not in local
                and all(is_main_module_test(test) for test, _ in guards)
            ):
                return True  # a module-level variable, set before functions run
        return False

    def _bound_in_function(self, func: cst.FunctionDef) -> set[cst.CSTNode]:
        found = self._bound_in.get(func)
        if found is None:
            scope = self.facts.scope_of.get(func)
            found = self._bound_in[func] = (
                {b.node for bs in scope.bindings.values() for b in bs if b.node is not None}
                if scope is not None
                else set()
            )
        return found

    @cached_property
    def _setup_sites(self) -> list[CallSite]:
        init = self.facts.calls_resolving_to(INIT_PROCESS_GROUP)
        return list(init) or list(self.facts.calls_resolving_to(DDP))

    @cached_property
    def _setup_is_conditional(self) -> bool:
        sites = self._setup_sites
        return bool(sites) and all(
            any(not _setup_guard_is_incidental(test, s.scope) for test, _ in s.guards)
            for s in sites
        )

    @cached_property
    def _horovod_module(self) -> str | None:
        for site in self.facts.calls:
            for name in qualified_names(site.node.func, site.scope):
                if name.startswith("horovod.") and name.endswith(".init"):
                    return name[: -len(".init")]
        return None


def _setup_guard_is_incidental(test: cst.BaseExpression, scope: Scope) -> bool:
    """`if __name__ == "__main__":` or a choice of backend by device, not of whether to
    run distributed."""
    if is_main_module_test(test):
        return True
    for sub in sub_expressions(test):
        names = qualified_names(sub, scope) if isinstance(sub, (cst.Name, cst.Attribute)) else ()
        if names and all(n.startswith(("torch.cuda", "torch.accelerator")) for n in names):
            return True
    return False


def _is_prefix(prefix: tuple[Guard, ...], guards: tuple[Guard, ...]) -> bool:
    if len(prefix) > len(guards):
        return False
    return all(a[0] is b[0] and a[1] == b[1] for a, b in zip(prefix, guards))


def is_main_module_test(test: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )
