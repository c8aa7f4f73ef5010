"""What a file calls, read from CPython's tree before libcst parses it.

The rule table's second prefilter: a rule that needs a call (a backward pass, a
`torch.compile`, a tensor creator whose result is moved) cannot match a file that
makes none, whatever words the file spells in docstrings and messages. CPython's
parse is already made for every file (the syntax check), and one pass over its tree
costs a small fraction of libcst's parse, which such a file is then spared.

Names are the last part of what is called (`backward` for `loss.backward()`,
`compile` for `torch.compile(m)`), decorators count as calls (`@torch.jit.script`),
so do a class's bases (building a subclass runs its base's constructor, and the
rules follow a subclass the file defines to its torch base), and a name imported or
assigned under another one counts under both (`from torch import compile as tc`,
`Loader = data.DataLoader`: calling `tc` calls `compile`, `Loader` `DataLoader`), as
the rules resolve names through imports and aliases.
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from typing import Any

from accel_lint.torch_api import CAST_METHODS

# Functions named for evaluation (after leading underscores): `facts.evaluation`'s
# test, here so that the prefilter and the rule read the same words.
EVALUATION_NAME = re.compile(r"^_*(?:eval|valid|test|predict|infer)", re.IGNORECASE)

_MOVES = frozenset({"cuda", "to"})
_CASTS = frozenset({*CAST_METHODS, "to"})


@dataclass(frozen=True)
class Called:
    names: frozenset[str]  # called functions, decorators and bases, by their last name
    moved: frozenset[str]  # calls whose result is moved: `torch.zeros(3).cuda()`, `.to(d)`
    cast: frozenset[str] = frozenset()  # calls whose result is cast: `torch.ones(3).half()`
    # calls that do not turn a bias off (no `bias=False`): a conv built with its bias
    biased: frozenset[str] = frozenset()
    # what `for` loops iterate, by last name: `parameters` for `for p in m.parameters()`,
    # `param_groups` for `for g in opt.param_groups`
    looped: frozenset[str] = frozenset()
    # a function with a `for` loop that is named for evaluation or switches a module to
    # evaluation mode (`.eval()`, `.train(...)`): what `facts.evaluation` looks for
    evaluates: bool = False
    # calls given an argument (not `*args`/`**kwargs` alone): `opt.zero_grad(True)`
    argued: frozenset[str] = frozenset()
    # the deepest nesting as libcst will see it (its recursion's limit), and the line
    # and column (in UTF-8 bytes, as CPython counts) of the deepest node
    deepest: tuple[int, int, int] = (0, 1, 0)


def _last(expr: ast.expr) -> str | None:
    if isinstance(expr, ast.Name):
        return expr.id
    if isinstance(expr, ast.Attribute):
        return expr.attr
    return None


# Nodes that hold no call, decorator or import below them: not entered (most of a
# tree's nodes are names, constants and their load/store contexts).
_NO_CALLS = (
    ast.expr_context,
    ast.operator,
    ast.boolop,
    ast.cmpop,
    ast.unaryop,
    ast.Name,
    ast.Constant,
)
# the leaves among them: as deep as their parent's operands (operators and contexts
# have no depth of their own)
_LEAVES = (ast.Name, ast.Constant)
_FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _node_types(root: type) -> set[type]:
    found = {root}
    subclasses: list[type] = root.__subclasses__()
    for sub in subclasses:
        found |= _node_types(sub)
    return found


# The walk decides by type, one lookup per child (CPython builds only these classes):
# the nodes it enters, and the leaves it enters only when they would be the deepest.
_ENTERED = frozenset(t for t in _node_types(ast.AST) if not issubclass(t, _NO_CALLS))
_LEAF_TYPES = frozenset(t for t in _node_types(ast.AST) if issubclass(t, _LEAVES))
# the nodes the pass reads something from (all others are only descended)
_READ = frozenset(
    {ast.Call, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor}
    | {ast.Assign, ast.Import, ast.ImportFrom}
)
_IMPORTS = (ast.Import, ast.ImportFrom)
_LOOPS = (ast.For, ast.AsyncFor)


class _Function:
    """What the evaluation test needs of one function (its own body, not nested ones)."""

    __slots__ = ("loops", "named", "switches")

    def __init__(self, name: str) -> None:
        self.named = EVALUATION_NAME.match(name) is not None
        self.loops = False
        self.switches = False

    def evaluates(self) -> bool:
        return self.loops and (self.named or self.switches)


def called(tree: ast.Module) -> Called:
    """What `tree` calls, and how deep it nests (`Called.deepest`): one pass.

    The depth counts a node one level below its parent, but a chain of `and`/`or`
    one level per operand (one node in CPython's tree, a nested pair per operand in
    libcst's); a leaf is entered only when it would be the deepest yet."""
    names: set[str] = set()
    moved: set[str] = set()
    cast: set[str] = set()
    biased: set[str] = set()
    looped: set[str] = set()
    argued: set[str] = set()
    renamed: dict[str, list[str]] = {}
    functions: list[_Function] = []
    # a walk of our own: `ast.walk` enters every node through generators (the
    # language server pays this on every edit); each node with its innermost function
    # and its depth
    stack: list[tuple[ast.AST, _Function | None, int]] = [(tree, None, 1)]
    push = stack.append
    best: int = 0
    best_node: ast.AST = tree
    while stack:
        node, function, depth = stack.pop()
        if depth > best:
            best, best_node = depth, node
        kind = type(node)
        if kind not in _READ:
            pass
        elif isinstance(node, ast.Call):
            func = node.func
            name = _last(func)
            if name is not None:
                names.add(name)
                if function is not None and name in ("eval", "train"):
                    function.switches = True
                if not any(
                    k.arg == "bias" and isinstance(k.value, ast.Constant) and k.value.value is False
                    for k in node.keywords
                ):
                    biased.add(name)
                if any(not isinstance(a, ast.Starred) for a in node.args) or any(
                    k.arg is not None for k in node.keywords
                ):
                    argued.add(name)
            if isinstance(func, ast.Attribute) and isinstance(func.value, ast.Call):
                inner = _last(func.value.func)
                if inner is not None:
                    if func.attr in _MOVES:
                        moved.add(inner)
                    if func.attr in _CASTS:
                        cast.add(inner)
        elif isinstance(node, _FUNCTIONS):
            for decorator in node.decorator_list:
                name = _last(decorator)  # a decorator that is a call is a Call node
                if name is not None:
                    names.add(name)
            function = _Function(node.name)
            functions.append(function)
        elif isinstance(node, ast.ClassDef):
            for expr in (*node.decorator_list, *node.bases):
                name = _last(expr)
                if name is not None:
                    names.add(name)
        elif isinstance(node, _LOOPS):
            if function is not None:
                function.loops = True
            over = node.iter.func if isinstance(node.iter, ast.Call) else node.iter
            name = _last(over)
            if name is not None:
                looped.add(name)
        elif isinstance(node, ast.Assign):
            # `Loader = DataLoader`, `zeros = torch.zeros`: calling the alias calls it
            if len(node.targets) == 1 and isinstance(node.targets[0], ast.Name):
                name = _last(node.value)
                if name is not None:
                    renamed.setdefault(node.targets[0].id, []).append(name)
        elif isinstance(node, _IMPORTS):
            for alias in node.names:
                if alias.asname is not None:
                    renamed.setdefault(alias.asname, []).append(alias.name.rsplit(".", 1)[-1])
        child = depth + (len(node.values) - 1 if kind is ast.BoolOp else 1)  # type: ignore[attr-defined]
        for field in node._fields:
            value: Any = getattr(node, field, None)
            value_kind = type(value)
            if value_kind is list:
                for item in value:
                    if type(item) in _ENTERED or (child > best and type(item) in _LEAF_TYPES):
                        push((item, function, child))
            elif value_kind in _ENTERED or (child > best and value_kind in _LEAF_TYPES):
                push((value, function, child))
    return Called(
        frozenset(_with_originals(names, renamed)),
        frozenset(_with_originals(moved, renamed)),
        frozenset(_with_originals(cast, renamed)),
        frozenset(_with_originals(biased, renamed)),
        frozenset(looped),
        any(f.evaluates() for f in functions),
        frozenset(_with_originals(argued, renamed)),
        (best, getattr(best_node, "lineno", 1), getattr(best_node, "col_offset", 0)),
    )


def _with_originals(spelled: set[str], renamed: dict[str, list[str]]) -> set[str]:
    """`spelled` and what each name in it stands for, through chains of aliases."""
    out = set(spelled)
    todo = [n for n in spelled if n in renamed]
    while todo:
        for original in renamed[todo.pop()]:
            if original not in out:
                out.add(original)
                if original in renamed:
                    todo.append(original)
    return out
