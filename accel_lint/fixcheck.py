"""The fix checker: a fix never breaks what it does not see.

After a pass of fixes, every name the fixed module reads must still be bound
where the original's was (a removed import still called elsewhere, a removed
variable still read), and no statement a fix deletes may bind a name the fixed
module still reads in that scope. The fixer asks this of every fix of every
rule; a rule cannot opt out.

Both texts go through CPython's own `symtable` (what the compiler knows of each
scope: the names it binds, reads, declares global or takes from an enclosing
function), so the check costs a CPython parse per text, a small part of the
libcst re-parse the fixer makes anyway (`benchmarks/README.md`). Scopes of the
two texts are matched by their path (kind, name, and rank among namesakes), as
line numbers move with the fixes.

A fix that fails is dropped with a reason the user reads in the finding; one
that passes is applied as it was. A file CPython cannot compile here (syntax
newer than the running Python) cannot be checked, so it gets no fixes.
"""

from __future__ import annotations

import ast
import builtins
import functools
import symtable
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.rule import Fix, Replacement
from accel_lint.source import compile_ast

# a scope: (kind, name, rank among earlier siblings of the same kind and name), from the module
ScopePath = tuple[tuple[str, str, int], ...]
# where a read finds its name: a scope's path, or one of these
BUILTIN = "builtin"
UNBOUND = "unbound"
Where = ScopePath | str

_MODULE_NAMES = frozenset(
    {"__name__", "__file__", "__doc__", "__spec__", "__loader__", "__package__"}
    | {"__builtins__", "__path__", "__annotations__", "__cached__"}
)
_BUILTINS = frozenset(dir(builtins)) | _MODULE_NAMES
_FUNCTION_KINDS = ("function",)

NEWER_SYNTAX = (
    "this Python cannot compile the file, so the fix could not be checked "
    "for names it would leave undefined"
)


@dataclass(frozen=True)
class Scopes:
    """One text's scopes: for every scope, where each name it reads is bound."""

    reads: Mapping[ScopePath, Mapping[str, Where]]


@functools.lru_cache(maxsize=8)
def scopes_of(text: str) -> Scopes | None:
    """The text's scopes, or None when CPython does not compile it here. Remembered
    for a few texts: a pass's fixed text is the next pass's original."""
    try:
        top = symtable.symtable(text, "<fixed>", "exec")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return None
    tables: list[tuple[ScopePath, symtable.SymbolTable, tuple[symtable.SymbolTable, ...]]] = []
    stack: list[tuple[ScopePath, symtable.SymbolTable, tuple[symtable.SymbolTable, ...]]] = [
        ((), top, ())
    ]
    while stack:
        path, table, outer = stack.pop()
        tables.append((path, table, outer))
        seen: Counter[tuple[str, str]] = Counter()
        children = []
        for child in table.get_children():
            key = (str(child.get_type()), child.get_name())
            children.append(((*path, (*key, seen[key])), child, (*outer, table)))
            seen[key] += 1
        stack.extend(reversed(children))
    module_binds = {s.get_name() for s in top.get_symbols() if _binds(s)}
    # `global x` then `x = ...` in a function binds the module's `x`
    for _, table, _ in tables:
        for symbol in table.get_symbols():
            if symbol.is_declared_global() and symbol.is_assigned():
                module_binds.add(symbol.get_name())
    paths = {id(table): path for path, table, _ in tables}
    reads: dict[ScopePath, dict[str, Where]] = {}
    for path, table, outer in tables:
        found: dict[str, Where] = {}
        for symbol in table.get_symbols():
            if symbol.is_referenced():
                found[symbol.get_name()] = _where(symbol, table, outer, paths, module_binds)
        reads[path] = found
    return Scopes(reads)


def _binds(symbol: symtable.Symbol) -> bool:
    return symbol.is_assigned() or symbol.is_imported() or symbol.is_namespace()


def _where(
    symbol: symtable.Symbol,
    table: symtable.SymbolTable,
    outer: tuple[symtable.SymbolTable, ...],
    paths: Mapping[int, ScopePath],
    module_binds: set[str],
) -> Where:
    name = symbol.get_name()
    kind = str(table.get_type())
    local = symbol.is_local() and not symbol.is_declared_global() and not symbol.is_free()
    if kind != "module" and local:
        return paths[id(table)]
    if symbol.is_free():
        if name == "__class__":
            return BUILTIN  # the cell CPython makes for `super()` in a method
        for enclosing in reversed(outer):
            if str(enclosing.get_type()) not in _FUNCTION_KINDS:
                continue
            try:
                found = enclosing.lookup(name)
            except KeyError:
                continue
            if found.is_local() and not found.is_free():
                return paths[id(enclosing)]
        return UNBOUND
    if name in module_binds:
        return ()
    return BUILTIN if name in _BUILTINS else UNBOUND


# -- what a fix deletes --------------------------------------------------------------


class _Bindings(cst.CSTVisitor):
    """Names a piece of code binds in its own scope (not inside a def, class, lambda or
    comprehension it holds, whose names are theirs); `wraps` are the names it rebinds
    from themselves (`model = DataParallel(model)`), whose removal leaves the value they
    wrapped."""

    def __init__(self) -> None:
        super().__init__()
        self.names: Counter[str] = Counter()
        self.wraps: set[str] = set()

    def _target(self, node: cst.BaseExpression) -> None:
        if isinstance(node, cst.Name):
            self.names[node.value] += 1
        elif isinstance(node, (cst.Tuple, cst.List)):
            for element in node.elements:
                self._target(element.value)
        elif isinstance(node, cst.StarredElement):
            self._target(node.value)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> bool:
        self.names[node.name.value] += 1
        return False

    def visit_ClassDef(self, node: cst.ClassDef) -> bool:
        self.names[node.name.value] += 1
        return False

    def visit_Lambda(self, node: cst.Lambda) -> bool:
        return False

    def visit_CompFor(self, node: cst.CompFor) -> bool:
        return False

    def visit_Assign(self, node: cst.Assign) -> None:
        targets = {t.target.value for t in node.targets if isinstance(t.target, cst.Name)}
        if targets:
            read = _Reads()
            node.value.visit(read)
            self.wraps |= targets & read.names

    def visit_AssignTarget(self, node: cst.AssignTarget) -> None:
        self._target(node.target)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if node.value is not None:
            self._target(node.target)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._target(node.target)

    def visit_For(self, node: cst.For) -> None:
        self._target(node.target)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._target(node.asname.name)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._target(node.target)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None:
            self._target(node.name.name)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            self._alias(alias)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, Sequence):
            for alias in node.names:
                self._alias(alias)

    def _alias(self, alias: cst.ImportAlias) -> None:
        if alias.asname is not None:
            self._target(alias.asname.name)
            return
        head: cst.BaseExpression = alias.name
        while isinstance(head, cst.Attribute):
            head = head.value
        self._target(head)


class _Reads(cst.CSTVisitor):
    def __init__(self) -> None:
        super().__init__()
        self.names: set[str] = set()

    def visit_Name(self, node: cst.Name) -> None:
        self.names.add(node.value)

    def visit_Attribute(self, node: cst.Attribute) -> bool:
        node.value.visit(self)
        return False

    def visit_Arg(self, node: cst.Arg) -> bool:
        node.value.visit(self)
        return False


def _read_by(node: Replacement) -> frozenset[str]:
    """The names a replacement's new code spells (as reads, or anywhere: an
    over-approximation that keeps reads counted)."""
    visitor = _Reads()
    nodes = node.nodes if isinstance(node, cst.FlattenSentinel) else [node]
    for inner in nodes:
        if isinstance(inner, cst.CSTNode):
            inner.visit(visitor)
    return frozenset(visitor.names)


def _bound_by(nodes: Iterable[Replacement]) -> _Bindings:
    visitor = _Bindings()
    for node in nodes:
        if isinstance(node, cst.FlattenSentinel):
            for inner in node.nodes:
                inner.visit(visitor)
        elif isinstance(node, cst.CSTNode):
            node.visit(visitor)
    return visitor


def bound_by(nodes: Iterable[Replacement]) -> Counter[str]:
    """How many times the nodes bind each name (in the scope that holds them)."""
    return _bound_by(nodes).names


Span = tuple[int, int]  # first and last line of a node in the original text


@dataclass(frozen=True)
class Deletion:
    """A binding of `name` that a fix removes with the code on lines `span`."""

    name: str
    span: Span


def deleted_bindings(fix: Fix, span: Callable[[cst.CSTNode], Span]) -> list[Deletion]:
    """The bindings a fix's replacements remove. Not counted: a binding the same fix
    makes again elsewhere (a statement moved), and a rebinding from the name itself
    (`model = DataParallel(model)`): without it the name keeps the value it wrapped."""
    removed: list[tuple[cst.CSTNode, str, int]] = []
    added: Counter[str] = Counter()
    for old, new in fix.replacements.items():
        before = _bound_by([old])
        after = bound_by([new])
        added.update(after - before.names)
        for name, count in (before.names - after).items():
            if name not in before.wraps:
                removed.append((old, name, count))
    out: list[Deletion] = []
    for node, name, count in removed:
        moved = min(count, added[name])
        added[name] -= moved
        if count > moved:
            out.append(Deletion(name, span(node)))
    return out


# -- is a deleted binding read later? -------------------------------------------------

_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
_NESTED = (*_SCOPES, ast.Lambda, ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp)
_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _binds_name(stmt: ast.stmt, name: str) -> bool:
    """`stmt` itself (not a statement it holds) binds `name`."""
    if isinstance(stmt, _SCOPES):
        return stmt.name == name
    if isinstance(stmt, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in stmt.names)
    targets: list[ast.expr] = []
    if isinstance(stmt, ast.Assign):
        targets = list(stmt.targets)
    elif isinstance(stmt, (ast.AugAssign, ast.AnnAssign)):
        targets = [stmt.target] if not isinstance(stmt, ast.AnnAssign) or stmt.value else []
    elif isinstance(stmt, (ast.For, ast.AsyncFor)):
        targets = [stmt.target]
    elif isinstance(stmt, (ast.With, ast.AsyncWith)):
        targets = [i.optional_vars for i in stmt.items if i.optional_vars is not None]
    return any(isinstance(n, ast.Name) and n.id == name for t in targets for n in ast.walk(t))


def _header_end(stmt: ast.stmt) -> int:
    """The line after which `stmt`'s binding holds: a loop or `with` binds before its
    body runs, anything else once it is done."""
    if isinstance(stmt, (ast.For, ast.AsyncFor, ast.With, ast.AsyncWith)) and stmt.body:
        return stmt.body[0].lineno - 1
    return stmt.end_lineno or stmt.lineno


def _scope_holding(tree: ast.Module, line: int) -> ast.AST:
    best: ast.AST = tree
    best_line = 0
    for node in ast.walk(tree):
        if isinstance(node, _SCOPES):
            end = node.end_lineno or node.lineno
            if node.lineno < line <= end and node.lineno > best_line:
                best, best_line = node, node.lineno
    return best


def read_later(
    tree: ast.Module, deletion: Deletion, replaced: Sequence[tuple[Span, frozenset[str]]]
) -> bool:
    """Whether the code after the fix may read the name `deletion` no longer binds:
    a read after the deleted lines (in the same function, or in a function or lambda
    it holds, which may run at any time) before a rebinding that always runs first,
    or any read in a loop around them. Reads inside code the fixes replace do not
    count unless the new code reads the name too (`replaced`: each replaced span,
    with the names its new code reads)."""
    name = deletion.name
    start, end = deletion.span
    scope = _scope_holding(tree, start)
    body = scope.body if isinstance(scope, (ast.Module, *_SCOPES)) else []
    gone_spans = [(a, b) for (a, b), reads in replaced if name not in reads]

    def gone(line: int) -> bool:
        return start <= line <= end or any(a <= line <= b for a, b in gone_spans)

    # every statement of the scope, with the chain of statement lists that holds it
    statements: list[tuple[ast.stmt, tuple[int, ...]]] = []
    stack: list[tuple[list[ast.stmt], tuple[int, ...]]] = [(body, (id(body),))]
    while stack:
        block, chain = stack.pop()
        for stmt in block:
            statements.append((stmt, chain))
            if isinstance(stmt, _SCOPES):
                continue
            for field in ("body", "orelse", "finalbody"):
                inner = getattr(stmt, field, None)
                if isinstance(inner, list) and inner:
                    stack.append((inner, (*chain, id(inner))))
            inner_blocks = [h.body for h in getattr(stmt, "handlers", ())]
            inner_blocks += [c.body for c in getattr(stmt, "cases", ())]
            stack.extend((inner, (*chain, id(inner))) for inner in inner_blocks)
    held = [
        stmt
        for stmt, _ in statements
        if stmt.lineno >= start and (stmt.end_lineno or stmt.lineno) <= end
    ]
    if not held:
        return True  # cannot place it: assume the worst
    loops = [
        (stmt.lineno, stmt.end_lineno or stmt.lineno)
        for stmt, _ in statements
        if isinstance(stmt, _LOOPS) and stmt.lineno < start and end <= (stmt.end_lineno or 0)
    ]
    # rebindings after the deleted lines, or anywhere in a loop around them: a read
    # they always precede sees them instead (`for group in ...: group["lr"] = ...`
    # earlier in the epoch loop reads its own `group`, not the deleted loop's)
    rebinds = [
        (_header_end(stmt), chain)
        for stmt, chain in statements
        if (stmt.lineno > end or any(a < stmt.lineno <= b for a, b in loops))
        and not gone(stmt.lineno)
        and _binds_name(stmt, name)
    ]

    def covered(line: int, chain: tuple[int, ...]) -> bool:
        return any(at < line and chain[: len(held_in)] == held_in for at, held_in in rebinds)

    for stmt, chain in statements:
        for node in _own_nodes(stmt):
            if isinstance(node, _NESTED):
                # a def or lambda may run at any time; a class body's names are not its
                if (
                    not isinstance(scope, ast.ClassDef)
                    and _reads_freely(node, name)
                    and not gone(node.lineno)
                ):
                    return True
                continue
            if not (isinstance(node, ast.Name) and node.id == name):
                continue
            if not isinstance(node.ctx, ast.Load) and not _augmented(stmt, node):
                continue
            line = node.lineno
            if gone(line) or covered(line, chain):
                continue
            if line > end or any(a <= line <= b for a, b in loops):
                return True
    return False


def _own_nodes(stmt: ast.stmt) -> Iterator[ast.AST]:
    """The expressions of `stmt` itself (not of the statements it holds), with nested
    scopes yielded but not entered."""
    if isinstance(stmt, _SCOPES):
        roots: list[ast.AST] = [*stmt.decorator_list]
        if isinstance(stmt, ast.ClassDef):
            roots += [*stmt.bases, *(k.value for k in stmt.keywords)]
        else:
            roots += [*stmt.args.defaults, *(d for d in stmt.args.kw_defaults if d)]
    else:
        roots = [
            child
            for field, value in ast.iter_fields(stmt)
            if field not in ("body", "orelse", "finalbody", "handlers", "cases")
            for child in (value if isinstance(value, list) else [value])
            if isinstance(child, ast.AST)
        ]
    stack = list(roots)
    while stack:
        node = stack.pop()
        yield node
        if not isinstance(node, _NESTED):
            stack.extend(ast.iter_child_nodes(node))


def _augmented(stmt: ast.stmt, node: ast.Name) -> bool:
    return isinstance(stmt, ast.AugAssign) and stmt.target is node


def _reads_freely(scope: ast.AST, name: str) -> bool:
    """A def, lambda or comprehension reads `name` without binding it itself."""
    reads = binds = False
    for node in ast.walk(scope):
        if isinstance(node, ast.Name) and node.id == name:
            if isinstance(node.ctx, ast.Load):
                reads = True
            else:
                binds = True
        elif isinstance(node, ast.arg) and node.arg == name:
            binds = True
    return reads and not binds


# -- the check -----------------------------------------------------------------------


def check(
    before: Scopes,
    after: Scopes | None,
    tree: Callable[[], ast.Module],
    deleted: Sequence[Deletion],
    replaced: Sequence[tuple[Span, frozenset[str]]],
) -> str | None:
    """Why the fixed text breaks a name, or None when it does not. `after` is None
    when the fixed text does not compile: that is the fixer's own concern (a bug of
    ours, reported as such), not a name broken. `tree` gives CPython's tree of the
    original text, asked only when a fix deletes a binding."""
    if after is None:
        return None
    for path, reads in after.reads.items():
        old = before.reads.get(path, {})
        for name, where in reads.items():
            was = old.get(name)
            if was is None:
                if where == UNBOUND:
                    return f"the fix would use `{name}`, which is not defined here"
            elif was != UNBOUND and where != was:
                if where == UNBOUND:
                    return (
                        f"the fix would remove the definition of `{name}`, "
                        "which the code still uses"
                    )
                return (
                    f"after the fix, `{name}` would refer to another "
                    "definition where the code uses it"
                )
    for deletion in deleted:
        if read_later(tree(), deletion, replaced):
            return (
                f"the fix would delete the line that sets `{deletion.name}`, "
                "which the code reads later"
            )
    return None


def broken_by(
    text: str,
    before: Scopes | None,
    fixes: Sequence[Fix],
    fixed_text: str,
    span: Callable[[cst.CSTNode], Span],
) -> str | None:
    """Why `fixes`, which turned `text` (whose scopes are `before`) into `fixed_text`,
    break a name, or None when they do not. `span` gives the lines of a node of the
    analysed tree."""
    if before is None:
        return NEWER_SYNTAX
    deleted = [d for fix in fixes for d in deleted_bindings(fix, span)]
    replaced = (
        [(span(node), _read_by(new)) for fix in fixes for node, new in fix.replacements.items()]
        if deleted
        else []
    )
    parsed: list[ast.Module] = []

    def tree() -> ast.Module:
        if not parsed:
            parsed.append(compile_ast(text, "<fixed>"))
        return parsed[0]

    return check(before, scopes_of(fixed_text), tree, deleted, replaced)
