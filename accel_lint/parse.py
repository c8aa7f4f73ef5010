"""The parse step: CPython and libcst must both accept a file before a rule sees it.

- CPython compiles every file (it costs a tenth of libcst's parse). What it rejects
  is `ACL000` with CPython's own message, even where libcst's more lenient grammar
  accepts it (`"\\N{NOT A NAME}"`, `b"é"`, 500 nested parentheses): such a file
  would not run, and a fix must not touch it. The one exception is syntax newer
  than the running Python (a `type` statement on 3.11): libcst parses it, the file
  is checked, and a note says that CPython could not compile it here.
- libcst's native parser takes time superlinear in the depth of a chain
  (`a + b + ...`, `a.b.c...`, `f()()...`: 2,000 terms take seconds, 20,000 minutes)
  and crashes the whole process at about 10,000. So the depth of CPython's tree is
  measured first (an iterative walk, a few percent of the parse), and a file deeper
  than `DEPTH_LIMIT` is `ACL000` "too deeply nested" and never reaches libcst.
- What CPython accepts and libcst cannot parse (`class T(a=1, *A, **k)`) or
  rejects on validation (`CSTValidationError`, `CSTLogicError`) is `ACL000` naming
  libcst, at the statement that libcst fails on.
"""

from __future__ import annotations

import ast
import contextlib
import dataclasses
import gc
import io
import sys
import threading
import types
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from typing import Any

import libcst as cst
from libcst._nodes.base import CSTNode

from accel_lint import startup
from accel_lint.called import Called, called, node_types
from accel_lint.diagnostic import Diagnostic, parse_error
from accel_lint.incremental import PART_CHARS, Reparser, parse_in_parts
from accel_lint.source import compile_ast, cpython_ast

# Real code stays far below this (99.9% of 24,000 files from PyPI packages and
# training repositories: depth 46 or less; the deepest, generated sympy tables,
# 569). At this depth libcst parses about 0.3 s per KB in the worst case (a chain
# of calls), its recursive passes need 3.3 Python frames per level (see
# `analysis_conditions`), and its native parser is far from crashing.
DEPTH_LIMIT = 500

# A file CPython rejects has no tree to measure: an upper bound from its tokens
# (see `token_depth`) decides whether libcst may look for newer syntax in it.
TOKEN_DEPTH_LIMIT = 4 * DEPTH_LIMIT

# libcst's recursive passes (code generation, positions, transforms) take about
# 3.3 Python frames per level of nesting, and 7 per level of nested brackets
# (CPython allows 200 of them). Python's default of 1000 frames fails at a chain
# of 300 terms; this many is enough for `DEPTH_LIMIT` and well inside the 8 MB
# stack of a main thread on every supported Python.
RECURSION_LIMIT = 4000

# Errors libcst raises for input it cannot parse (CSTValidationError is a
# SyntaxError; CSTLogicError is libcst's own "this cannot happen").
LIBCST_ERRORS: tuple[type[Exception], ...] = (
    cst.ParserSyntaxError,
    cst.CSTValidationError,
    cst.CSTLogicError,
)

# CPython's own nesting limits: the file is too deep, not wrong.
_CPYTHON_NESTING = (
    "too many nested parentheses",
    "too many statically nested blocks",
    "too many levels of indentation",
    "too many nested f-strings",
    "too complex",
)

# The newest grammar libcst knows. On this Python or a newer one, what CPython
# rejects is never "newer syntax".
NEWEST_GRAMMAR = (3, 14)


@dataclass
class Parsed:
    """A parsed module, or the `ACL000` that says why there is none; `note` says
    when the file was checked with libcst's grammar only (newer syntax)."""

    module: cst.Module | None
    error: Diagnostic | None = None
    note: str | None = None
    tree: ast.Module | None = None  # CPython's, of the same text (positions reuse it)


@contextlib.contextmanager
def analysis_conditions() -> Iterator[None]:
    """What analysing one file needs from the interpreter, restored afterwards.

    - A recursion limit for libcst's recursive passes over a tree `DEPTH_LIMIT`
      deep (only raised, never lowered; meant for the main thread, whose stack
      is the process's).
    - No cyclic garbage collection while the file's tree is alive: each full
      collection walks every node, which made a 1.3 MB file cost 40% more per KB
      than a 20 kB one. The trees hold no cycles; what the analysis leaves
      behind is collected once the file is done.
    """
    limit = sys.getrecursionlimit()
    if limit < RECURSION_LIMIT:
        sys.setrecursionlimit(RECURSION_LIMIT)
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
        if limit < RECURSION_LIMIT:
            sys.setrecursionlimit(limit)


def _identity_hash() -> None:
    """libcst's nodes are equal only to themselves and hash by identity, through a
    Python method (`CSTNode.__hash__` returns `id(self)`) that every node class
    carries: each node put in a dict or a set (a parent map, an order, a scope's
    nodes) is a Python call, 1% of a repository's check. `object.__hash__` is the
    same identity hash, in C. Equality stays libcst's; only classes that kept
    libcst's method change (a class with a hash of its own keeps it), and classes
    defined later copy it from `CSTNode` (`CSTNode.__init_subclass__`)."""
    python_hash = CSTNode.__dict__["__hash__"]
    for cls in node_types(CSTNode):
        if cls.__dict__.get("__hash__") is python_hash:
            cls.__hash__ = object.__hash__  # type: ignore[assignment]


_identity_hash()

# `_STATE[0]`: whether a node built now checks its fields (see `unvalidated`)
_STATE = [True]
_unvalidated_lock = threading.Lock()
_unvalidated_depth = 0


def _checked_inits() -> None:
    """Give every libcst node class an `__init__` that calls the node's checks
    (`__post_init__`) only while `_STATE[0]` says so. What `dataclasses` wrote for
    these classes sets each field and then always makes that call, a Python call
    per node even when it has nothing to do; this one sets each field through its
    slot, as a frozen dataclass does, and tests a flag. Classes whose fields are not
    all plain slotted `__init__` parameters keep libcst's method. The text of each
    method depends only on its class's field names and which of them have defaults,
    so it compiles through the table of dataclass methods (`startup.py`): a run
    with the table compiles none of them."""
    # libcst's classes before `add_slots` rebuilt them are still listed: their fields
    # are no slots, and they keep their method (`_checked_init` answers None)
    for cls in node_types(CSTNode):
        if (
            "__init__" in cls.__dict__
            and dataclasses.is_dataclass(cls)
            and not getattr(cls, "__abstractmethods__", None)  # never built itself
        ):
            init = _checked_init(cls)
            if init is not None:
                LIBCST_INITS[cls] = cls.__dict__["__init__"]
                cls.__init__ = init  # type: ignore[method-assign]


def _checked_init(cls: type) -> Callable[..., None] | None:
    namespace: dict[str, Any] = {"_STATE": _STATE, "_FACTORY": _FACTORY}
    parameters: list[str] = []
    body: list[str] = []
    for number, field in enumerate(dataclasses.fields(cls)):
        slot = next((k.__dict__[field.name] for k in cls.__mro__ if field.name in k.__dict__), None)
        if not field.init or field.kw_only or not isinstance(slot, types.MemberDescriptorType):
            return None
        name = field.name
        namespace[f"_set{number}"] = slot.__set__
        if field.default is not dataclasses.MISSING:
            namespace[f"_default{number}"] = field.default
            parameters.append(f"{name}=_default{number}")
        elif field.default_factory is not dataclasses.MISSING:
            namespace[f"_factory{number}"] = field.default_factory
            parameters.append(f"{name}=_FACTORY")
            body.append(f"    if {name} is _FACTORY:\n        {name} = _factory{number}()")
        else:
            parameters.append(name)
        body.append(f"    _set{number}(self, {name})")
    text = (
        f"def __init__(self, {', '.join(parameters)}):\n"
        + "\n".join(body)
        + "\n    if _STATE[0]:\n        self.__post_init__()\n"
    )
    startup.execute(text, namespace)
    init: Callable[..., None] = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    return init


_FACTORY = object()  # a parameter left to its field's default factory
# libcst's own methods, of the classes `_checked_inits` gave another (for the tests)
LIBCST_INITS: dict[type, Callable[..., None]] = {}
_checked_inits()


@contextlib.contextmanager
def unvalidated() -> Iterator[None]:
    """libcst's nodes check their own fields as they are built (`_validate`: names are
    identifiers, whitespace is whitespace, brackets pair up); its parser builds every
    node through them, about a fifth of the parse. A text CPython has compiled
    passes those checks by construction, and the trees are the same node for node
    (`tests/test_parse.py` compares them on every fixture and case), so the checks
    are off while such a text is parsed, and back on for every node a fix builds.
    Shared by threads (verify's prefetch computes fixes beside the main thread):
    off while any of them parses."""
    global _unvalidated_depth
    with _unvalidated_lock:
        _unvalidated_depth += 1
        _STATE[0] = False
    try:
        yield
    finally:
        with _unvalidated_lock:
            _unvalidated_depth -= 1
            if _unvalidated_depth == 0:
                _STATE[0] = True


def too_deep(path: str, row: int = 1, column: int = 1, why: str = "") -> Diagnostic:
    detail = f" ({why})" if why else ""
    return parse_error(path, f"too deeply nested to parse{detail}", row, column)


def too_deep_to_analyse(path: str) -> Diagnostic:
    """For a RecursionError after the parse: within `DEPTH_LIMIT`, only nesting that
    CPython's tree does not show (thousands of implicitly concatenated strings)."""
    return parse_error(path, "too deeply nested to analyse (Python's recursion limit)")


def parse(
    path: str,
    text: str,
    wanted: Callable[[Called], bool] | None = None,
    reparser: Reparser | None = None,
) -> Parsed:
    """CPython's verdict, the depth check, then libcst's parse (see the module doc).
    `wanted` sees what CPython's tree calls first (`called`): when it answers False,
    nothing can match and libcst's parse is skipped (no module, no error).
    `reparser`: an open document's last parse, whose unchanged statements libcst
    need not parse again."""
    try:
        tree: ast.Module | None = compile_ast(text, path)
        rejected: Diagnostic | None = None
    except SyntaxError as exc:
        tree, rejected = None, _syntax_error(path, text, exc)
        if any(limit in exc.msg for limit in _CPYTHON_NESTING):
            return Parsed(None, too_deep(path, *_position(rejected), why=f"CPython: {exc.msg}"))
        if not _may_be_newer_syntax(text):
            return Parsed(None, rejected)
    except ValueError as exc:
        return Parsed(None, parse_error(path, f"SyntaxError: {exc}"))
    except (RecursionError, MemoryError):
        return Parsed(None, too_deep(path, why="CPython's compiler gives up"))

    if tree is not None:
        # one iterative pass over CPython's tree: what it calls, and its depth (the
        # limit of libcst's recursion)
        seen = called(tree)
        if wanted is not None and not wanted(seen):
            return Parsed(None)
        depth, row, offset = seen.deepest
        if depth > DEPTH_LIMIT:
            why = f"{depth} levels deep here; the limit is {DEPTH_LIMIT}"
            return Parsed(None, too_deep(path, row, _char_column(text, row, offset), why))
        # from here on only its statements are read (positions, the incremental
        # reparse, where libcst fails): a large file's expressions go before libcst's
        # tree is built (a small file's are not worth the pass)
        if len(text) > PART_CHARS:
            statements_only(tree)

    try:
        # what CPython rejects is never spliced: the whole text decides the ACL000
        if reparser is not None and rejected is None:
            with unvalidated():
                module = reparser.parse_module(text, tree)
        elif tree is not None:
            with unvalidated():
                module = parse_in_parts(text, tree)  # a large file: a part at a time
        else:  # what CPython rejects: libcst's checks decide too
            module = cst.parse_module(text)
    except LIBCST_ERRORS as exc:
        if rejected is not None:
            return Parsed(None, rejected)
        return Parsed(None, _libcst_error(path, text, exc, tree))
    except RecursionError:
        return Parsed(None, too_deep(path))
    if rejected is None:
        return Parsed(module, tree=tree)
    newer = _newer_syntax(module)
    if newer is None:
        return Parsed(None, rejected)
    if isinstance(newer, str):
        return Parsed(None, replace(rejected, message=f"{rejected.message}: {newer}"))
    feature, version = newer
    running = f"{sys.version_info[0]}.{sys.version_info[1]}"
    note = (
        f"uses syntax newer than Python {running} ({feature}, Python "
        f"{version[0]}.{version[1]}): checked with libcst's grammar; CPython {running} "
        "cannot compile it"
    )
    return Parsed(module, note=note)


def _position(diagnostic: Diagnostic) -> tuple[int, int]:
    return diagnostic.row, diagnostic.column


def _syntax_error(path: str, text: str, exc: SyntaxError) -> Diagnostic:
    row = exc.lineno or 1
    column = _column(text, row, exc.offset or 1)
    return parse_error(path, f"SyntaxError: {exc.msg}", row, column)


def _column(text: str, row: int, offset: int) -> int:
    """CPython's 1-based offset is in code points for source text, except where it
    points past the line (end of file): keep it on the line."""
    lines = text.splitlines()
    if 0 < row <= len(lines):
        return max(1, min(offset, len(lines[row - 1]) + 1))
    return max(1, offset)


# -- what is kept of CPython's tree -------------------------------------------------

# The fields that hold statements (or the handlers and cases that hold them), and
# the decorators that decide where a decorated statement starts.
_STATEMENT_FIELDS = frozenset(
    {"body", "orelse", "finalbody", "handlers", "cases", "decorator_list"}
)


def statements_only(tree: ast.Module) -> None:
    """Drop, in place, every part of CPython's tree but its statements (their kind,
    lines and columns, their blocks, their decorators). CPython's tree of a file
    costs about a fifth of libcst's tree of it, and most of it is expressions, which
    nothing reads once libcst has the file: without them the two trees alive at
    once while libcst parses cost about that much less (docs/performance.md)."""
    stack: list[ast.AST] = [tree]
    while stack:
        node = stack.pop()
        for name in node._fields:
            if name in _STATEMENT_FIELDS:
                value = getattr(node, name, None)
                if isinstance(value, list) and name != "decorator_list":
                    stack.extend(v for v in value if isinstance(v, ast.AST))
            elif isinstance(node, ast.stmt | ast.excepthandler | ast.match_case):
                setattr(node, name, None)


# -- how deep a tree is ------------------------------------------------------------


def _char_column(text: str, row: int, byte_offset: int) -> int:
    """CPython's AST columns count UTF-8 bytes; ours count code points."""
    lines = text.splitlines()
    if not 0 < row <= len(lines):
        return 1
    line = lines[row - 1].encode("utf-8")
    return len(line[:byte_offset].decode("utf-8", errors="ignore")) + 1


def token_depth(text: str) -> int:
    """An upper bound of the nesting in `text` from its tokens alone (for a file
    CPython would not build a tree for): along the open brackets, the tokens since
    the last comma at each level. Items separated by commas are siblings, never
    nested in one another; anything else may be (`a + b + c`, `-(-(-a))`)."""
    import tokenize  # only for a file CPython builds no tree for

    counts = [0]
    total = best = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            kind, string = token.type, token.string
            if kind == tokenize.OP and string in "([{":
                counts[-1] += 1
                total += 1
                counts.append(0)
            elif kind == tokenize.OP and string in ")]}":
                if len(counts) > 1:
                    total -= counts.pop()
            elif kind == tokenize.OP and string in (",", ";"):
                total -= counts[-1]
                counts[-1] = 0
            elif kind in (tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT):
                counts, total = [0], 0
            elif kind not in (tokenize.NL, tokenize.COMMENT, tokenize.ENDMARKER):
                counts[-1] += 1
                total += 1
            best = max(best, total)
    except (tokenize.TokenError, SyntaxError, ValueError):
        return sys.maxsize  # cannot even be tokenized here: do not risk libcst on it
    return best


# -- syntax newer than this Python ---------------------------------------------------


def _may_be_newer_syntax(text: str) -> bool:
    """Whether libcst should look at a file CPython rejected: only on a Python
    older than libcst's newest grammar, and only when its tokens show no nesting
    deep enough to crash libcst's parser."""
    if sys.version_info[:2] >= NEWEST_GRAMMAR:
        return False
    return token_depth(text) <= TOKEN_DEPTH_LIMIT


class _NewerSyntax(cst.CSTVisitor):
    """The first construct newer than the running Python, with its version."""

    def __init__(self) -> None:
        self.found: tuple[str, tuple[int, int]] | None = None
        # a construct of Python 2 that a newer grammar happens to accept: the file is old
        self.python2: str | None = None
        self._fstrings = 0  # f-strings open around the node visited

    def _see(self, feature: str, version: tuple[int, int]) -> None:
        if version > sys.version_info[:2] and (self.found is None or version > self.found[1]):
            self.found = (feature, version)

    def visit_Match(self, node: cst.Match) -> None:
        self._see("match statement", (3, 10))

    def visit_TryStar(self, node: cst.TryStar) -> None:
        self._see("except* clause", (3, 11))

    def visit_SubscriptElement(self, node: cst.SubscriptElement) -> None:
        if isinstance(node.slice, cst.Index) and node.slice.star is not None:
            self._see("starred subscript", (3, 11))

    def visit_TypeAlias(self, node: cst.TypeAlias) -> None:
        self._see("type alias statement", (3, 12))

    def visit_TypeParameters(self, node: cst.TypeParameters) -> None:
        self._see("type parameter list", (3, 12))

    def visit_TypeParam(self, node: cst.TypeParam) -> None:
        if node.default is not None:
            self._see("type parameter default", (3, 13))

    def visit_TemplatedString(self, node: cst.TemplatedString) -> None:
        self._see("template string", (3, 14))

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if isinstance(node.type, cst.Tuple) and not node.type.lpar:
            last = node.type.elements[-1].value
            if node.name is None and isinstance(last, cst.Name) and last.value[:1].islower():
                # `except E, e:` binds `e` in Python 2; Python 3.14 would read it as the
                # tuple `(E, e)` of exception classes, which are CapWords, not `e`
                self.python2 = "Python 2's `except E, e:` (Python 3 writes `except E as e:`)"
            else:
                self._see("except clause without parentheses", (3, 14))

    def visit_FormattedString(self, node: cst.FormattedString) -> None:
        self._fstrings += 1
        if self._fstrings == 1 and sys.version_info < (3, 12) and self.found is None:
            # PEP 701 (3.12) lifted the limits on what an f-string may hold (its own
            # quotes, backslashes, comments, line breaks): one this Python rejects is newer
            code = _EMPTY.code_for_node(node)
            try:
                cpython_ast("(\n" + code + "\n)", "<f-string>", "eval")
            except SyntaxError:
                self._see(
                    "f-string that reuses its quotes, or holds a backslash, comment or line break",
                    (3, 12),
                )
            except (ValueError, RecursionError, MemoryError):
                pass

    def leave_FormattedString(self, original_node: cst.FormattedString) -> None:
        self._fstrings -= 1


_EMPTY = cst.Module([])


def _newer_syntax(module: cst.Module) -> tuple[str, tuple[int, int]] | str | None:
    """The newest construct newer than this Python, with its version; or why the file
    is older Python (a str), or None when libcst shows nothing newer."""
    finder = _NewerSyntax()
    module.visit(finder)
    if finder.python2 is not None:
        return finder.python2
    return finder.found


# -- where libcst fails on what CPython accepts ----------------------------------


def _libcst_error(path: str, text: str, exc: Exception, tree: ast.Module | None) -> Diagnostic:
    row, column = _libcst_failure(text, tree) if tree is not None else (1, 1)
    return parse_error(
        path,
        "libcst (the parser accel-lint uses) cannot parse this statement, though CPython "
        f"accepts it ({type(exc).__name__}); no rule checked this file",
        row,
        column,
    )


def _fails(text: str) -> bool:
    try:
        cst.parse_module(text)
    except LIBCST_ERRORS:
        return True
    except RecursionError:
        return False
    return False


def _libcst_failure(text: str, tree: ast.Module) -> tuple[int, int]:
    """The statement libcst fails on: the first top-level statement that fails on its
    own (one parse of each, so the whole search costs about one parse of the file),
    then, inside it, the innermost statement whose own lines make the difference.
    libcst's own position is after the failure, often at the next statement."""
    lines = text.splitlines(keepends=True)
    for statement in tree.body:
        first, last = _lines_of(statement)
        if _fails("".join(lines[first - 1 : last])):
            own = lines[first - 1 : last]
            row, offset = _innermost(own, statement, first)
            return row, _char_column(text, row, offset)
    return 1, 1


def _lines_of(statement: ast.stmt) -> tuple[int, int]:
    decorators = getattr(statement, "decorator_list", [])
    first = min([statement.lineno, *(d.lineno for d in decorators)])
    return first, statement.end_lineno or statement.lineno


def _innermost(own: list[str], statement: ast.stmt, first: int) -> tuple[int, int]:
    """Within a failing compound statement (its lines `own`, starting at row
    `first`), descend into the body statement that still fails when every other
    body statement is replaced by `pass`; stop where the header alone fails."""
    children = _body_statements(statement)
    if not children or not all(_whole_lines(own, first, c) for c in children):
        return statement.lineno, statement.col_offset
    if _fails(_blanked(own, first, children)):
        return statement.lineno, statement.col_offset  # the header itself
    for child in children:
        others = [c for c in children if c is not child]
        if _fails(_blanked(own, first, others)):
            return _innermost(own, child, first)
    return statement.lineno, statement.col_offset


def _body_statements(statement: ast.stmt) -> list[ast.stmt]:
    found: list[ast.stmt] = []
    for name in ("body", "orelse", "finalbody"):
        value = getattr(statement, name, None)
        if isinstance(value, list):
            found.extend(s for s in value if isinstance(s, ast.stmt))
    for holder in (*getattr(statement, "handlers", []), *getattr(statement, "cases", [])):
        found.extend(holder.body)
    return found


def _whole_lines(own: list[str], first: int, statement: ast.stmt) -> bool:
    """Whether the statement (and each of its decorators) starts its line, so that
    its lines can be blanked without touching a neighbour."""
    starts = [(statement.lineno, statement.col_offset)]
    starts += [(d.lineno, d.col_offset - 1) for d in getattr(statement, "decorator_list", [])]
    return all(not own[row - first].encode("utf-8")[:offset].strip() for row, offset in starts)


def _blanked(own: list[str], first: int, statements: list[ast.stmt]) -> str:
    """`own` with each of `statements` replaced by `pass` (line count kept)."""
    out = list(own)
    for statement in statements:
        start, end = _lines_of(statement)
        line = out[start - first]
        indent = line[: len(line) - len(line.lstrip())]
        out[start - first] = f"{indent}pass\n"
        for row in range(start + 1, end + 1):
            out[row - first] = "\n"
    return "".join(out)
