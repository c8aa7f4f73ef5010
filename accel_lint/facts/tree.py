"""The file's tree as the walk does not record it: each node's parent, and every
read of a name with the scope it is read in. Built by one extra pass over the
module, only for files whose rules ask (`Tree.of(facts)`), so that an analysis
can follow one object through every place the file mentions it."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.file import FileFacts
from accel_lint.names import Binding, Scope
from accel_lint.walk import NODE_TYPES, child_fields, is_node_type


class Tree:
    @classmethod
    def of(cls, facts: FileFacts) -> Tree:
        return facts.shared(cls)

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._parent: dict[cst.CSTNode, cst.CSTNode] = {}
        self._names: dict[str, list[tuple[cst.Name, Scope]]] = {}
        self._labels: set[str] = set()  # attribute, def and parameter names
        stack: list[tuple[cst.CSTNode, Scope]] = [(facts.module, facts.module_scope)]
        scope_of = facts.scope_of
        node_types = NODE_TYPES
        while stack:
            node, scope = stack.pop()
            inner = scope_of.get(node, scope)
            # by type: a failing `isinstance` against libcst's classes goes through ABCMeta
            if type(node) is cst.Name:
                self._names.setdefault(node.value, []).append((node, scope))
            elif type(node) is cst.Attribute:
                self._labels.add(node.attr.value)
            elif type(node) is cst.FunctionDef or type(node) is cst.Param:
                self._labels.add(node.name.value)
            # pushed in reverse so that nodes are met in source order
            for name in reversed(child_fields(type(node))):
                value = getattr(node, name)
                kind = type(value)
                children = value if kind is list or kind is tuple else (value,)
                for child in reversed(children):
                    found = node_types.get(type(child))
                    if found or (found is None and is_node_type(type(child))):
                        self._parent[child] = node
                        # a def's decorators and defaults belong to the enclosing scope
                        stack.append((child, scope if _outside(node, child) else inner))

    def parent(self, node: cst.CSTNode) -> cst.CSTNode | None:
        return self._parent.get(node)

    def ancestors(self, node: cst.CSTNode) -> list[cst.CSTNode]:
        out: list[cst.CSTNode] = []
        current = self._parent.get(node)
        while current is not None:
            out.append(current)
            current = self._parent.get(current)
        return out

    def statement_of(self, node: cst.CSTNode) -> cst.BaseStatement | None:
        """The innermost statement (a line or a compound statement) holding `node`."""
        current: cst.CSTNode | None = node
        while current is not None and not isinstance(current, cst.BaseStatement):
            current = self._parent.get(current)
        return current

    def names(self, name: str) -> list[tuple[cst.Name, Scope]]:
        """Every `Name` node spelled `name` that is a use (not an attribute's or a
        keyword's label, not an import), with the scope it is read in."""
        return self._names.get(name, [])

    def spelled(self) -> set[str]:
        """Every identifier the file spells: names, attributes, defs and parameters."""
        return self._labels | self._names.keys()

    def references(self, binding: Binding) -> list[tuple[cst.Name, Scope]]:
        """Reads (and rebinds) of the name whose visible bindings include `binding`."""
        out = []
        for node, scope in self.names(binding.name):
            bindings = scope.lookup(binding.name)
            if bindings and any(b is binding for b in bindings):
                out.append((node, scope))
        return out


def _outside(parent: cst.CSTNode, child: cst.CSTNode) -> bool:
    if type(parent) is cst.FunctionDef:
        return child is not parent.body and child is not parent.params
    if type(parent) is cst.ClassDef:
        return child is not parent.body
    return False
