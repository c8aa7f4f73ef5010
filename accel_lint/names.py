"""Name resolution through imports: a lean scope table built during the one traversal.

libcst's `QualifiedNameProvider` answers the same question but costs about five
parses per file (docs/performance.md); this table is filled
by `facts.FactsCollector` as it walks and is queried after the walk, when every
binding of every scope is known (Python decides locality per function, not per
line).

Policy (precision first): an expression resolves to a target only when *every*
binding that can reach it is an import (or an alias of one) of that target. A
name bound locally (`DataLoader = MyLoader`, a parameter, a def) resolves to
`LOCAL` and matches nothing. A fallback `X = None` beside an import is ignored,
because `try: import x / except ImportError: x = None` is how optional imports
are written.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import Enum

import libcst as cst

LOCAL = "<local>"
_BUILTINS = frozenset(dir(builtins))


class BindingKind(Enum):
    IMPORT = "import"  # `target` is the qualified name
    ALIAS = "alias"  # `value` is a dotted expression the name was assigned from
    LOCAL = "local"  # anything else; `value` is the assigned expression, if any


@dataclass(eq=False)
class Binding:
    name: str
    kind: BindingKind
    target: str | None = None
    value: cst.BaseExpression | None = None
    node: cst.CSTNode | None = None  # the statement, def, param or target that binds
    scope: Scope | None = None


@dataclass(eq=False)
class Scope:
    kind: str  # "module", "class", "function", "comprehension"
    node: cst.CSTNode | None
    parent: Scope | None
    bindings: dict[str, list[Binding]] = field(default_factory=dict)
    globals: set[str] = field(default_factory=set)
    nonlocals: set[str] = field(default_factory=set)
    star_imports: list[str] = field(default_factory=list)
    # the module scope's memo of `qualified_names` per bindings list (see there)
    resolved: dict[tuple[int, int], _Resolved] = field(default_factory=dict, repr=False)
    # the module scope's answers of `qualified_names` once the file's bindings are all
    # known (`FileFacts.finish` sets it): the rules ask the same expressions again
    final: dict[tuple[int, int], tuple[cst.BaseExpression, frozenset[str]]] | None = field(
        default=None, repr=False
    )

    @property
    def module(self) -> Scope:
        scope = self
        while scope.parent is not None:
            scope = scope.parent
        return scope

    def bind(self, binding: Binding) -> None:
        target = self
        if binding.name in self.globals:
            target = self.module
        elif binding.name in self.nonlocals:
            target = self._enclosing_function_with(binding.name) or self
        binding.scope = target
        target.bindings.setdefault(binding.name, []).append(binding)

    def _enclosing_function_with(self, name: str) -> Scope | None:
        scope = self.parent
        while scope is not None and scope.kind != "module":
            if scope.kind == "function" and name in scope.bindings:
                return scope
            scope = scope.parent
        return None

    def function_scope(self) -> Scope:
        """The scope a walrus binds in: the nearest enclosing non-comprehension scope."""
        scope = self
        while scope.kind == "comprehension" and scope.parent is not None:
            scope = scope.parent
        return scope

    def lookup(self, name: str) -> list[Binding] | None:
        """Bindings visible for `name` here, by Python's LEGB rule; None if unbound."""
        scope: Scope | None = self
        first = True
        while scope is not None:
            if scope.kind == "class" and not first:
                scope = scope.parent
                continue
            if name in scope.globals:
                return self.module.bindings.get(name)
            found = scope.bindings.get(name)
            if found:
                return found
            scope = scope.parent
            first = False
        return None


def dotted_name(expr: cst.BaseExpression) -> str | None:
    """`a.b.c` for a chain of names and attributes; None otherwise."""
    parts: list[str] = []
    while type(expr) is cst.Attribute:
        parts.append(expr.attr.value)
        expr = expr.value
    if type(expr) is not cst.Name:
        return None
    parts.append(expr.value)
    return ".".join(reversed(parts))


def qualified_names(expr: cst.BaseExpression, scope: Scope, _depth: int = 0) -> frozenset[str]:
    """Every qualified name `expr` can denote; `LOCAL` stands for a non-import binding.

    Empty when the expression is not a name chain or the root name is unbound.
    """
    if _depth == 0:
        final = scope.module.final
        if final is not None:
            # by id (libcst's `__hash__` is a Python call); the entry holds the node,
            # so its id cannot be reused by another
            key = (id(expr), id(scope))
            known = final.get(key)
            if known is None or known[0] is not expr:
                known = final[key] = (expr, _qualified_names(expr, scope, 0))
            return known[1]
    return _qualified_names(expr, scope, _depth)


def _qualified_names(expr: cst.BaseExpression, scope: Scope, _depth: int) -> frozenset[str]:
    if _depth > 8:
        return frozenset({LOCAL})
    # by type: a failing `isinstance` against libcst's classes goes through ABCMeta
    if type(expr) is cst.Attribute:
        bases = qualified_names(expr.value, scope, _depth)
        attr = expr.attr.value
        return frozenset(b if b == LOCAL else f"{b}.{attr}" for b in bases)
    if type(expr) is not cst.Name:
        return frozenset()
    name = expr.value
    bindings = scope.lookup(name)
    if bindings is None:
        # A star import binds names nobody here can list: a name the file never binds
        # may come from any starred module. A builtin stays the builtin (a module
        # exporting its own `range` is not how scripts are written), so
        # `from utils import *` does not blind every rule to `range`, `zip`, `len`.
        if name in _BUILTINS:
            return frozenset({f"builtins.{name}"})
        return frozenset(f"{m}.{name}" for m in scope.module.star_imports)
    # A name bound N times (a script concatenated N times, a notebook export) is
    # looked up at each of its N uses, during the walk too (when only the bindings
    # before the use exist): what each binding contributes is computed once and the
    # unions are extended as bindings are appended, so N uses cost N, not N * N.
    memo = scope.module.resolved
    key = (id(bindings), _depth)
    known = memo.get(key)
    if known is None or known.bindings is not bindings:
        known = memo[key] = _Resolved(bindings)
    for binding in bindings[known.done :]:
        if binding.kind is BindingKind.IMPORT and binding.target is not None:
            known.every.add(binding.target)
            known.real.add(binding.target)
        elif binding.kind is BindingKind.ALIAS and binding.value is not None:
            known.aliases.append(binding)  # resolved at each call: its own names may grow
        else:
            known.every.add(LOCAL)
            if not _is_none_placeholder(binding):
                known.real.add(LOCAL)
        known.any_import = known.any_import or binding.kind is not BindingKind.LOCAL
    known.done = len(bindings)
    # a fallback `x = None` beside an import does not count
    result = set(known.real if len(bindings) > 1 and known.any_import else known.every)
    for alias in known.aliases:
        assert alias.scope is not None and alias.value is not None
        result |= qualified_names(alias.value, alias.scope, _depth + 1) or {LOCAL}
    return frozenset(result)


@dataclass(eq=False)
class _Resolved:
    """`qualified_names` of a name over the first `done` of its `bindings`."""

    bindings: list[Binding]
    done: int = 0
    every: set[str] = field(default_factory=set)  # over all bindings
    real: set[str] = field(default_factory=set)  # without `x = None` placeholders
    any_import: bool = False  # some binding is not LOCAL
    aliases: list[Binding] = field(default_factory=list)


def _is_none_placeholder(binding: Binding) -> bool:
    return (
        binding.kind is BindingKind.LOCAL
        and isinstance(binding.value, cst.Name)
        and binding.value.value == "None"
    )


def resolves_to(expr: cst.BaseExpression, scope: Scope, targets: Iterable[str]) -> bool:
    """True when every name `expr` can denote is one of `targets` (and there is one)."""
    names = qualified_names(expr, scope)
    wanted = targets if isinstance(targets, (set, frozenset)) else frozenset(targets)
    return bool(names) and all(n in wanted for n in names)


def single_binding(name: cst.Name, scope: Scope) -> Binding | None:
    """The one binding of `name` visible from `scope`, if it is bound exactly once."""
    bindings = scope.lookup(name.value)
    if bindings is None or len(bindings) != 1:
        return None
    return bindings[0]


def assigned_value(expr: cst.BaseExpression, scope: Scope) -> cst.BaseExpression | None:
    """The expression a name was assigned from, when it is bound exactly once by `=`."""
    if not isinstance(expr, cst.Name):
        return None
    binding = single_binding(expr, scope)
    if binding is None or binding.kind is BindingKind.IMPORT:
        return None
    return binding.value


def import_bindings(scope: Scope) -> dict[str, str]:
    """Module-level import bindings: local name -> qualified name (for writing fixes)."""
    table: dict[str, str] = {}
    for name, bindings in scope.module.bindings.items():
        imports = [b for b in bindings if b.kind is BindingKind.IMPORT and b.target]
        if len(imports) == len(bindings) and imports and imports[0].target is not None:
            table[name] = imports[0].target
    return table


def spelling_for(qualified: str, scope: Scope) -> tuple[str, str | None]:
    """How the file itself would spell `qualified`, and the import to add if none fits.

    Prefers an existing import (`dist.get_rank` when `torch.distributed` is
    imported as `dist`, `DistributedSampler` after a `from` import); otherwise
    returns the full dotted path with `import <top module>` to add.
    Returns (expression source, import statement source or None).
    """
    table = import_bindings(scope)
    best: tuple[int, str] | None = None
    for local, target in table.items():
        if qualified == target or qualified.startswith(target + "."):
            candidate = local + qualified[len(target) :]
            if not root_is_module_import(candidate, scope):
                continue  # shadowed where the code goes
            if best is None or len(target) > best[0]:
                best = (len(target), candidate)
    if best is not None:
        return best[1], None
    module, _, attr = qualified.rpartition(".")
    top = qualified.split(".")[0]
    options: list[tuple[str, str]] = []
    if module and "." not in module and module == top:
        options.append((qualified, f"import {top}"))
    if module:
        options.append((attr, f"from {module} import {attr}"))
    else:
        options.append((qualified, f"import {qualified}"))
    for text, needed in options:
        if scope.lookup(text.split(".")[0]) is None:
            return text, needed
    return options[0]


def root_is_module_import(text: str, scope: Scope) -> bool:
    """Whether the first name of `text`, read in `scope`, is unbound (an import added at
    module level will provide it) or bound only by module-level imports.

    A name a function binds anywhere is local to all of that function (Python
    decides per function), so a module-level import cannot reach it there.
    """
    bindings = scope.lookup(text.split(".")[0])
    return bindings is None or all(
        b.kind is BindingKind.IMPORT and b.scope is scope.module for b in bindings
    )
