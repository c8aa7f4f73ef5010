"""ACL201 conv-bias-before-norm: a convolution with a bias whose output goes straight
into a batch or instance norm, whose mean subtraction cancels that bias.
Page: rules/ACL201.md"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Union

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import Guard
from accel_lint.names import (
    LOCAL,
    Binding,
    Scope,
    assigned_value,
    qualified_names,
    single_binding,
)
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule

_CONV_CLASSES = (
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
)
_NORM_CLASSES = {
    "batchnorm": ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"),
    "instancenorm": ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"),
}
CONV = frozenset(
    f"{module}.{cls}"
    for module in ("torch.nn", "torch.nn.modules", "torch.nn.modules.conv")
    for cls in _CONV_CLASSES
)
NORM = frozenset(
    f"{module}.{cls}"
    for file, classes in _NORM_CLASSES.items()
    for module in ("torch.nn", "torch.nn.modules", f"torch.nn.modules.{file}")
    for cls in classes
)
SEQUENTIAL = frozenset(
    {"torch.nn.Sequential", "torch.nn.modules.Sequential", "torch.nn.modules.container.Sequential"}
)
SEQUENTIAL_INIT = frozenset(f"{name}.__init__" for name in SEQUENTIAL)
ORDERED_DICT = frozenset({"collections.OrderedDict", "typing.OrderedDict"})
ISINSTANCE = frozenset({"builtins.isinstance"})
# The last name a call of a conv, a norm, a Sequential or an OrderedDict spells.
_SPELLINGS = frozenset(
    {*_CONV_CLASSES, *(c for cs in _NORM_CLASSES.values() for c in cs)}
    | {"Sequential", "OrderedDict", "__init__"}
)
TYPE = frozenset({"builtins.type"})

# (in, out, kernel_size, stride, padding, dilation | output_padding, groups, bias, ...)
BIAS_POSITION = 7
# Methods that call the module or return it (so its output could flow anywhere).
_CALLING_ATTRS = frozenset(
    {
        "forward",
        "__call__",
        "to",
        "cuda",
        "cpu",
        "float",
        "half",
        "double",
        "bfloat16",
        "type",
        "train",
        "eval",
        "requires_grad_",
        "apply",
        "_apply",
        "to_empty",
        "share_memory",
    }
)

_RETURNS_SELF = frozenset(
    {"to", "cuda", "cpu", "float", "double", "half", "bfloat16", "train", "requires_grad_"}
)

# A list of elements in order; None marks a gap whose content is unknown.
Elements = list[Union[cst.BaseExpression, None]]
SmallStatements = Sequence[Union[cst.BaseSmallStatement, None]]


@dataclass(eq=False)
class _Ctor:
    call: cst.Call
    scope: Scope
    conv: bool  # else a norm
    cls: str  # short class name, for messages


@dataclass(frozen=True)
class _Holder:
    """How a constructed module is reached: inline, `self.<attr>` of a class, or a name."""

    kind: str  # "inline", "attr", "name"
    cls: cst.ClassDef | None = None
    attr: str = ""
    binding: Binding | None = None


_INLINE = _Holder("inline")


@dataclass
class _Edge:
    use: cst.BaseExpression  # the expression that denotes the conv where it feeds the norm
    holder: _Holder
    norm: _Ctor
    norm_expr: cst.BaseExpression
    norm_holder: _Holder


@dataclass
class _ListCandidate:
    """A list built in one scope and splatted into `nn.Sequential(*name)`."""

    pairs: list[tuple[cst.BaseExpression, cst.BaseExpression, Scope, cst.ClassDef | None]] = field(
        default_factory=list
    )
    allowed_refs: set[cst.CSTNode] = field(default_factory=set)
    splatted: bool = False


class ConvBiasBeforeNorm(Rule):
    code = "ACL201"
    name = "conv-bias-before-norm"
    summary = "Convolution with a bias directly followed by a batch or instance norm"
    fix_safety = FixSafety.UNSAFE
    equivalence = Equivalence.CLOSE
    # a conv class is always spelled out, even behind an alias or a star import
    triggers = (b"Conv1d", b"Conv2d", b"Conv3d", b"ConvTranspose")

    def __init__(self, *args: object, **kwargs: object) -> None:
        super().__init__(*args, **kwargs)  # type: ignore[arg-type]
        self._norm_spelled = False
        self._alias_of: list[tuple[str, str]] = []  # (local name, imported or assigned name)
        self._calls: list[tuple[cst.Call, Scope, cst.ClassDef | None]] = []
        self._blocks: list[tuple[Sequence[cst.CSTNode], Scope, cst.ClassDef | None]] = []
        self._classes: list[tuple[cst.ClassDef, Scope]] = []
        # every `self.<attr>` node of each class, and the stores among them (value or None)
        self._self_attrs: dict[cst.ClassDef, dict[str, list[cst.Attribute]]] = {}
        self._self_stores: dict[cst.ClassDef, dict[str, list[cst.BaseExpression | None]]] = {}
        self._store_nodes: set[cst.CSTNode] = set()
        self._receiver_attr: dict[cst.CSTNode, str] = {}  # receiver node -> attr read off it
        # every name reference (with its scope) and every `<not self>.<attr>` access,
        # so finish() can answer "who else uses this conv" without walking again
        self._name_refs: dict[str, list[tuple[cst.Name, Scope]]] = {}
        self._attr_refs: dict[str, list[cst.Attribute]] = {}
        self._bias_reads: list[
            tuple[cst.Attribute, Scope, tuple[Guard, ...], cst.ClassDef | None]
        ] = []
        self._none_compared: set[cst.CSTNode] = set()
        # computed in finish()
        self._ctors: dict[cst.Call, _Ctor] = {}
        self._spelled_calls: list[tuple[cst.Call, Scope, cst.ClassDef | None]] = []

    # -- the walk: collect, resolve nothing yet ------------------------------------

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self._norm_spelled = True
            return
        for alias in node.names:
            if not isinstance(alias.name, cst.Name):
                continue
            name = alias.name.value
            if "Norm" in name:
                self._norm_spelled = True
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._alias_of.append((alias.asname.name.value, name))

    def visit_Module(self, node: cst.Module) -> None:
        self._blocks.append((node.body, self.facts.scope, None))

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._blocks.append((node.body, self.facts.scope, self.facts.class_def))

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._blocks.append((node.body, self.facts.scope, self.facts.class_def))

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        outer = self.facts.scope.parent  # bases are evaluated outside the class body
        assert outer is not None
        self._classes.append((node, outer))

    def visit_Call(self, node: cst.Call) -> None:
        cls = self.facts.class_def
        self._calls.append((node, self.facts.scope, cls))
        if cls is None:
            return
        # `self.add_module("conv", ...)` / `setattr(self, "conv", ...)` rebind an attribute
        func = node.func
        name_arg: cst.BaseExpression | None = None
        if isinstance(func, cst.Attribute):
            if func.attr.value in ("add_module", "register_module") and _is_self(func.value):
                name_arg = node.args[0].value if node.args else None
        elif (
            isinstance(func, cst.Name)
            and func.value == "setattr"
            and len(node.args) > 1
            and _is_self(node.args[0].value)
        ):
            name_arg = node.args[1].value
        if isinstance(name_arg, cst.SimpleString):
            attr = name_arg.evaluated_value
            if isinstance(attr, str):
                self._self_stores.setdefault(cls, {}).setdefault(attr, []).append(None)

    def visit_Attribute(self, node: cst.Attribute) -> None:
        attr = node.attr.value
        value = node.value
        self._receiver_attr[value] = attr
        if _is_self(value):
            if self.facts.classes_stack:
                by_attr = self._self_attrs.setdefault(self.facts.classes_stack[-1], {})
                by_attr.setdefault(attr, []).append(node)
        else:
            self._attr_refs.setdefault(attr, []).append(node)
        if attr == "bias":
            self._bias_reads.append(
                (node, self.facts.scope, tuple(self.facts.guards), self.facts.class_def)
            )
        elif not self._norm_spelled and "Norm" in attr:
            self._norm_spelled = True

    def visit_Name(self, node: cst.Name) -> None:
        self._name_refs.setdefault(node.value, []).append((node, self.facts.scope))

    def _refs_within(self, name: str, owner: Scope) -> list[cst.Name]:
        """References to `name` in `owner`'s scope or any scope nested in it."""
        found = []
        for ref, scope in self._name_refs.get(name, []):
            s: Scope | None = scope
            while s is not None and s is not owner:
                s = s.parent
            if s is owner:
                found.append(ref)
        return found

    def visit_Assign(self, node: cst.Assign) -> None:
        single = len(node.targets) == 1
        value = node.value
        if single and isinstance(value, (cst.Name, cst.Attribute)):
            alias = node.targets[0].target
            if isinstance(alias, cst.Name):  # `Conv = nn.Conv2d`: a spelling to look for
                last = value.value if isinstance(value, cst.Name) else value.attr.value
                self._alias_of.append((alias.value, last))
        if self.facts.classes_stack:
            for target in node.targets:
                self._store(target.target, value if single else None)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        if self.facts.classes_stack:
            self._store(node.target, node.value)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        if self.facts.classes_stack:
            self._store(node.target, None)

    def _store(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        cls = self.facts.class_def
        if cls is None:
            return
        if isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                self._store(element.value, None)
        elif isinstance(target, cst.StarredElement):
            self._store(target.value, None)
        elif isinstance(target, cst.Attribute) and _is_self(target.value):
            self._self_stores.setdefault(cls, {}).setdefault(target.attr.value, []).append(value)
            self._store_nodes.add(target)

    def visit_Comparison(self, node: cst.Comparison) -> None:
        # `m.bias is None` / `m.bias is not None` reads the bias safely
        left = node.left
        if (
            isinstance(left, cst.Attribute)
            and left.attr.value == "bias"
            and any(_is_none(c.comparator) for c in node.comparisons)
        ):
            self._none_compared.add(left)

    # -- after the walk ---------------------------------------------------------

    def finish(self) -> None:
        if not self._norm_spelled:
            return
        spellings = set(_SPELLINGS)
        grew = True
        while grew:  # aliases of aliases
            grew = False
            for alias, name in self._alias_of:
                if name in spellings and alias not in spellings:
                    spellings.add(alias)
                    grew = True
        for call, scope, cls in self._calls:
            func = call.func
            last = func.attr.value if isinstance(func, cst.Attribute) else None
            if isinstance(func, cst.Name):
                last = func.value
            if last not in spellings:
                continue  # only a name spelled like these (or aliased to them) can resolve
            self._spelled_calls.append((call, scope, cls))
            names = qualified_names(func, scope)
            if not names or LOCAL in names:
                continue
            if names <= CONV:
                self._ctors[call] = _Ctor(call, scope, True, _short(names))
            elif names <= NORM:
                self._ctors[call] = _Ctor(call, scope, False, _short(names))
        kinds = {c.conv for c in self._ctors.values()}
        if kinds != {True, False}:
            return  # needs a conv and a norm
        edges: dict[cst.Call, list[_Edge]] = {}
        for a, b, scope, cls in self._adjacent_pairs():
            self._add_edge(edges, a, b, scope, cls)
        for conv_call, norm_func, scope, cls in self._applications():
            self._add_edge(edges, conv_call, norm_func, scope, cls, called=True)
        if not edges:
            return
        uses = _UsesChecker(self)
        blockers, blocks_all = self._bias_read_blockers()
        for ctor_call, found in edges.items():
            if uses.valid(ctor_call, found):
                self._check(self._ctors[ctor_call], found[0], blockers.get(ctor_call) or blocks_all)

    def _add_edge(
        self,
        edges: dict[cst.Call, list[_Edge]],
        conv_expr: cst.BaseExpression,
        norm_expr: cst.BaseExpression,
        scope: Scope,
        cls: cst.ClassDef | None,
        *,
        called: bool = False,
    ) -> None:
        """`conv_expr` feeds `norm_expr`. With `called`, `conv_expr` is the call of the conv."""
        use = conv_expr.func if called and isinstance(conv_expr, cst.Call) else conv_expr
        norm = self._resolve(norm_expr, scope, cls)
        if norm is None or norm[0].conv:
            return
        conv = self._resolve(use, scope, cls)
        if conv is None or not conv[0].conv:
            return
        edges.setdefault(conv[0].call, []).append(_Edge(use, conv[1], norm[0], norm_expr, norm[1]))

    def _resolve(
        self, expr: cst.BaseExpression, scope: Scope, cls: cst.ClassDef | None
    ) -> tuple[_Ctor, _Holder] | None:
        """The conv or norm constructor call that built the module `expr` denotes."""
        built = self._built_by(expr, scope, cls)
        if built is None:
            return None
        ctor = self._ctors.get(built[0])
        return (ctor, built[1]) if ctor is not None else None

    def _built_by(
        self, expr: cst.BaseExpression, scope: Scope, cls: cst.ClassDef | None
    ) -> tuple[cst.Call, _Holder] | None:
        """The one call whose result `expr` is: itself, or what a name or `self.<attr>`
        is bound to exactly once (by a plain `=` with a single target)."""
        if isinstance(expr, cst.Call):
            return _unwrap(expr), _INLINE
        if isinstance(expr, cst.Attribute) and _is_self(expr.value) and cls is not None:
            stores = self._self_stores.get(cls, {}).get(expr.attr.value, [])
            if len(stores) == 1 and isinstance(stores[0], cst.Call):
                return _unwrap(stores[0]), _Holder("attr", cls, expr.attr.value)
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
                return _unwrap(binding.node.value), _Holder("name", binding=binding)
        return None

    # -- where a conv feeds a norm ------------------------------------------------

    def _adjacent_pairs(
        self,
    ) -> Iterator[tuple[cst.BaseExpression, cst.BaseExpression, Scope, cst.ClassDef | None]]:
        """Adjacent modules of an `nn.Sequential`, including lists splatted into one."""
        lists: dict[tuple[int, str], _ListCandidate] = {}
        for body, scope, cls in self._blocks:
            self._collect_list_contributions(_flatten(body), scope, cls, lists)
        for call, scope, cls in self._spelled_calls:
            args = self._sequential_args(call, scope, cls)
            if args is None:
                continue
            elements: Elements = []
            if (
                len(args) == 1
                and not args[0].star
                and isinstance(args[0].value, cst.Call)
                and _resolves(args[0].value.func, scope, ORDERED_DICT)
            ):
                elements = _ordered_dict_values(args[0].value)
            else:
                for arg in args:
                    if arg.keyword is not None or arg.star == "**":
                        elements = []
                        break
                    if arg.star == "*":
                        elements.append(None)
                        if isinstance(arg.value, cst.Name):
                            key = _owner_key(arg.value, scope)
                            candidate = lists.setdefault(key, _ListCandidate()) if key else None
                            if candidate is not None:
                                candidate.splatted = True
                                candidate.allowed_refs.add(arg.value)
                    else:
                        elements.append(arg.value)
            for a, b in zip(elements, elements[1:]):
                if a is not None and b is not None:
                    yield a, b, scope, cls
        for key, candidate in lists.items():
            if candidate.splatted and candidate.pairs and self._list_is_plain(key, candidate):
                yield from candidate.pairs

    def _sequential_args(
        self, call: cst.Call, scope: Scope, cls: cst.ClassDef | None
    ) -> Sequence[cst.Arg] | None:
        names = qualified_names(call.func, scope)
        if names and LOCAL not in names:
            if names <= SEQUENTIAL:
                return call.args
            if names <= SEQUENTIAL_INIT and call.args:
                return call.args[1:]  # nn.Sequential.__init__(self, ...)
            return None
        func = call.func
        if (
            cls is not None
            and isinstance(func, cst.Attribute)
            and func.attr.value == "__init__"
            and isinstance(func.value, cst.Call)
            and isinstance(func.value.func, cst.Name)
            and func.value.func.value == "super"
            and self._plain_sequential_subclass(cls)
        ):
            return call.args
        return None

    def _plain_sequential_subclass(self, cls: cst.ClassDef) -> bool:
        """A subclass of nn.Sequential that keeps Sequential's forward."""
        for node, scope in self._classes:
            if node is cls:
                if not any(_resolves(base.value, scope, SEQUENTIAL) for base in cls.bases):
                    return False
                body = cls.body.body if isinstance(cls.body, cst.IndentedBlock) else ()
                return not any(
                    isinstance(stmt, cst.FunctionDef) and stmt.name.value == "forward"
                    for stmt in body
                )
        return False

    def _collect_list_contributions(
        self,
        stmts: SmallStatements,
        scope: Scope,
        cls: cst.ClassDef | None,
        lists: dict[tuple[int, str], _ListCandidate],
    ) -> None:
        previous: tuple[str, Elements] | None = None
        for stmt in stmts:
            found = _list_contribution(stmt) if stmt is not None else None
            if found is None:
                previous = None
                continue
            name, elements, reset, refs = found
            key = _owner_key(name, scope)
            if key is None:
                previous = None
                continue
            candidate = lists.setdefault(key, _ListCandidate())
            candidate.allowed_refs.update(refs)
            pairs = list(zip(elements, elements[1:]))
            # consecutive statements that extend the same list continue its order
            joins = previous is not None and previous[0] == name.value and not reset
            if joins and previous is not None and previous[1] and elements:
                pairs.append((previous[1][-1], elements[0]))
            candidate.pairs.extend(
                (a, b, scope, cls) for a, b in pairs if a is not None and b is not None
            )
            previous = (name.value, elements)

    def _list_is_plain(self, key: tuple[int, str], candidate: _ListCandidate) -> bool:
        """Every reference to the list appends, extends, starts it or splats it into a
        Sequential: nothing else can reorder or interleave its elements."""
        owner = self._scope_by_id.get(key[0])
        if owner is None or owner.kind not in ("module", "function") or owner.node is None:
            return False
        for binding in owner.bindings.get(key[1], []):
            if not isinstance(binding.node, (cst.Assign, cst.AnnAssign, cst.AugAssign, cst.Param)):
                return False
        return all(ref in candidate.allowed_refs for ref in self._refs_within(key[1], owner))

    @property
    def _scope_by_id(self) -> dict[int, Scope]:
        table = {id(s): s for s in self.facts.scope_of.values()}
        table[id(self.facts.module_scope)] = self.facts.module_scope
        return table

    def _applications(
        self,
    ) -> Iterator[tuple[cst.Call, cst.BaseExpression, Scope, cst.ClassDef | None]]:
        """`norm(conv(x))`, and `x = conv(x)` directly followed by `x = norm(x)` or
        `return norm(x)`: (the conv's call, the norm's callee, scope, class)."""
        for call, scope, cls in self._calls:
            inner = _single_positional(call)
            if isinstance(inner, cst.Call):
                yield inner, call.func, scope, cls
        for body, scope, cls in self._blocks:
            stmts = _flatten(body)
            for first, second in zip(stmts, stmts[1:]):
                if not (
                    isinstance(first, cst.Assign)
                    and len(first.targets) == 1
                    and isinstance(first.targets[0].target, cst.Name)
                    and isinstance(first.value, cst.Call)
                ):
                    continue
                name = first.targets[0].target.value
                if isinstance(second, cst.Assign):
                    if not (
                        len(second.targets) == 1
                        and isinstance(second.targets[0].target, cst.Name)
                        and second.targets[0].target.value == name
                    ):
                        continue  # the conv's output would stay alive under its own name
                elif not isinstance(second, cst.Return):
                    continue
                applied = second.value
                if isinstance(applied, cst.Call):
                    arg = _single_positional(applied)
                    if isinstance(arg, cst.Name) and arg.value == name:
                        yield first.value, applied.func, scope, cls

    # -- every other use of the conv --------------------------------------------

    def _descendants(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Classes of this file that derive from `cls`, directly or not (by name)."""
        found: list[cst.ClassDef] = []
        names = {cls.name.value}
        changed = True
        while changed:
            changed = False
            for node, _ in self._classes:
                if node in found or node is cls:
                    continue
                if any(
                    isinstance(b.value, cst.Name) and b.value.value in names for b in node.bases
                ):
                    found.append(node)
                    names.add(node.name.value)
                    changed = True
        return found

    # -- reads of `.bias` that the fix would break -------------------------------

    def _bias_read_blockers(self) -> tuple[dict[cst.Call, cst.Attribute], cst.Attribute | None]:
        """Reads of a bias that would get None after the fix and are not checked for it:
        per conv when the receiver is known, else (first such read) for every conv."""
        per_conv: dict[cst.Call, cst.Attribute] = {}
        anywhere: cst.Attribute | None = None
        for read, scope, guards, cls in self._bias_reads:
            receiver = read.value
            if read in self._none_compared or _checked_not_none(receiver, guards):
                continue
            if _is_self(receiver) or (
                isinstance(receiver, cst.Name) and receiver.value in self.facts.args_names
            ):
                continue  # a module's own bias parameter; a command-line option
            built = self._built_by(receiver, scope, cls)
            if built is not None:
                ctor = self._ctors.get(built[0])
                if ctor is not None and ctor.conv:
                    per_conv.setdefault(ctor.call, read)
                    continue
                names = qualified_names(built[0].func, scope)
                if names and LOCAL not in names and all(n.startswith("torch.") for n in names):
                    continue  # another torch module: not a conv
            if _known_not_conv(receiver, guards, scope):
                continue
            if anywhere is None:
                anywhere = read
        return per_conv, anywhere

    # -- the finding -------------------------------------------------------------

    def _check(self, conv: _Ctor, edge: _Edge, blocker: cst.Attribute | None) -> None:
        fix = self._bias_fix(conv)
        if fix is None:
            return
        message = (
            f"`{conv.cls}` has a bias, but its output goes straight into `{edge.norm.cls}`, whose "
            "mean subtraction cancels it: the bias is wasted computation and memory"
        )
        if blocker is not None:
            self.report(
                conv.call,
                f"{message} (no fix: `{code_for(blocker)}` is read without a None check, "
                "and would be None after `bias=False`)",
            )
            return
        self.report(conv.call, message, fix)

    def _bias_fix(self, conv: _Ctor) -> Fix | None:
        """The fix, or None when the bias is disabled or passed in a way we cannot read."""
        call, scope = conv.call, conv.scope
        positional = 0
        splats: list[cst.Arg] = []
        passed: cst.Arg | None = None
        for arg in call.args:
            if arg.star == "*":
                return None
            if arg.star == "**":
                splats.append(arg)
            elif arg.keyword is None:
                if positional == BIAS_POSITION:
                    passed = arg
                positional += 1
            elif arg.keyword.value == "bias":
                passed = arg
        if passed is not None:
            literal = self.facts.literal_value(passed.value, scope)
            if not (isinstance(literal, cst.Name) and literal.value == "True"):
                return None
            return Fix("Set `bias=False`", {passed.value: cst.Name("False")}, (), self.fix_safety)
        for splat in splats:
            if not isinstance(splat.value, cst.Name):
                return None
            kwargs = self.facts.kwargs_dict(splat.value, scope)
            if kwargs is None or not kwargs.resolvable or "bias" in kwargs.values:
                return None
        return Fix(
            "Add `bias=False`", {call: add_keyword(call, "bias", "False")}, (), self.fix_safety
        )


class _UsesChecker:
    """Decides whether every use of a conv module is one where its output feeds a norm."""

    def __init__(self, rule: ConvBiasBeforeNorm) -> None:
        self.rule = rule

    def valid(self, ctor: cst.Call, edges: list[_Edge]) -> bool:
        holder = edges[0].holder
        uses: set[cst.CSTNode] = {e.use for e in edges}
        rule = self.rule
        if holder.kind == "inline":
            return True  # built where it is used: this is its only use
        if holder.kind == "name":
            binding = holder.binding
            assert binding is not None and binding.scope is not None
            assert isinstance(binding.node, cst.Assign)
            if binding.scope.node is None:
                return False
            store = binding.node.targets[0].target
            return all(
                ref is store or ref in uses or _harmless(rule._receiver_attr.get(ref))
                for ref in rule._refs_within(binding.name, binding.scope)
            )
        cls = holder.cls
        assert cls is not None
        for node in rule._self_attrs.get(cls, {}).get(holder.attr, []):
            if not (
                node in rule._store_nodes
                or node in uses
                or _harmless(rule._receiver_attr.get(node))
            ):
                return False
        for node in rule._attr_refs.get(holder.attr, []):
            if not _harmless(rule._receiver_attr.get(node)):
                return False  # `model.conv(x)` elsewhere: its output goes somewhere else
        # a subclass may call the conv differently or replace the norm
        touched = {holder.attr} | {
            e.norm_holder.attr for e in edges if e.norm_holder.kind == "attr"
        }
        for sub in rule._descendants(cls):
            if touched & set(rule._self_attrs.get(sub, {})):
                return False
        return True


# -- helpers ---------------------------------------------------------------------


def _flatten(body: Sequence[cst.CSTNode]) -> SmallStatements:
    """Small statements in execution order; a compound statement is a gap (None)."""
    out: list[cst.BaseSmallStatement | None] = []
    for stmt in body:
        if isinstance(stmt, cst.SimpleStatementLine):
            out.extend(stmt.body)
        elif isinstance(stmt, cst.BaseSmallStatement):
            out.append(stmt)  # the body of a one-line suite
        else:
            out.append(None)
    return out


def _unwrap(call: cst.Call) -> cst.Call:
    """`nn.Conv2d(...)` for `nn.Conv2d(...).to(device)`: these methods return the module."""
    while (
        isinstance(call.func, cst.Attribute)
        and call.func.attr.value in _RETURNS_SELF
        and isinstance(call.func.value, cst.Call)
    ):
        call = call.func.value
    return call


def _is_self(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "self"


def _is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def _short(names: frozenset[str]) -> str:
    return sorted(names)[0].rsplit(".", 1)[-1]


def _resolves(expr: cst.BaseExpression, scope: Scope, targets: frozenset[str]) -> bool:
    names = qualified_names(expr, scope)
    return bool(names) and names <= targets


def _harmless(attr: str | None) -> bool:
    """Reading `conv.<attr>` (weight, out_channels, a hook) leaves its output where it was."""
    return attr is not None and attr not in _CALLING_ATTRS


def _single_positional(call: cst.Call) -> cst.BaseExpression | None:
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        return call.args[0].value
    return None


def _owner_key(name: cst.Name, scope: Scope) -> tuple[int, str] | None:
    bindings = scope.lookup(name.value)
    if not bindings or bindings[0].scope is None:
        return None
    return id(bindings[0].scope), name.value


def _display_elements(expr: cst.BaseExpression) -> Elements | None:
    if not isinstance(expr, (cst.List, cst.Tuple)):
        return None
    return [None if isinstance(e, cst.StarredElement) else e.value for e in expr.elements]


def _list_contribution(
    stmt: cst.BaseSmallStatement,
) -> tuple[cst.Name, Elements, bool, list[cst.CSTNode]] | None:
    """(list name, elements it adds in order, True when it starts a new list, the
    references to the list this statement makes) for `layers = [...]`,
    `layers += [...]`, `layers.append(x)` and `layers.extend([...])`."""
    if isinstance(stmt, (cst.Assign, cst.AnnAssign)):
        targets = (
            [t.target for t in stmt.targets] if isinstance(stmt, cst.Assign) else [stmt.target]
        )
        if len(targets) != 1 or not isinstance(targets[0], cst.Name) or stmt.value is None:
            return None
        elements = _display_elements(stmt.value)
        if elements is None or not isinstance(stmt.value, cst.List):
            return None
        return targets[0], elements, True, [targets[0]]
    if isinstance(stmt, cst.AugAssign):
        if not isinstance(stmt.target, cst.Name) or not isinstance(stmt.operator, cst.AddAssign):
            return None
        elements = _display_elements(stmt.value)
        return stmt.target, elements if elements is not None else [None], False, [stmt.target]
    if isinstance(stmt, cst.Expr) and isinstance(stmt.value, cst.Call):
        call = stmt.value
        func = call.func
        arg = _single_positional(call)
        if not (isinstance(func, cst.Attribute) and isinstance(func.value, cst.Name) and arg):
            return None
        if func.attr.value == "append":
            return func.value, [arg], False, [func.value]
        if func.attr.value == "extend":
            elements = _display_elements(arg)
            return func.value, elements if elements is not None else [None], False, [func.value]
    return None


def _ordered_dict_values(call: cst.Call) -> Elements:
    """Values of `OrderedDict([("a", x), ...])`, `OrderedDict({"a": x})` or
    `OrderedDict(a=x)` in insertion order; empty when a key repeats or is not literal
    (a repeated key keeps its first position with its last value)."""
    keys: list[str | None] = []
    values: Elements = []
    if len(call.args) == 1 and call.args[0].keyword is None and not call.args[0].star:
        source = call.args[0].value
        if isinstance(source, (cst.List, cst.Tuple)):
            for element in source.elements:
                pair = element.value
                if (
                    isinstance(element, cst.Element)
                    and isinstance(pair, cst.Tuple)
                    and len(pair.elements) == 2
                    and not any(isinstance(e, cst.StarredElement) for e in pair.elements)
                ):
                    keys.append(_string(pair.elements[0].value))
                    values.append(pair.elements[1].value)
                else:
                    keys.append(None)
                    values.append(None)
        elif isinstance(source, cst.Dict):
            for item in source.elements:
                if isinstance(item, cst.DictElement):
                    keys.append(_string(item.key))
                    values.append(item.value)
                else:
                    keys.append(None)
                    values.append(None)
        else:
            return []
    elif all(arg.keyword is not None for arg in call.args):
        for arg in call.args:
            assert arg.keyword is not None
            keys.append(arg.keyword.value)
            values.append(arg.value)
    else:
        return []
    if None in keys or len(set(keys)) != len(keys):
        return []
    return values


def _string(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _conjuncts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        yield from _conjuncts(test.left)
        yield from _conjuncts(test.right)
    else:
        yield test


def _bias_compared(test: cst.BaseExpression, receiver: str, operator: type[cst.CSTNode]) -> bool:
    """`<receiver>.bias <operator> None` (or `getattr(<receiver>, "bias", None)`)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    if not (isinstance(target.operator, operator) and _is_none(target.comparator)):
        return False
    left = test.left
    if isinstance(left, cst.Attribute):
        return left.attr.value == "bias" and code_for(left.value) == receiver
    return (
        isinstance(left, cst.Call)
        and isinstance(left.func, cst.Name)
        and left.func.value == "getattr"
        and len(left.args) >= 2
        and code_for(left.args[0].value) == receiver
        and _string(left.args[1].value) == "bias"
    )


def _checked_not_none(receiver: cst.BaseExpression, guards: tuple[Guard, ...]) -> bool:
    """Inside `if <receiver>.bias is not None:` (or after `if ... is None: continue`)."""
    text = code_for(receiver)
    for test, positive in guards:
        if positive and any(_bias_compared(c, text, cst.IsNot) for c in _conjuncts(test)):
            return True
        if not positive and _bias_compared(test, text, cst.Is):
            return True
    return False


def _known_not_conv(receiver: cst.BaseExpression, guards: tuple[Guard, ...], scope: Scope) -> bool:
    """Inside `if isinstance(m, <torch classes that are not convs>):` or `type(m) == X`."""
    text = code_for(receiver)
    for test, positive in guards:
        if not positive:
            continue
        for conjunct in _conjuncts(test):
            classes: cst.BaseExpression | None = None
            if (
                isinstance(conjunct, cst.Call)
                and len(conjunct.args) == 2
                and _resolves(conjunct.func, scope, ISINSTANCE)
                and code_for(conjunct.args[0].value) == text
            ):
                classes = conjunct.args[1].value
            elif (
                isinstance(conjunct, cst.Comparison)
                and len(conjunct.comparisons) == 1
                and isinstance(conjunct.comparisons[0].operator, (cst.Equal, cst.Is))
                and isinstance(conjunct.left, cst.Call)
                and _resolves(conjunct.left.func, scope, TYPE)
                and len(conjunct.left.args) == 1
                and code_for(conjunct.left.args[0].value) == text
            ):
                classes = conjunct.comparisons[0].comparator
            if classes is not None and _torch_classes_without_convs(classes, scope):
                return True
            if _tests_class_name_without_convs(conjunct, text, scope):
                return True
    return False


def _tests_class_name_without_convs(test: cst.BaseExpression, receiver: str, scope: Scope) -> bool:
    """`classname.find("BatchNorm") != -1`, `"Norm" in classname`, `classname == "Linear"`
    or `.startswith(...)` on the receiver's class name, with a text no conv's name holds
    (the DCGAN tutorial's `weights_init`)."""
    subject: cst.BaseExpression | None = None
    text: str | None = None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        other = test.comparisons[0].comparator
        left = test.left
        if (
            isinstance(left, cst.Call)
            and isinstance(left.func, cst.Attribute)
            and left.func.attr.value == "find"
            and len(left.args) == 1
            and (
                (isinstance(operator, cst.NotEqual) and code_for(other) == "-1")
                or (isinstance(operator, cst.GreaterThanEqual) and code_for(other) == "0")
            )
        ):
            subject, text = left.func.value, _string(left.args[0].value)
        elif isinstance(operator, cst.In):
            subject, text = other, _string(left)
        elif isinstance(operator, cst.Equal):
            subject, text = left, _string(other)
    elif (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Attribute)
        and test.func.attr.value == "startswith"
        and len(test.args) == 1
    ):
        subject, text = test.func.value, _string(test.args[0].value)
    if subject is None or not text or any(text in name for name in _CONV_CLASSES):
        return False
    if isinstance(subject, cst.Name):
        value = assigned_value(subject, scope)
        if value is None:
            return False
        subject = value
    return _class_name_of(subject, scope) == receiver


def _class_name_of(expr: cst.BaseExpression, scope: Scope) -> str | None:
    """The receiver whose class name `expr` is: `m.__class__.__name__`, `type(m).__name__`."""
    if not (isinstance(expr, cst.Attribute) and expr.attr.value == "__name__"):
        return None
    owner = expr.value
    if isinstance(owner, cst.Attribute) and owner.attr.value == "__class__":
        return code_for(owner.value)
    if isinstance(owner, cst.Call) and _resolves(owner.func, scope, TYPE) and len(owner.args) == 1:
        return code_for(owner.args[0].value)
    return None


def _torch_classes_without_convs(expr: cst.BaseExpression, scope: Scope) -> bool:
    items = [e.value for e in expr.elements] if isinstance(expr, cst.Tuple) else [expr]
    for item in items:
        names = qualified_names(item, scope)
        if not names or LOCAL in names:
            return False
        for name in names:
            short = name.rsplit(".", 1)[-1]
            # nn.Module and the conv bases (_ConvNd) include convs
            if not name.startswith("torch.") or "Conv" in short or short == "Module":
                return False
    return True
