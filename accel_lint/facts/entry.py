"""What runs under the file's `if __name__ == "__main__":` guard and what runs when the
file is imported, and where a process-wide setting goes. One fact, built once per
file (`Entry.of(facts)`).

Imports: whether a call runs at import time (module-level code outside the guard, or
a function of the file that such code calls, a few calls deep). Worker processes
started with `spawn` or `forkserver` (macOS, Windows, Linux from Python 3.14) import
the script again; whatever runs at import runs in every worker.

A process-wide setting (`torch.backends.cudnn.benchmark = True`, a float32 matmul
precision) goes at the start of what the script runs, before it trains; the first
place that applies:

1. a function of the file that each worker process starts in
   (`mp.spawn(main_worker, ...)`, `Process(target=worker)`) and that trains: at its
   start, because a spawned worker never runs the parent's `__main__` block;
2. module-level code that trains outside the `__main__` block (a plain script):
   after the module's imports;
3. `main()`, when module-level code calls it or hands it over (`fire.Fire(main)`):
   at its start (after its docstring and imports), so that a launcher importing
   the file and calling `main()` gets the setting too;
4. the `if __name__ == "__main__":` block: at its start.

Otherwise there is no place: the file is a library whose functions are started from
elsewhere, and `reason` says so. A setting is spelled the way the file spells the
module it lives in (`cudnn.benchmark` after `import torch.backends.cudnn as cudnn`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.syntax import is_main_test
from accel_lint.facts.training import Training
from accel_lint.names import BindingKind, Scope, import_bindings
from accel_lint.torch_api import PROCESS_LAUNCHERS
from accel_lint.walk import all_children

_MAX_DEPTH = 4

Replacement = Union[cst.CSTNode, cst.FlattenSentinel[Any]]

_BLANK = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""))


@dataclass(frozen=True)
class Place:
    """A block and where in it a statement goes: after `after` (a statement of the
    block), or first in the block when `after` is None."""

    where: str  # for messages: "after the imports", "at the start of `main()`"
    scope: Scope  # where the inserted statement runs
    body: cst.Module | cst.BaseSuite
    after: cst.BaseStatement | None
    module_level: bool = False


@dataclass(frozen=True)
class Insertion:
    """The replacements that insert one statement, the imports it needs, and its code."""

    replacements: dict[cst.CSTNode, Replacement]
    imports: tuple[str, ...]
    code: str
    where: str


class Entry:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.calls = CallGraph.of(facts)
        self.guards = [
            statement
            for statement in facts.module.body
            if isinstance(statement, cst.If) and is_main_test(statement.test)
        ]
        self.main_guard = self.guards[0] if self.guards else None
        self._at_import: dict[cst.FunctionDef, bool] = {}
        self._places: list[Place] | None = None
        self._reason: str | None = None

    @classmethod
    def of(cls, facts: FileFacts) -> Entry:
        return facts.shared(cls)

    # -- the guard and imports -------------------------------------------------------

    @property
    def has_main_guard(self) -> bool:
        return bool(self.guards)

    def in_main_guard(self, site: CallSite) -> bool:
        """`site` is module-level code inside the `__main__` guard."""
        return site.function is None and any(self._in_guard(site, g) for g in self.guards)

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

    # -- where a process-wide setting goes ------------------------------------------

    @property
    def training(self) -> Training:
        return Training.of(self.facts)

    @property
    def places(self) -> list[Place]:
        if self._places is None:
            self._places = self._find_places()
        return self._places

    @property
    def reason(self) -> str | None:
        """Why there is no place for a setting (or it cannot be spelled there)."""
        self.places  # noqa: B018 - finding the places says why there is none
        return self._reason

    # -- where ------------------------------------------------------------------------

    def _find_places(self) -> list[Place]:
        workers = self._worker_functions()
        if workers is None:
            self._reason = (
                "the file starts processes through a function it does not define, "
                "so where each process begins cannot be seen"
            )
            return []
        if any(self._trains(worker) for worker in workers):
            return [
                self._function_place(worker, f"at the start of `{worker.name.value}()`")
                for worker in workers
            ]
        if self.training.trains_at_module_level(outside=self.main_guard):
            module = self._module_place()
            return [module] if module is not None else []
        main = self._main_function()
        if main is not None:
            return [self._function_place(main, "at the start of `main()`")]
        if self.main_guard is not None:
            body = self.main_guard.body
            skipped = _leading(body.body) if isinstance(body, cst.IndentedBlock) else ()
            return [
                Place(
                    "at the start of the `__main__` block",
                    self.facts.module_scope,
                    body,
                    skipped[-1] if skipped else None,
                )
            ]
        self._reason = (
            "the file has no entry point (no `__main__` block, no `main()`, no training at "
            "module level): it is started from elsewhere"
        )
        return []

    def _worker_functions(self) -> list[cst.FunctionDef] | None:
        """The file's functions that the processes it starts run (all of them get the
        setting when one trains); None when a launcher starts something this file does
        not define."""
        found: list[cst.FunctionDef] = []
        for site in self.facts.calls_resolving_to(PROCESS_LAUNCHERS):
            target = _launched(site.node)
            if target is None:
                return None
            func = self._local_def(target, site.scope)
            if func is None:
                return None
            if func not in found:
                found.append(func)
        return found

    def _trains(self, func: cst.FunctionDef) -> bool:
        return any(self.training.runs_backward(s) for s in self.calls.by_function.get(func, ()))

    def _local_def(self, expr: cst.BaseExpression, scope: Scope) -> cst.FunctionDef | None:
        if not isinstance(expr, cst.Name):
            return None
        bindings = scope.lookup(expr.value)
        if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.FunctionDef):
            return bindings[0].node
        return None

    def _main_function(self) -> cst.FunctionDef | None:
        """`def main` at module level that module-level code calls or hands over."""
        module = self.facts.module_scope
        bindings = module.bindings.get("main")
        if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.FunctionDef):
            return None
        main = bindings[0].node
        for site in self.training.module_level_sites():
            func = site.node.func
            if isinstance(func, cst.Name) and func.value == "main":
                return main
            if any(
                isinstance(a.value, cst.Name) and a.value.value == "main" for a in site.node.args
            ):
                return main
        return None

    def _function_place(self, func: cst.FunctionDef, where: str) -> Place:
        scope = self.facts.scope_of[func]
        body = func.body
        skipped = _leading(body.body) if isinstance(body, cst.IndentedBlock) else ()
        return Place(where, scope, body, skipped[-1] if skipped else None)

    def _module_place(self) -> Place | None:
        module = self.facts.module
        skipped = _leading(module.body)
        if not skipped or not any(_is_import(s) for s in skipped):
            self._reason = "the file's imports are not at its top"
            return None
        return Place("after the imports", self.facts.module_scope, module, skipped[-1], True)

    # -- what ---------------------------------------------------------------------------

    def insertion(self, module: str, template: str) -> Insertion | None:
        """Insert `template` (with `{}` standing for how the file spells `module`) at
        the entry point; None when there is no place (see `reason`) or the module cannot
        be spelled there."""
        if not self.places:
            return None
        replacements: dict[cst.CSTNode, Replacement] = {}
        imports: list[str] = []
        codes: list[str] = []
        for place in self.places:
            spelled = self._spell(module, place)
            if spelled is None:
                self._reason = f"`{module}` cannot be named where the setting goes"
                return None
            text, needed, binding_statement = spelled
            code = template.format(text)
            statement = cst.parse_statement(code + "\n")
            assert isinstance(statement, cst.SimpleStatementLine)
            after = place.after
            if place.module_level and binding_statement is not None:
                after = self._after_binding(binding_statement, after)
            replacements.update(_insert(place, after, statement))
            imports.extend(i for i in needed if i not in imports)
            if code not in codes:
                codes.append(code)
        where = " and ".join(p.where for p in self.places)
        return Insertion(replacements, tuple(imports), " / ".join(codes), where)

    def _spell(
        self, module: str, place: Place
    ) -> tuple[str, tuple[str, ...], cst.BaseStatement | None] | None:
        """The file's spelling of `module` at `place`, the imports to add, and the
        module-level statement that binds its first name (when the file imports it)."""
        table = import_bindings(self.facts.module_scope)
        best: tuple[int, str] | None = None
        for local, target in table.items():
            inside = module == target or module.startswith(target + ".")
            if inside and (best is None or len(target) > best[0]):
                best = (len(target), local + module[len(target) :])
        if best is not None:
            text = best[1]
            root = text.split(".")[0]
            bindings = place.scope.lookup(root)
            if not bindings or any(
                b.kind is not BindingKind.IMPORT or b.scope is not self.facts.module_scope
                for b in bindings
            ):
                return None  # shadowed where the setting goes
            return text, (), self._statement_binding(bindings[0].node)
        top = module.split(".")[0]
        if place.scope.lookup(top) is not None:
            return None
        return module, (f"import {top}",), None

    def _statement_binding(self, node: cst.CSTNode | None) -> cst.BaseStatement | None:
        for statement in self.facts.module.body:
            if _contains(statement, node):
                return statement
        return None

    def _after_binding(
        self, binding: cst.BaseStatement, after: cst.BaseStatement | None
    ) -> cst.BaseStatement | None:
        """The later of `after` and the end of the run of imports that holds `binding`."""
        body: list[cst.BaseStatement] = list(self.facts.module.body)
        at = body.index(after) if after is not None else -1
        index = body.index(binding)
        if index <= at:
            return after
        while index + 1 < len(body) and _is_import(body[index + 1]):
            index += 1
        return body[index]


def _insert(
    place: Place, after: cst.BaseStatement | None, statement: cst.SimpleStatementLine
) -> dict[cst.CSTNode, Replacement]:
    body = place.body
    if place.module_level:
        statement = statement.with_changes(leading_lines=[_BLANK])
    if after is not None:
        return {after: cst.FlattenSentinel([after, statement])}
    if isinstance(body, cst.SimpleStatementSuite):
        # `if __name__ == "__main__": main()` becomes a block
        rest = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in body.body]
        lines = [
            cst.SimpleStatementLine(body=[small], trailing_whitespace=body.trailing_whitespace)
            if i == len(rest) - 1
            else cst.SimpleStatementLine(body=[small])
            for i, small in enumerate(rest)
        ]
        return {body: cst.IndentedBlock(body=[statement, *lines])}
    assert isinstance(body, (cst.IndentedBlock, cst.Module))
    first = body.body[0]
    return {first: cst.FlattenSentinel([statement, first])}


def _leading(statements: Sequence[cst.BaseStatement]) -> list[cst.BaseStatement]:
    """The docstring, imports and `global` declarations a block starts with."""
    out: list[cst.BaseStatement] = []
    for i, statement in enumerate(statements):
        if i == 0 and _is_docstring(statement):
            out.append(statement)
            continue
        if not isinstance(statement, cst.SimpleStatementLine) or not all(
            isinstance(s, (cst.Import, cst.ImportFrom, cst.Global, cst.Nonlocal))
            for s in statement.body
        ):
            break
        out.append(statement)
    return out


def _is_import(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in statement.body
    )


def _is_docstring(statement: cst.BaseStatement) -> bool:
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def _contains(statement: cst.CSTNode, node: cst.CSTNode | None) -> bool:
    if node is None:
        return False
    stack: list[cst.CSTNode] = [statement]
    while stack:
        current = stack.pop()
        if current is node:
            return True
        if isinstance(current, (cst.FunctionDef, cst.ClassDef, cst.BaseExpression)):
            continue
        stack.extend(all_children(current))
    return False


def _launched(call: cst.Call) -> cst.BaseExpression | None:
    """The function a process launcher runs: `spawn(fn, ...)`, `Process(target=fn)`."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value in ("fn", "target", "entrypoint"):
            return arg.value
    positional = [a for a in call.args if a.keyword is None and not a.star]
    if positional and _is_process(call):
        # Process(group, target, ...)
        return positional[1].value if len(positional) > 1 else None
    return positional[0].value if positional else None


def _is_process(call: cst.Call) -> bool:
    func = call.func
    name = func.attr.value if isinstance(func, cst.Attribute) else getattr(func, "value", "")
    return name == "Process"


__all__ = ["Entry", "Insertion", "Place"]
