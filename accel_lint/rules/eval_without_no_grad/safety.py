"""Is `@torch.no_grad()` on an evaluation function invisible to its callers? It is
when the function hands back nothing computed from the module's outputs except
plain numbers: its returns, and what it stores outside itself, are literals,
`.item()` / `.tolist()` / `.numpy()` results, sizes, numpy or math results, or
arithmetic on those. A tensor that leaves the function (returned, yielded, appended
to a caller's list, stored on `self`, saved) would lose its `grad_fn` and its
`requires_grad`, which a caller may read.

The analysis is conservative: what it cannot read is not plain, which only makes a
fix unsafe, never wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.syntax import last_name
from accel_lint.names import LOCAL, Scope, qualified_names
from accel_lint.walk import all_children

# Results that are never tensors holding a graph, whatever they are called on.
_PLAIN_METHODS = frozenset({"item", "tolist", "numpy", "size", "numel", "dim", "nelement"})
_PLAIN_ATTRIBUTES = frozenset({"shape", "ndim", "dtype", "device", "is_cuda", "requires_grad"})
# Builtins whose result is a number, a string or a bool, whatever they are given.
_PLAIN_BUILTINS = frozenset(
    f"builtins.{n}"
    for n in ("float", "int", "len", "round", "str", "bool", "repr", "format", "isinstance")
)
# Modules whose results cannot hold an autograd graph.
_PLAIN_MODULES = (
    "numpy",
    "math",
    "statistics",
    "time",
    "datetime",
    "os",
    "json",
    "sklearn",
    "scipy",
    "pandas",
    "logging",
)
# Calls that only read what they are given (print it, log it, write it as text).
_READERS = frozenset(
    {
        "print",
        "info",
        "debug",
        "warning",
        "error",
        "write",
        "add_scalar",
        "add_scalars",
        "log",
        "log_dict",
        "set_postfix",
        "set_description",
        "format",
    }
)
_COMPREHENSIONS = (cst.ListComp, cst.SetComp, cst.GeneratorExp, cst.DictComp)


class ReturnsPlainNumbers:
    """Answers for one function: does it hand back only plain numbers?"""

    def __init__(self, facts: FileFacts, func: cst.FunctionDef) -> None:
        self.facts = facts
        self.func = func
        self.scope = facts.scope_of[func]
        self._statements = list(_own_nodes(func))  # all read in the function's scope
        self._memo: dict[str, bool] = {}
        # where each local name is written: assignments, method calls, stores into it
        self._writes: dict[str, list[cst.CSTNode]] = {}
        for node in self._statements:
            for target in _write_targets(node):
                root = _root_name(target)
                if root is not None:
                    self._writes.setdefault(root, []).append(node)

    def holds(self) -> bool:
        scope = self.scope
        for node in self._statements:
            if isinstance(node, (cst.Yield, cst.Await)):
                return False
            if isinstance(node, cst.Return):
                if node.value is not None and not self.plain(node.value, scope):
                    return False
            elif not self._local_effect(node, scope):
                return False
        return True

    def _local_effect(self, node: cst.CSTNode, scope: Scope) -> bool:
        """A store or a call whose effect stays inside the function, or keeps only plain
        values outside it."""
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            targets = (
                [t.target for t in node.targets] if isinstance(node, cst.Assign) else [node.target]
            )
            if all(self._is_local(t) for target in targets for t in _flatten(target)):
                return True
            return node.value is None or self.plain(node.value, scope)
        if isinstance(node, cst.Call):
            func = node.func
            if last_name(func) in _READERS:
                return True
            if isinstance(func, cst.Attribute) and self._is_local(func.value):
                return True  # judged where the local name is used
            return all(self.plain(a.value, scope) for a in node.args)
        return True

    def _is_local(self, target: cst.BaseExpression) -> bool:
        """A name (or a part of one) bound in this function, not a parameter."""
        root = _root_name(target)
        if root is None:
            return False
        bindings = self.scope.lookup(root) or []
        return bool(bindings) and all(
            b.scope is self.scope and not isinstance(b.node, cst.Param) for b in bindings
        )

    # -- plain values ------------------------------------------------------------

    def plain(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        if isinstance(
            expr,
            (
                cst.Integer,
                cst.Float,
                cst.Imaginary,
                cst.SimpleString,
                cst.ConcatenatedString,
                cst.FormattedString,
            ),
        ):
            return True
        if isinstance(expr, cst.Name):
            return self._plain_name(expr, scope)
        if isinstance(expr, cst.Attribute):
            return expr.attr.value in _PLAIN_ATTRIBUTES or self.plain(expr.value, scope)
        if isinstance(expr, cst.Subscript):
            return self.plain(expr.value, scope)
        if isinstance(expr, cst.Call):
            return self._plain_call(expr, scope)
        if isinstance(expr, cst.BinaryOperation):
            return self.plain(expr.left, scope) and self.plain(expr.right, scope)
        if isinstance(expr, cst.BooleanOperation):
            return self.plain(expr.left, scope) and self.plain(expr.right, scope)
        if isinstance(expr, cst.UnaryOperation):
            return self.plain(expr.expression, scope)
        if isinstance(expr, cst.Comparison):
            return self.plain(expr.left, scope) and all(
                self.plain(c.comparator, scope) for c in expr.comparisons
            )
        if isinstance(expr, cst.IfExp):
            return self.plain(expr.body, scope) and self.plain(expr.orelse, scope)
        if isinstance(expr, (cst.Tuple, cst.List, cst.Set)):
            return all(
                not isinstance(e, cst.StarredElement) and self.plain(e.value, scope)
                for e in expr.elements
            )
        if isinstance(expr, cst.Dict):
            return all(
                isinstance(e, cst.DictElement)
                and self.plain(e.key, scope)
                and self.plain(e.value, scope)
                for e in expr.elements
            )
        if isinstance(expr, _COMPREHENSIONS):
            inner = self.facts.scope_of.get(expr, scope)
            if isinstance(expr, cst.DictComp):
                return self.plain(expr.key, inner) and self.plain(expr.value, inner)
            return self.plain(expr.elt, inner)
        return False

    def _plain_name(self, name: cst.Name, scope: Scope) -> bool:
        if name.value in ("True", "False", "None"):
            return True
        bindings = scope.lookup(name.value)
        if not bindings:
            return False
        if any(b.scope is not self.scope for b in bindings):
            # a comprehension's variable, a global or a closure's: not computed here
            # unless the function stores into it, which `holds` judges as a store
            return all(b.scope is not None and b.scope.kind == "module" for b in bindings)
        known = self._memo.get(name.value)
        if known is not None:
            return known
        self._memo[name.value] = True  # a self-referencing update (`n = n + 1`) is plain
        result = all(self._plain_binding(b.node, scope) for b in bindings) and all(
            self._plain_write(node, scope) for node in self._writes.get(name.value, ())
        )
        self._memo[name.value] = result
        return result

    def _plain_binding(self, node: cst.CSTNode | None, scope: Scope) -> bool:
        if isinstance(node, (cst.Assign, cst.AugAssign)):
            return self.plain(node.value, scope)
        if isinstance(node, cst.AnnAssign):
            return node.value is None or self.plain(node.value, scope)
        return isinstance(node, (cst.Import, cst.ImportFrom))

    def _plain_write(self, node: cst.CSTNode, scope: Scope) -> bool:
        """A write into a local name (`preds.append(x)`, `stats["acc"] = x`)."""
        if isinstance(node, cst.Call):
            return all(self.plain(a.value, scope) for a in node.args)
        if isinstance(node, (cst.Assign, cst.AugAssign, cst.AnnAssign)):
            return node.value is None or self.plain(node.value, scope)
        return False

    def _plain_call(self, call: cst.Call, scope: Scope) -> bool:
        func = call.func
        if isinstance(func, cst.Attribute) and func.attr.value in _PLAIN_METHODS:
            return True
        names = qualified_names(func, scope)
        if names and LOCAL not in names:
            if names <= _PLAIN_BUILTINS:
                return True
            if all(n.startswith(_PLAIN_MODULES) for n in names):
                return True
            # a callable of another module (`torch.cat`, `max`, `AverageMeter`): plain
            # when all it is given is
            return all(self.plain(a.value, scope) for a in call.args)
        if isinstance(func, cst.Name):
            bindings = scope.lookup(func.value)
            if bindings and all(isinstance(b.node, cst.ClassDef) for b in bindings):
                return all(self.plain(a.value, scope) for a in call.args)
            return False
        if isinstance(func, cst.Attribute):  # a method of a plain local object
            return self.plain(func.value, scope) and all(
                self.plain(a.value, scope) for a in call.args
            )
        return False


def _own_nodes(func: cst.FunctionDef) -> Iterator[cst.CSTNode]:
    """Returns, yields, stores and expression-statement calls of `func`'s own body (not
    of nested defs or classes)."""
    stack: list[cst.CSTNode] = [func.body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(
            node, (cst.Return, cst.Yield, cst.Await, cst.Assign, cst.AugAssign, cst.AnnAssign)
        ):
            yield node
        elif isinstance(node, cst.Expr) and isinstance(node.value, cst.Call):
            yield node.value
        stack.extend(all_children(node))


def _write_targets(node: cst.CSTNode) -> list[cst.BaseExpression]:
    """What a statement writes into: assignment targets, or a method call's receiver."""
    if isinstance(node, cst.Assign):
        parts = [p for t in node.targets for p in _flatten(t.target)]
        return [p for p in parts if not isinstance(p, cst.Name)]
    if isinstance(node, (cst.AugAssign, cst.AnnAssign)):
        return [] if isinstance(node.target, cst.Name) else [node.target]
    if isinstance(node, cst.Call) and isinstance(node.func, cst.Attribute) and node.args:
        return [node.func.value]
    return []


def _flatten(target: cst.BaseExpression) -> list[cst.BaseExpression]:
    """The single targets of `a, (b, c) = ...` (starred ones included)."""
    if isinstance(target, (cst.Tuple, cst.List)):
        return [
            part
            for element in target.elements
            for part in _flatten(
                element.value.value
                if isinstance(element.value, cst.StarredElement)
                else element.value
            )
        ]
    if isinstance(target, cst.StarredElement):
        return _flatten(target.value)
    return [target]


def _root_name(expr: cst.BaseExpression) -> str | None:
    while isinstance(expr, (cst.Attribute, cst.Subscript)):
        expr = expr.value
    return expr.value if isinstance(expr, cst.Name) else None
