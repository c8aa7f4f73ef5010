"""What the ACL201 walk collects, and the questions every later step asks of it:
which conv or norm constructor built the module an expression denotes (`built_by`,
`resolve`), who else refers to a name (`refs_within`) and which classes derive
from a class (`descendants`). The walk only records nodes with their scope;
everything is resolved after it, once all bindings are known."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.facts import Guard
from accel_lint.names import LOCAL, Binding, Scope, qualified_names, single_binding
from accel_lint.rules.conv_bias_before_norm.classes import NORM, SPELLINGS, short
from accel_lint.rules.conv_bias_before_norm.syntax import is_self, unwrap
from accel_lint.torch_api import CONV


@dataclass(eq=False)
class Ctor:
    call: cst.Call
    scope: Scope
    conv: bool  # else a norm
    cls: str  # short class name, for messages


@dataclass(frozen=True)
class Holder:
    """How a constructed module is reached: inline, `self.<attr>` of a class, or a name."""

    kind: str  # "inline", "attr", "name"
    cls: cst.ClassDef | None = None
    attr: str = ""
    binding: Binding | None = None


INLINE = Holder("inline")


@dataclass
class Edge:
    use: cst.BaseExpression  # the expression that denotes the conv where it feeds the norm
    holder: Holder
    norm: Ctor
    norm_holder: Holder
    # adjacent only on one branch of an `if` (the `if`, True for its body) in a list
    # of layers; None when always
    when: tuple[cst.If | cst.IfExp, bool] | None = None


@dataclass(eq=False)
class Collected:
    """Nodes the walk records, each with the scope (and class) it was seen in."""

    norm_spelled: bool = False
    alias_of: list[tuple[str, str]] = field(default_factory=list)  # (local, imported/assigned)
    calls: list[tuple[cst.Call, Scope, cst.ClassDef | None]] = field(default_factory=list)
    blocks: list[tuple[Sequence[cst.CSTNode], Scope, cst.ClassDef | None]] = field(
        default_factory=list
    )
    classes: list[tuple[cst.ClassDef, Scope]] = field(default_factory=list)
    # every `self.<attr>` node of each class, and the stores among them (value or None)
    self_attrs: dict[cst.ClassDef, dict[str, list[cst.Attribute]]] = field(default_factory=dict)
    self_stores: dict[cst.ClassDef, dict[str, list[cst.BaseExpression | None]]] = field(
        default_factory=dict
    )
    store_nodes: set[cst.CSTNode] = field(default_factory=set)
    receiver_attr: dict[cst.CSTNode, str] = field(default_factory=dict)  # receiver -> attr read
    # every name reference (with its scope) and every `<not self>.<attr>` access,
    # so finish() can answer "who else uses this conv" without walking again
    name_refs: dict[str, list[tuple[cst.Name, Scope]]] = field(default_factory=dict)
    attr_refs: dict[str, list[cst.Attribute]] = field(default_factory=dict)
    bias_reads: list[tuple[cst.Attribute, Scope, tuple[Guard, ...], cst.ClassDef | None]] = field(
        default_factory=list
    )
    none_compared: set[cst.CSTNode] = field(default_factory=set)
    # computed in finish()
    ctors: dict[cst.Call, Ctor] = field(default_factory=dict)
    spelled_calls: list[tuple[cst.Call, Scope, cst.ClassDef | None]] = field(default_factory=list)

    def find_constructors(self) -> None:
        """Fill `spelled_calls` and `ctors`: the conv and norm constructor calls."""
        spellings = set(SPELLINGS)
        grew = True
        while grew:  # aliases of aliases
            grew = False
            for alias, name in self.alias_of:
                if name in spellings and alias not in spellings:
                    spellings.add(alias)
                    grew = True
        for call, scope, cls in self.calls:
            func = call.func
            last = func.attr.value if isinstance(func, cst.Attribute) else None
            if isinstance(func, cst.Name):
                last = func.value
            if last not in spellings:
                continue  # only a name spelled like these (or aliased to them) can resolve
            self.spelled_calls.append((call, scope, cls))
            names = qualified_names(func, scope)
            if not names or LOCAL in names:
                continue
            if names <= CONV:
                self.ctors[call] = Ctor(call, scope, True, short(names))
            elif names <= NORM:
                self.ctors[call] = Ctor(call, scope, False, short(names))

    def refs_within(self, name: str, owner: Scope) -> list[cst.Name]:
        """References to `name` in `owner`'s scope or any scope nested in it."""
        found = []
        for ref, scope in self.name_refs.get(name, []):
            s: Scope | None = scope
            while s is not None and s is not owner:
                s = s.parent
            if s is owner:
                found.append(ref)
        return found

    def resolve(
        self, expr: cst.BaseExpression, scope: Scope, cls: cst.ClassDef | None
    ) -> tuple[Ctor, Holder] | None:
        """The conv or norm constructor call that built the module `expr` denotes."""
        built = self.built_by(expr, scope, cls)
        if built is None:
            return None
        ctor = self.ctors.get(built[0])
        return (ctor, built[1]) if ctor is not None else None

    def built_by(
        self, expr: cst.BaseExpression, scope: Scope, cls: cst.ClassDef | None
    ) -> tuple[cst.Call, Holder] | None:
        """The one call whose result `expr` is: itself, or what a name or `self.<attr>`
        is bound to exactly once (by a plain `=` with a single target)."""
        if isinstance(expr, cst.Call):
            return unwrap(expr), INLINE
        if isinstance(expr, cst.Attribute) and is_self(expr.value) and cls is not None:
            stores = self.self_stores.get(cls, {}).get(expr.attr.value, [])
            if len(stores) == 1 and isinstance(stores[0], cst.Call):
                return unwrap(stores[0]), Holder("attr", cls, expr.attr.value)
            return None
        if isinstance(expr, cst.Name):
            binding = single_binding(expr, scope)
            if (
                binding is not None
                and isinstance(binding.node, cst.Assign)
                and len(binding.node.targets) == 1
                and isinstance(binding.node.value, cst.Call)
                and binding.scope is not None
                and binding.scope.kind in ("module", "function")
            ):
                return unwrap(binding.node.value), Holder("name", binding=binding)
        return None

    def descendants(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Classes of this file that derive from `cls`, directly or not (by name)."""
        found: list[cst.ClassDef] = []
        names = {cls.name.value}
        changed = True
        while changed:
            changed = False
            for node, _ in self.classes:
                if node in found or node is cls:
                    continue
                if any(
                    isinstance(b.value, cst.Name) and b.value.value in names for b in node.bases
                ):
                    found.append(node)
                    names.add(node.name.value)
                    changed = True
        return found
