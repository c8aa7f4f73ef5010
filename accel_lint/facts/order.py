"""Source order inside one scope's body, and which bindings of a name reach a read.
Built once per file (`Orders.of(facts)`); each scope's order on first request.

`Order` ranks every node of a def's (or the module's) body in source order, with
the branch region it sits in: the body of an `if`, its `else`, a loop's body, an
exception handler, a conditional expression's branch each open a region of their
own, nested in the region around them. `if __name__ == "__main__":` opens none: it
is the script itself.

`reaching(name, scope)` answers "which bindings of this name can the value read
here come from?", by position: a name bound several times in one function (a
checkpoint loaded, then rebuilt as a dict for saving) is judged by the binding
that reaches the read - the last one before it that runs whenever the read runs,
and whatever a branch or a loop may have bound after that one.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts.file import FileFacts
from accel_lint.facts.syntax import children, is_main_test
from accel_lint.names import Binding, Scope
from accel_lint.walk import child_fields, is_node

# Statements whose body may not run (or runs several times) where they stand.
_BRANCHES = (cst.If, cst.For, cst.While, cst.Try, cst.TryStar, cst.Match)
_LOOPS = (cst.For, cst.While)
# by type: `isinstance` against libcst's classes goes through `ABCMeta` (walk.NODE_TYPES)
_BRANCH_TYPES = frozenset(_BRANCHES)
# Nodes whose insides run elsewhere, and those that open branch regions of their own.
_OPAQUE = frozenset({cst.FunctionDef, cst.ClassDef, cst.Lambda})
_SPECIAL = frozenset({cst.IfExp, cst.BooleanOperation, cst.CompFor})
# Expressions whose names are read in a scope of their own.
_OWN_SCOPES = (cst.Lambda, cst.ListComp, cst.SetComp, cst.DictComp, cst.GeneratorExp)


@dataclass(frozen=True, eq=False)
class Region:
    """A block that runs only on some paths (or several times), inside `parent`."""

    parent: Region | None

    def encloses(self, other: Region) -> bool:
        region: Region | None = other
        while region is not None:
            if region is self:
                return True
            region = region.parent
        return False


@dataclass(frozen=True)
class Placed:
    """Where a node stands in its scope's body: its rank in source order, the rank of
    the last node inside it, and the branch region it sits in."""

    order: int
    conditional: bool
    region: Region
    end: int = -1


class Order:
    """Source order and branch regions of every node of one scope's body (nested
    defs, classes and lambdas left out: their bodies run elsewhere)."""

    def __init__(self, root: cst.CSTNode) -> None:
        # plain dicts, not an object per node: a long function has many nodes
        self._rank: dict[cst.CSTNode, int] = {}
        self._region: dict[cst.CSTNode, Region] = {}
        self.root = Region(None)
        self._loops: list[cst.For | cst.While] = []
        if isinstance(root, cst.Module):
            for statement in root.body:
                self._visit(statement, self.root)
        elif isinstance(root, cst.FunctionDef):
            self._visit(root.body, self.root)

    def _visit(self, node: cst.CSTNode, region: Region) -> None:
        # iterative: a long module must not reach the recursion limit
        rank, regions = self._rank, self._region
        stack: list[tuple[cst.CSTNode, Region]] = [(node, region)]
        while stack:
            current, reg = stack.pop()
            rank[current] = len(rank)
            regions[current] = reg
            kind = type(current)
            if kind in _OPAQUE:
                continue
            if kind in _SPECIAL or kind in _BRANCH_TYPES:
                if kind is cst.For or kind is cst.While:
                    self._loops.append(current)  # type: ignore[arg-type]
                stack.extend(reversed(list(self._children(current, reg))))
                continue
            # the common case, inlined: every child in the same region
            for name in reversed(child_fields(kind)):
                value = getattr(current, name)
                if type(value) is list or type(value) is tuple:
                    stack.extend((c, reg) for c in reversed(value) if is_node(c))
                elif is_node(value):
                    stack.append((value, reg))

    @staticmethod
    def _children(node: cst.CSTNode, region: Region) -> Iterator[tuple[cst.CSTNode, Region]]:
        if isinstance(node, cst.Try):
            yield node.body, region
            for other in (*node.handlers, node.orelse, node.finalbody):
                if other is not None:
                    yield other, Region(region)
            return
        if isinstance(node, cst.If) and is_main_test(node.test):
            # `if __name__ == "__main__":` is the script itself; its `else` never runs
            yield node.body, region
            return
        if isinstance(node, _BRANCHES):
            for child in children(node):
                # the test of an `if` / `while` and the iterable of a `for` always run
                always = child is getattr(node, "test", None) or child is getattr(
                    node, "iter", None
                )
                yield child, region if always else Region(region)
            return
        # a conditional expression, `and` / `or`, a comprehension's `for`
        yield from ((child, Region(region)) for child in children(node))

    def _end(self, node: cst.CSTNode) -> int:
        """The rank of the last node inside `node` (its last child's last child...)."""
        current = node
        while type(current) not in _OPAQUE:
            last = None
            for child in children(current):
                last = child
            if last is None or last not in self._rank:
                break
            current = last
        return self._rank[current]

    @property
    def loops(self) -> list[Placed]:
        return [p for p in map(self.place, self._loops) if p is not None]

    def place(self, node: cst.CSTNode | None) -> Placed | None:
        rank = self._rank.get(node) if node is not None else None
        if rank is None:
            return None
        assert node is not None
        region = self._region[node]
        return Placed(rank, region is not self.root, region, self._end(node))


class Orders:
    @classmethod
    def of(cls, facts: FileFacts) -> Orders:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._orders: dict[cst.CSTNode, Order] = {}

    def order(self, scope: Scope) -> Order | None:
        """The statement order of the def (or module) that `scope` belongs to."""
        owner = scope.function_scope()
        while owner.kind == "class" and owner.parent is not None:
            owner = owner.parent
        root = owner.node
        if root is None or isinstance(root, cst.Lambda):
            return None
        found = self._orders.get(root)
        if found is None:
            found = self._orders[root] = Order(root)
        return found

    def reaching(self, name: cst.Name, scope: Scope) -> list[Binding] | None:
        """The bindings of `name` whose value can be the one read at `name` (a node of
        the file, read in `scope`); None when the name is unbound. Every binding when
        the read and the bindings are not all in one body (a closure, a `global`)."""
        bindings = scope.lookup(name.value)
        if not bindings or len(bindings) == 1:
            return bindings
        owner = bindings[0].scope
        if owner is None or owner.kind == "class" or scope.function_scope() is not owner:
            return bindings
        if any(b.scope is not owner for b in bindings):
            return bindings
        order = self.order(owner)
        here = order.place(name) if order is not None else None
        if order is None or here is None:
            return bindings
        return _reaching(bindings, order, here)

    def comes_from(
        self, expr: cst.BaseExpression, scope: Scope, block: cst.CSTNode, depth: int = 0
    ) -> bool:
        """Whether a value `expr` reads was computed inside `block` (a node of the same
        body): a name whose reaching binding stands in `block`, or is assigned from such
        a name (`out = model(x)` inside an autocast block, `loss = criterion(out, y)`
        after it: `loss` comes from the block), a few assignments deep."""
        order = self.order(scope)
        inside = order.place(block) if order is not None else None
        if order is None or inside is None or depth > 4:
            return False
        for name in _names_read(expr):
            for binding in self.reaching(name, scope) or ():
                if binding.scope is not scope.function_scope():
                    continue
                placed = order.place(binding.node)
                if placed is None:
                    continue
                if inside.order < placed.order <= inside.end:
                    return True
                value = binding.value
                if (
                    value is not None
                    and isinstance(binding.node, (cst.Assign, cst.AnnAssign))
                    and self.comes_from(value, scope, block, depth + 1)
                ):
                    return True
        return False


def _names_read(expr: cst.CSTNode) -> list[cst.Name]:
    """The names an expression reads (not attribute labels, not inside lambdas)."""
    out: list[cst.Name] = []
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Name):
            out.append(node)
        elif isinstance(node, (cst.Attribute, cst.Arg)):
            stack.append(node.value)
        elif not isinstance(node, _OWN_SCOPES):
            stack.extend(children(node))
    return out


def _reaching(bindings: list[Binding], order: Order, here: Placed) -> list[Binding]:
    before: list[tuple[int, Binding, Placed | None]] = []
    later: list[Binding] = []
    loops = order.loops
    for binding in bindings:
        node = binding.node
        if isinstance(node, cst.Param):
            before.append((-1, binding, None))  # bound before the body runs
            continue
        placed = _effect(node, order)
        if placed is None:
            return bindings  # bound where this order does not see
        # a loop's target and an `except ... as e` bind before their body runs
        rank = placed.order if isinstance(node, (cst.For, cst.ExceptHandler)) else placed.end
        if rank < here.order:
            before.append((rank, binding, placed))
        elif any(
            loop.order < here.order <= loop.end and loop.order < rank <= loop.end for loop in loops
        ):
            later.append(binding)  # a loop around both carries it to the next read
    before.sort(key=lambda item: item[0])
    start = 0
    for i, (_, _, placed) in enumerate(before):
        if placed is None or placed.region.encloses(here.region):
            start = i  # runs whenever the read runs: hides every binding before it
    found = [b for _, b, _ in before[start:]] + later
    return found or bindings


def _effect(node: cst.CSTNode | None, order: Order) -> Placed | None:
    """Where a binding takes effect: a `for` target binds in the loop's body."""
    if isinstance(node, cst.For):
        body = order.place(node.body)
        whole = order.place(node)
        if body is None or whole is None:
            return None
        return Placed(whole.order, body.conditional, body.region, whole.end)
    return order.place(node)
