"""ACL304 deprecated-cuda-amp: `torch.cuda.amp.autocast` / `GradScaler` /
`custom_fwd` / `custom_bwd` and `torch.cpu.amp.*`, deprecated (FutureWarning) since
torch 2.4 in favour of `torch.amp`. Page: rules/ACL304.md

Every mention of a deprecated name is found through imports (`torch.cuda.amp.X`,
`from torch.cuda.amp import X as Y`, `import torch.cuda.amp as amp`). A call or a
decorator is rewritten to `torch.amp`, with the device type the old spelling implied
and the legacy positional arguments made keywords (`torch.cuda.amp.autocast(enabled,
dtype, cache_enabled)` has no `device_type`). An import of the old module is
rewritten in place only when every use of the names it binds is rewritten: those
uses and the import change together, in one fix.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import add_keyword, code_for, keyword_arg
from accel_lint.facts.tree import Tree
from accel_lint.names import LOCAL, Binding, BindingKind, Scope, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Replacement, Rule, Verification
from accel_lint.torch_api import DEPRECATED_AMP, DEPRECATED_AMP_MODULES, DEPRECATED_AMP_SINCE

_NAMES = ("autocast", "GradScaler", "custom_fwd", "custom_bwd")
_LEGACY_AUTOCAST_PARAMS = ("enabled", "dtype", "cache_enabled")
# where an uncalled mention is a use of the class (not a type test or an annotation)
_TYPE_TESTS = frozenset({"builtins.isinstance", "builtins.issubclass", "builtins.hasattr"})


@dataclass
class _Mention:
    node: cst.BaseExpression  # the name or attribute chain
    scope: Scope
    qualified: str
    use: cst.CSTNode  # the call or decorator, or the mention itself when neither
    kind: str  # "call", "decorator" or "reference"

    @property
    def replacement(self) -> tuple[str, str]:
        return DEPRECATED_AMP[self.qualified]


class DeprecatedCudaAmp(Rule):
    code = "ACL304"
    name = "deprecated-cuda-amp"
    summary = "torch.cuda.amp / torch.cpu.amp API, deprecated since torch 2.4: use torch.amp"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.EXACT)

    def finish(self) -> None:
        target = self.ctx.target_torch
        if target is not None and target < DEPRECATED_AMP_SINCE:
            return
        spelled = any(self.facts.attributes_named(name) for name in _NAMES)
        if not spelled and not any(
            b.target in DEPRECATED_AMP or b.target in DEPRECATED_AMP_MODULES
            for b in self._import_bindings()
        ):
            return  # nothing can denote the old API: no need for the tree
        self.tree = Tree.of(self.facts)
        mentions = list(self._mentions())
        if not mentions:
            return
        bundles = self._bundles(mentions)
        for mention in mentions:
            self._report(mention, bundles.get(mention.node))

    # -- finding the mentions ------------------------------------------------------------

    def _mentions(self) -> Iterator[_Mention]:
        seen: set[cst.CSTNode] = set()
        candidates: list[tuple[cst.BaseExpression, Scope]] = []
        for name in _NAMES:
            candidates.extend(self.facts.attributes_named(name))
        for binding in self._import_bindings():
            if binding.target in DEPRECATED_AMP:
                candidates.extend(self.tree.references(binding))
        for node, scope in candidates:
            if node in seen:
                continue
            seen.add(node)
            names = qualified_names(node, scope)
            if not names or LOCAL in names or not names <= DEPRECATED_AMP.keys():
                continue
            parent = self.tree.parent(node)
            if isinstance(parent, cst.Call) and parent.func is node:
                yield _Mention(node, scope, min(names), parent, "call")
            elif isinstance(parent, cst.Decorator):
                yield _Mention(node, scope, min(names), parent, "decorator")
            elif self._is_value_use(node, parent, scope):
                yield _Mention(node, scope, min(names), node, "reference")

    def _import_bindings(self) -> Iterator[Binding]:
        scopes = [self.facts.module_scope, *self.facts.scope_of.values()]
        for scope in scopes:
            for bindings in scope.bindings.values():
                for binding in bindings:
                    if binding.kind is BindingKind.IMPORT and binding.target is not None:
                        yield binding

    def _is_value_use(
        self, node: cst.BaseExpression, parent: cst.CSTNode | None, scope: Scope
    ) -> bool:
        """An uncalled mention that hands the class on (`amp_autocast = torch.cuda.amp.autocast`,
        `partial(autocast, ...)`), not a type test or an annotation."""
        if isinstance(parent, cst.IfExp) and parent.test is not node:
            parent = self.tree.parent(parent)
        if isinstance(parent, (cst.Assign, cst.Return)):
            return True
        if isinstance(parent, cst.Arg):
            call = self.tree.parent(parent)
            return isinstance(call, cst.Call) and not (
                qualified_names(call.func, scope) <= _TYPE_TESTS
            )
        return False

    # -- the import rewrites -------------------------------------------------------------

    def _bundles(self, mentions: list[_Mention]) -> dict[cst.CSTNode, Fix]:
        """For each import of the old module (or of names from it) whose names are all
        used only where we rewrite them: one fix that rewrites the import and all those
        uses together (a half-rewritten file would call `torch.amp.autocast` without
        its device type)."""
        by_node: dict[cst.CSTNode, _Mention] = {m.node: m for m in mentions}
        statements: dict[cst.CSTNode, list[Binding]] = {}
        for binding in self._import_bindings():
            old = binding.target in DEPRECATED_AMP or binding.target in DEPRECATED_AMP_MODULES
            if old and isinstance(binding.node, (cst.Import, cst.ImportFrom)):
                statements.setdefault(binding.node, []).append(binding)
        out: dict[cst.CSTNode, Fix] = {}
        for statement, bindings in statements.items():
            assert isinstance(statement, (cst.Import, cst.ImportFrom))
            movable: list[tuple[Binding, list[_Mention]]] = []
            for binding in bindings:
                uses = self._uses_of(binding, by_node)
                if uses:
                    movable.append((binding, uses))
            if not movable:
                continue
            moved = _moved_import(statement, [b for b, _ in movable])
            if moved is None:
                continue
            new_statement, added = moved
            replacements: dict[cst.CSTNode, Replacement] = {statement: new_statement}
            every = [m for _, uses in movable for m in uses]
            for mention in every:
                new = self._rewritten(mention, None)
                if isinstance(new, str):
                    break
                replacements[mention.use] = new
            else:
                fix = Fix(
                    "Import from `torch.amp` and name the device type",
                    replacements,
                    (added,) if added else (),
                )
                for mention in every:
                    out[mention.node] = fix
        return out

    def _uses_of(
        self, binding: Binding, by_node: dict[cst.CSTNode, _Mention]
    ) -> list[_Mention] | None:
        """The mentions that are all the uses of `binding`, or None when some use is not
        a mention we rewrite (the import must then stay)."""
        uses: list[_Mention] = []
        for node, _ in self.tree.references(binding):
            mention = by_node.get(node)
            if mention is None:
                parent = self.tree.parent(node)
                if isinstance(parent, cst.Attribute) and parent.value is node:
                    mention = by_node.get(parent)
            if mention is None or mention.kind == "reference":
                return None
            uses.append(mention)
        return uses

    # -- reporting -----------------------------------------------------------------------

    def _report(self, mention: _Mention, bundle: Fix | None) -> None:
        name, device = mention.replacement
        old = mention.qualified.replace(".autocast_mode", "").replace(".grad_scaler", "")
        message = (
            f"`{old}` is deprecated since torch 2.4 (it warns on every use): "
            f'use `torch.amp.{name}` with device type "{device}"'
        )
        if bundle is not None:
            self.report(mention.use, message, bundle)
            return
        if mention.kind == "reference":
            self.report(
                mention.use,
                message,
                no_fix_reason=(
                    "the class is handed on uncalled; pass the device where it is called, "
                    f'e.g. `functools.partial(torch.amp.{name}, "{device}")`'
                ),
            )
            return
        spelled = self._torch_spelling(mention.scope)
        if spelled is None:
            self.report(
                mention.use,
                message,
                no_fix_reason="`torch` names something else here: `torch.amp` cannot be spelled",
            )
            return
        prefix, needed = spelled
        new = self._rewritten(mention, f"{prefix}.amp.{name}")
        if isinstance(new, str):
            self.report(mention.use, message, no_fix_reason=new)
            return
        fix = Fix(
            f'Use `torch.amp.{name}` with device type "{device}"',
            {mention.use: new},
            (needed,) if needed else (),
        )
        self.report(mention.use, message, fix)

    def _torch_spelling(self, scope: Scope) -> tuple[str, str | None] | None:
        """`torch` and the import to add, when `torch` names the module (or nothing) here."""
        bindings = scope.lookup("torch")
        if bindings is None:
            return "torch", "import torch"
        if all(
            b.kind is BindingKind.IMPORT and b.target == "torch" and b.scope is scope.module
            for b in bindings
        ):
            return "torch", None
        return None

    # -- the rewrite of one use ----------------------------------------------------------

    def _rewritten(self, mention: _Mention, callee: str | None) -> cst.CSTNode | str:
        """The new call or decorator (with `callee` as the new name, or the old name kept
        when its import is rewritten), or why there is none."""
        name, device = mention.replacement
        func: cst.BaseExpression = (
            cst.parse_expression(callee) if callee is not None else mention.node
        )
        use = mention.use
        if isinstance(use, cst.Decorator):
            expr = use.decorator
            if isinstance(expr, cst.Call):
                new_call = self._rewritten_call(expr, name, device, func)
                if isinstance(new_call, str):
                    return new_call
                return use.with_changes(decorator=new_call)
            # `@custom_fwd`: the torch.amp version needs its device type
            if name not in ("custom_fwd", "custom_bwd"):
                return f"`@{code_for(expr)}` without a call is not a decorator torch.amp offers"
            call = cst.Call(func=func, args=[keyword_arg("device_type", f'"{device}"')])
            return use.with_changes(decorator=call)
        assert isinstance(use, cst.Call)
        return self._rewritten_call(use, name, device, func)

    def _rewritten_call(
        self, call: cst.Call, name: str, device: str, func: cst.BaseExpression
    ) -> cst.Call | str:
        device_arg = cst.Arg(
            value=cst.SimpleString(f'"{device}"'),
            comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")),
        )
        if name in ("custom_fwd", "custom_bwd"):
            return add_keyword(call.with_changes(func=func), "device_type", f'"{device}"')
        args = list(call.args)
        if name == "autocast":
            # torch.amp.autocast(device_type, dtype, enabled, cache_enabled) orders its
            # parameters differently: positional arguments become keywords
            position = 0
            for index, arg in enumerate(args):
                if arg.star == "*":
                    return "its arguments are passed with `*`, so they cannot be named"
                if arg.keyword is None and not arg.star:
                    if position >= len(_LEGACY_AUTOCAST_PARAMS):
                        return "it has more positional arguments than autocast takes"
                    args[index] = arg.with_changes(
                        keyword=cst.Name(_LEGACY_AUTOCAST_PARAMS[position]),
                        equal=cst.AssignEqual(
                            whitespace_before=cst.SimpleWhitespace(""),
                            whitespace_after=cst.SimpleWhitespace(""),
                        ),
                    )
                    position += 1
        before = call.whitespace_before_args
        if isinstance(before, cst.ParenthesizedWhitespace):
            # one argument per line: the device type takes a line of its own
            device_arg = device_arg.with_changes(
                comma=cst.Comma(
                    whitespace_after=before.with_changes(first_line=cst.TrailingWhitespace())
                )
            )
        if not args:
            device_arg = device_arg.with_changes(comma=cst.MaybeSentinel.DEFAULT)
        return call.with_changes(func=func, args=[device_arg, *args])


def _moved_import(
    statement: cst.Import | cst.ImportFrom, movable: list[Binding]
) -> tuple[cst.Import | cst.ImportFrom, str | None] | None:
    """The import with the moved names taken from `torch.amp` (or `torch` for the
    module itself), and an import to add when the statement keeps other names."""
    if isinstance(statement, cst.ImportFrom):
        if statement.relative or isinstance(statement.names, cst.ImportStar):
            return None
        module = code_for(statement.module) if statement.module is not None else ""
        if module in ("torch.cuda", "torch.cpu"):  # `from torch.cuda import amp`
            if len(statement.names) != 1:
                return None
            return statement.with_changes(module=cst.Name("torch")), None
        if module not in ("torch.cuda.amp", "torch.cpu.amp"):
            return None
        names = {b.name for b in movable}
        moving = [a for a in statement.names if _local_name(a) in names]
        kept = [a for a in statement.names if _local_name(a) not in names]
        if not kept:
            return statement.with_changes(module=cst.parse_expression("torch.amp")), None
        if statement.rpar is None:
            kept[-1] = kept[-1].with_changes(comma=cst.MaybeSentinel.DEFAULT)
        added = ", ".join(code_for(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in moving)
        return statement.with_changes(names=kept), f"from torch.amp import {added}"
    if len(statement.names) != 1:
        return None
    alias = statement.names[0]
    if alias.asname is None or code_for(alias.name) not in ("torch.cuda.amp", "torch.cpu.amp"):
        return None
    new_alias = alias.with_changes(name=cst.parse_expression("torch.amp"))
    return statement.with_changes(names=[new_alias]), None


def _local_name(alias: cst.ImportAlias) -> str:
    if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
        return alias.asname.name.value
    return code_for(alias.name)
