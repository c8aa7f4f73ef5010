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
    # what `Loops.accumulations` starts from: an optimizer step (`x.step(...)`) inside
    # an `if` in a loop or a function (a counter test), or a counted `for`
    # (`range(k)`, `.chunk(k)`, `tqdm(range(k))`) inside a loop whose body steps
    # outside it (the micro-batch loop). A superset: any such `if`, any loop around,
    # any `.step`
    accumulates: bool = True
    # ACL307's shape: inside a loop, `t += x`, `t = t + x` or `l.append(x)` (`x` alone,
    # or times or over something), where `x` is read by a backward call
    # (`x.backward()`, `accelerator.backward(x)`, `scaler.scale(x)`, apex's
    # `scale_loss(x, ...)`) or bound to the result of a call to a function the file
    # defines (which may backpropagate and return it)
    accumulates_loss: bool = True


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


def node_types(root: type) -> set[type]:
    """`root` and every class derived from it, however indirectly."""
    found = {root}
    subclasses: list[type] = root.__subclasses__()
    for sub in subclasses:
        found |= node_types(sub)
    return found


# The walk decides by type, one lookup per child (CPython builds only these classes):
# the nodes it enters, and the leaves it enters only when they would be the deepest.
_ENTERED = frozenset(t for t in node_types(ast.AST) if not issubclass(t, _NO_CALLS))
_LEAF_TYPES = frozenset(t for t in node_types(ast.AST) if issubclass(t, _LEAVES))
# the nodes the pass reads something from (all others are only descended)
_READ = frozenset(
    {ast.Call, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.AsyncFor}
    | {ast.Assign, ast.Import, ast.ImportFrom, ast.AugAssign, ast.Expr}
)
# nodes whose `body` and `orelse` run in another context (inside a loop, under a test)
_SCOPING = frozenset({ast.For, ast.AsyncFor, ast.While, ast.If})
_BODIES = frozenset({"body", "orelse"})
_IMPORTS = (ast.Import, ast.ImportFrom)
_LOOPS = (ast.For, ast.AsyncFor)


class _Where:
    """Where a node is: its innermost function, and the loops whose bodies and
    whether an `if` holds it (across functions: the shapes are a superset)."""

    __slots__ = ("function", "in_if", "loops")

    def __init__(self, function: _Function | None, loops: tuple[ast.AST, ...], in_if: bool) -> None:
        self.function = function
        self.loops = loops
        self.in_if = in_if


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
    shapes = _Shapes()
    # a walk of our own: `ast.walk` enters every node through generators (the
    # language server pays this on every edit); each node with where it is and its
    # depth
    stack: list[tuple[ast.AST, _Where, int]] = [(tree, _Where(None, (), False), 1)]
    push = stack.append
    best: int = 0
    best_node: ast.AST = tree
    while stack:
        node, where, depth = stack.pop()
        if depth > best:
            best, best_node = depth, node
        kind = type(node)
        function = where.function
        if kind not in _READ:
            pass
        elif isinstance(node, ast.Call):
            func = node.func
            name = _last(func)
            if name is not None:
                names.add(name)
                shapes.calls.setdefault(name, []).append(node)
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
            if isinstance(func, ast.Attribute):
                if func.attr == "step":
                    shapes.steps.append(where.loops)
                    shapes.stepped_in_if = shapes.stepped_in_if or where.in_if
                if isinstance(func.value, ast.Call):
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
            shapes.defined.add(node.name)
            where = _Where(function, where.loops, where.in_if)
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
            if where.loops:
                counter = _counter(node.iter)
                if counter is not None:
                    shapes.counted.append((node, where.loops[-1], counter))
        elif isinstance(node, _IMPORTS):
            for alias in node.names:
                if alias.asname is not None:
                    renamed.setdefault(alias.asname, []).append(alias.name.rsplit(".", 1)[-1])
        elif isinstance(node, (ast.Assign, ast.AugAssign, ast.Expr)):
            if where.loops:
                shapes.accumulated.update(_accumulated(node))
            if isinstance(node, ast.Assign):
                # `Loader = DataLoader`, `zeros = torch.zeros`: calling the alias calls it
                targets = node.targets
                if len(targets) == 1 and isinstance(targets[0], ast.Name):
                    name = _last(node.value)
                    if name is not None:
                        renamed.setdefault(targets[0].id, []).append(name)
            if not isinstance(node, ast.Expr):
                shapes.bound_to_call(node)
        child = depth + (len(node.values) - 1 if kind is ast.BoolOp else 1)  # type: ignore[attr-defined]
        inside = where
        if kind in _SCOPING:
            loops = (*where.loops, node) if kind is not ast.If else where.loops
            # an `if` counts inside a loop or a function (where a step's counter test
            # is), not at the module's top level (`if __name__ == "__main__":`)
            test = kind is ast.If and (function is not None or bool(where.loops))
            inside = _Where(function, loops, where.in_if or test)
        for field in node._fields:
            value: Any = getattr(node, field, None)
            value_kind = type(value)
            at = inside if field in _BODIES else where
            if value_kind is list:
                for item in value:
                    if type(item) in _ENTERED or (child > best and type(item) in _LEAF_TYPES):
                        push((item, at, child))
            elif value_kind in _ENTERED or (child > best and value_kind in _LEAF_TYPES):
                push((value, at, child))
    accumulates, accumulates_loss = shapes.found(renamed)
    return Called(
        frozenset(_with_originals(names, renamed)),
        frozenset(_with_originals(moved, renamed)),
        frozenset(_with_originals(cast, renamed)),
        frozenset(_with_originals(biased, renamed)),
        frozenset(looped),
        any(f.evaluates() for f in functions),
        frozenset(_with_originals(argued, renamed)),
        (best, getattr(best_node, "lineno", 1), getattr(best_node, "col_offset", 0)),
        accumulates,
        accumulates_loss,
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


# `for` iterables that count micro-batches (`facts.loops`: `_counts`, `_chunk_count`)
_COUNTED = frozenset({"range", "count", "trange", "chunk", "zip"})
_COUNTED_WRAPPERS = frozenset({"tqdm", "enumerate", "track"})
# calls whose arguments or receiver a backward pass reads (`Autograd._backward`)
_BACKWARD_READERS = frozenset({"backward", "manual_backward", "scale_loss"})


class _Shapes:
    """What `Called.accumulates` and `Called.accumulates_loss` are made from."""

    __slots__ = (
        "accumulated",
        "calls",
        "counted",
        "defined",
        "from_calls",
        "stepped_in_if",
        "steps",
    )

    def __init__(self) -> None:
        self.stepped_in_if = False
        self.steps: list[tuple[ast.AST, ...]] = []  # the loops around each `.step(...)`
        # (a loop over a call that may count, the loop around it, that call's name)
        self.counted: list[tuple[ast.AST, ast.AST, str]] = []
        self.accumulated: set[str] = set()  # names accumulated in a loop
        self.calls: dict[str, list[ast.Call]] = {}  # every call, by last name
        self.from_calls: list[tuple[set[str], str]] = []  # names bound to a call's result
        self.defined: set[str] = set()  # the file's functions and methods

    def bound_to_call(self, node: ast.Assign | ast.AugAssign) -> None:
        if not isinstance(node.value, ast.Call):
            return
        name = _last(node.value.func)
        if name is not None:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            bound = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
            self.from_calls.append((bound, name))

    def found(self, renamed: dict[str, list[str]]) -> tuple[bool, bool]:
        def means(name: str, wanted: frozenset[str] | set[str]) -> bool:
            return name in wanted or (
                name in renamed and bool(_with_originals({name}, renamed) & wanted)
            )

        accumulates = self.stepped_in_if or any(
            around in chain and loop not in chain
            for loop, around, name in self.counted
            if means(name, _COUNTED)
            for chain in self.steps
        )
        if not self.accumulated:
            return accumulates, False
        read: set[str] = set()
        for name, calls in self.calls.items():
            if means(name, _BACKWARD_READERS):
                for call in calls:
                    read.update(n.id for n in ast.walk(call) if isinstance(n, ast.Name))
        accumulates_loss = bool(self.accumulated & read) or any(
            bound & self.accumulated and means(name, self.defined)
            for bound, name in self.from_calls
        )
        return accumulates, accumulates_loss


def _operand(value: ast.expr) -> str | None:
    """The name accumulated (ACL307's `_loss_operand`): `x`, `x * n`, `n * x`, `x / n`."""
    if isinstance(value, ast.Name):
        return value.id
    if isinstance(value, ast.BinOp):
        if isinstance(value.op, (ast.Mult, ast.Div)) and isinstance(value.left, ast.Name):
            return value.left.id
        if isinstance(value.op, ast.Mult) and isinstance(value.right, ast.Name):
            return value.right.id
    return None


def _accumulated(node: ast.AST) -> list[str]:
    """The names a statement accumulates (both sides of `t = a + b`: either may be `t`)."""
    if isinstance(node, ast.AugAssign):
        name = _operand(node.value) if isinstance(node.op, ast.Add) else None
        return [name] if name is not None else []
    if isinstance(node, ast.Assign):
        value = node.value
        if (
            len(node.targets) == 1
            and isinstance(value, ast.BinOp)
            and isinstance(value.op, ast.Add)
        ):
            return [n for n in (_operand(value.left), _operand(value.right)) if n is not None]
        return []
    if isinstance(node, ast.Expr) and isinstance(node.value, ast.Call):
        call = node.value
        if (
            isinstance(call.func, ast.Attribute)
            and call.func.attr == "append"
            and len(call.args) == 1
            and not call.keywords
            and not isinstance(call.args[0], ast.Starred)
        ):
            name = _operand(call.args[0])
            return [name] if name is not None else []
    return []


def _counter(iterable: ast.expr) -> str | None:
    """The name of what a `for` iterates when it may count: a call with arguments
    (`range(k)`, `x.chunk(k)`, `zip(...)`), seen through `tqdm(...)`, `enumerate(...)`
    and `track(...)`; whether that name counts is known once every alias is."""
    if not isinstance(iterable, ast.Call) or not (iterable.args or iterable.keywords):
        return None
    expr: ast.expr = iterable
    while isinstance(expr, ast.Call) and _last(expr.func) in _COUNTED_WRAPPERS and expr.args:
        expr = expr.args[0]
        if isinstance(expr, ast.Starred):
            expr = expr.value
    return _last(expr.func) if isinstance(expr, ast.Call) else None
