"""The file's call graph: call sites by callee name and by enclosing function, and
which calls run a given function of the file. Built once per file
(`CallGraph.of(facts)`); every rule that follows calls asks this one."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.syntax import last_name
from accel_lint.names import LOCAL, Scope, qualified_names


class CallGraph:
    """Call sites of the file by callee name and by enclosing function."""

    @classmethod
    def of(cls, facts: FileFacts) -> CallGraph:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.by_name: dict[str, list[CallSite]] = {}
        self.by_function: dict[cst.FunctionDef | None, list[CallSite]] = {}
        for site in facts.calls:
            name = last_name(site.node.func)
            if name is not None:
                self.by_name.setdefault(name, []).append(site)
            self.by_function.setdefault(site.function, []).append(site)
        self._methods: dict[str, list[cst.FunctionDef]] = {}
        self._class_of: dict[cst.FunctionDef, cst.ClassDef | None] = {}
        for func, _, cls in facts.function_defs:
            self._class_of[func] = cls
            if cls is not None:
                self._methods.setdefault(func.name.value, []).append(func)
        self._sites: dict[cst.FunctionDef, list[CallSite]] = {}
        # (id of the call, id of the scope) -> its callee; the graph holds the facts,
        # hence the tree, so the ids stay those of live nodes
        self._callees: dict[tuple[int, int], tuple[cst.FunctionDef, int] | None] = {}
        self._around: dict[cst.FunctionDef, frozenset[cst.For | cst.While]] = {}

    def class_of(self, func: cst.FunctionDef | None) -> cst.ClassDef | None:
        return self._class_of.get(func) if func is not None else None

    def methods(self, name: str) -> list[cst.FunctionDef]:
        """Methods of the file's classes with this name."""
        return self._methods.get(name, [])

    def _receiver_class(self, receiver: cst.BaseExpression, scope: Scope) -> cst.ClassDef | None:
        """The file's class of `Trainer(...)` or of a name bound once to `Trainer(...)`."""
        if isinstance(receiver, cst.Name):
            bindings = scope.lookup(receiver.value)
            if not bindings or len(bindings) != 1 or bindings[0].value is None:
                return None
            owner = bindings[0].scope
            receiver = bindings[0].value
            scope = owner if owner is not None else scope
        if not isinstance(receiver, cst.Call) or not isinstance(receiver.func, cst.Name):
            return None
        bindings = scope.lookup(receiver.func.value)
        if bindings and len(bindings) == 1 and isinstance(bindings[0].node, cst.ClassDef):
            return bindings[0].node
        return None

    def local_callee(self, call: cst.Call, scope: Scope) -> tuple[cst.FunctionDef, int] | None:
        """The def of this file that `call` runs, and how many implicit leading arguments
        it gets (1 for a method's `self`, and for `Cls(...)` running `__init__`).
        Asked again and again (every question that follows calls asks it of the same
        sites): answered once per call and scope."""
        key = (id(call), id(scope))
        if key in self._callees:
            return self._callees[key]
        found = self._callees[key] = self._local_callee(call, scope)
        return found

    def _local_callee(self, call: cst.Call, scope: Scope) -> tuple[cst.FunctionDef, int] | None:
        func = call.func
        if type(func) is cst.Name:  # a failing `isinstance` goes through ABCMeta
            bindings = scope.lookup(func.value)
            if not bindings or len(bindings) != 1:
                return None
            node = bindings[0].node
            if isinstance(node, cst.FunctionDef):
                return node, 0
            if isinstance(node, cst.ClassDef):
                init = [f for f in self.methods("__init__") if self.class_of(f) is node]
                return (init[0], 1) if len(init) == 1 else None
            return None
        if isinstance(func, cst.Attribute):
            names = qualified_names(func.value, scope)
            if names and LOCAL not in names:
                return None  # a module's function (`torch.save`), not one of ours
            methods = self.methods(func.attr.value)
            return (methods[0], 1) if len(methods) == 1 else None
        return None

    def invocations(self, func: cst.FunctionDef) -> list[tuple[CallSite, int]]:
        """Calls that run `func`, each with the count of implicit leading arguments:
        1 for `self.m(...)` / `obj.m(...)`, and for `Cls(...)` running `__init__`."""
        out = [
            (site, 1 if isinstance(site.node.func, cst.Attribute) else 0)
            for site in self.calls_to(func)
        ]
        cls = self._class_of.get(func)
        if cls is not None and func.name.value == "__init__":
            for site in self.by_name.get(cls.name.value, ()):
                callee = site.node.func
                bindings = (
                    site.scope.lookup(cls.name.value) if isinstance(callee, cst.Name) else None
                )
                if bindings and any(b.node is cls for b in bindings):
                    out.append((site, 1))
        return out

    def calls_to(self, func: cst.FunctionDef) -> list[CallSite]:
        """Calls of `func`: by its name where that name is bound to it, `self.f(...)`
        for a method, and `obj.f(...)` when `f` is the only method of that name."""
        found = self._sites.get(func)
        if found is not None:
            return found
        name = func.name.value
        method = self._class_of.get(func) is not None
        found = []
        for site in self.by_name.get(name, ()):
            callee = site.node.func
            if isinstance(callee, cst.Name):
                bindings = site.scope.lookup(name)
                if bindings and any(b.node is func for b in bindings):
                    found.append(site)
            elif method and isinstance(callee, cst.Attribute):
                receiver = callee.value
                on_self = isinstance(receiver, cst.Name) and receiver.value in ("self", "cls")
                if on_self or self._receiver_class(receiver, site.scope) is self._class_of[func]:
                    found.append(site)
                elif len(self.methods(name)) == 1:
                    names = qualified_names(receiver, site.scope)
                    if not names or LOCAL in names:  # not a module's function (torch.save)
                        found.append(site)
        self._sites[func] = found
        return found

    def loops_around(self, func: cst.FunctionDef) -> frozenset[cst.For | cst.While]:
        """The loops that run `func` on their iterations: around a call of it, or, for a
        call outside any loop of its function, the loops around that function (and so
        on up the calls). Answered once per function for the file: a walk up the calls
        of every question would cost each call chain again, and branch on every
        definition a pasted script repeats."""
        found = self._around.get(func)
        if found is not None:
            return found
        self._around[func] = frozenset()  # a recursive call adds nothing new
        loops: set[cst.For | cst.While] = set()
        for site, _ in self.invocations(func):
            if site.bodies:
                loops.update(site.bodies)
            elif site.function is not None:
                loops.update(self.loops_around(site.function))
        found = self._around[func] = frozenset(loops)
        return found
