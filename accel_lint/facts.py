"""Whole-file facts, gathered in the same traversal as the rules and shared by them.

`FactsCollector` runs first in the batched walk and keeps the traversal
context that rules read while they visit (`scope`, `guards`, `loops`,
`function`); `ScopeCloser` runs last, so a rule's `leave_*` still sees the
scope of the node it leaves. Whole-file answers (is the file distributed,
does it touch CUDA, argparse defaults, constants, kwargs dicts, call sites)
are computed once after the walk, in `FileFacts.finish()`, when every binding
is known.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.names import (
    LOCAL,
    Binding,
    BindingKind,
    Scope,
    dotted_name,
    qualified_names,
    resolves_to,
)

# (test expression, True when inside its body / False when inside its else or after an exit)
Guard = tuple[cst.BaseExpression, bool]

ARGPARSE_PARSER = frozenset({"argparse.ArgumentParser"})
DATALOADER = frozenset({"torch.utils.data.DataLoader", "torch.utils.data.dataloader.DataLoader"})
INIT_PROCESS_GROUP = frozenset({"torch.distributed.init_process_group"})
DDP = frozenset(
    {
        "torch.nn.parallel.DistributedDataParallel",
        "torch.nn.parallel.distributed.DistributedDataParallel",
        "torch.nn.DistributedDataParallel",
    }
)
TORCH_DEVICE = frozenset({"torch.device"})
CUDA_IS_AVAILABLE = frozenset({"torch.cuda.is_available"})


@dataclass(frozen=True)
class CallSite:
    """A call in the file, with the context it runs in."""

    node: cst.Call
    scope: Scope
    guards: tuple[Guard, ...]  # enclosing ifs and early exits inside `function` only
    loops: tuple[cst.For | cst.While, ...]  # enclosing loops inside `function` only
    function: cst.FunctionDef | None  # the def whose body contains the call


@dataclass
class ArgparseOption:
    dest: str
    default: cst.BaseExpression | None  # None when the option has no default=
    call: cst.Call  # the add_argument(...) call
    default_arg: cst.Arg | None  # the default= argument (fixes rewrite its value)
    flags: tuple[str, ...] = ()  # as written: ("--workers", "-j")

    @property
    def flag(self) -> str:
        longs = [f for f in self.flags if f.startswith("--")]
        return (longs or list(self.flags) or ["--" + self.dest])[0]


@dataclass
class KwargsDict:
    """A dict a file builds from literal keys and later splats into a call."""

    values: dict[str, cst.BaseExpression]
    resolvable: bool = True  # False once it is updated in a way we cannot read
    conditional_keys: set[str] = field(default_factory=set)  # keys added under a guard


_EXIT_CALLS = frozenset({"sys.exit", "builtins.exit", "builtins.quit", "os._exit"})


class FileFacts:
    """Facts about one file. Context attributes are valid during the walk only."""

    def __init__(self, module: cst.Module) -> None:
        self.module = module
        self.module_scope = Scope("module", module, None)
        # walk context
        self.scope = self.module_scope
        self.guards: list[Guard] = []
        self.loops: list[cst.For | cst.While] = []
        # guards and loops around each def or lambda being walked: its body starts afresh
        self.outer_context: list[tuple[list[Guard], list[cst.For | cst.While]]] = []
        self.functions_stack: list[cst.FunctionDef] = []
        self.classes_stack: list[cst.ClassDef] = []
        # collected
        self.calls: list[CallSite] = []
        self.function_defs: list[tuple[cst.FunctionDef, Scope, cst.ClassDef | None]] = []
        self.class_defs: dict[str, cst.ClassDef] = {}
        self.scope_of: dict[cst.CSTNode, Scope] = {}
        self._method_calls: dict[str, list[CallSite]] = {}
        self._dict_literals: list[tuple[cst.Name, cst.BaseExpression, Scope]] = []
        self._dict_updates: list[tuple[cst.Name, cst.Call | cst.Subscript, Scope, bool]] = []
        self._cuda_string_uses = 0
        # computed by finish()
        self.touches_cuda = False
        self.is_distributed = False
        self.argparse_options: dict[str, ArgparseOption] = {}
        self.args_names: set[str] = set()
        self.constants: dict[str, cst.BaseExpression] = {}
        self.kwargs_dicts: dict[tuple[int, str], KwargsDict] = {}

    # -- context helpers for rules ------------------------------------------

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.functions_stack[-1] if self.functions_stack else None

    @property
    def class_def(self) -> cst.ClassDef | None:
        return self.classes_stack[-1] if self.classes_stack else None

    def snapshot_guards(self) -> tuple[Guard, ...]:
        return tuple(self.guards)

    def resolves_to(self, expr: cst.BaseExpression, targets: frozenset[str]) -> bool:
        """During the walk only: does `expr` (in the current scope) denote one of `targets`?"""
        return resolves_to(expr, self.scope, targets)

    def method_calls(self, method: str) -> list[CallSite]:
        """Every `<receiver>.<method>(...)` call in the file."""
        return self._method_calls.get(method, [])

    def calls_to_function(self, func: cst.FunctionDef) -> list[CallSite]:
        """Call sites in this file of a module-level function or of a method via `self.`."""
        result: list[CallSite] = []
        name = func.name.value
        for site in self.calls:
            callee = site.node.func
            if isinstance(callee, cst.Name) and callee.value == name:
                bindings = site.scope.lookup(name)
                if bindings and any(b.node is func for b in bindings):
                    result.append(site)
            elif (
                isinstance(callee, cst.Attribute)
                and callee.attr.value == name
                and isinstance(callee.value, cst.Name)
                and callee.value.value in ("self", "cls")
            ):
                result.append(site)
        return result

    def kwargs_dict(self, name: cst.Name, scope: Scope) -> KwargsDict | None:
        bindings = scope.lookup(name.value)
        if not bindings:
            return None
        owner = bindings[0].scope
        if owner is None:
            return None
        return self.kwargs_dicts.get((id(owner), name.value))

    def literal_value(self, expr: cst.BaseExpression, scope: Scope) -> cst.BaseExpression:
        """`expr` itself, or the literal a module constant / once-bound local name holds."""
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if bindings and len(bindings) == 1:
                b = bindings[0]
                if (
                    b.kind is BindingKind.LOCAL
                    and b.value is not None
                    and is_literal(b.value)
                    and isinstance(b.node, (cst.Assign, cst.AnnAssign))
                ):
                    return b.value
        return expr

    def argparse_option_for(self, expr: cst.BaseExpression) -> ArgparseOption | None:
        """The argparse option read by `args.X` (or `opt.X`), if this file defines it."""
        if not isinstance(expr, cst.Attribute):
            return None
        receiver = expr.value
        if isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name):
            if receiver.value.value != "self":  # self.args.workers
                return None
            receiver = receiver.attr
        if not isinstance(receiver, cst.Name) or receiver.value not in self.args_names:
            return None
        return self.argparse_options.get(expr.attr.value)

    # -- finish --------------------------------------------------------------

    def finish(self) -> None:
        self._finish_calls()
        self._finish_constants()
        self._finish_kwargs_dicts()

    def _finish_calls(self) -> None:
        option_calls: list[CallSite] = []
        has_parser = False
        cuda = self._cuda_string_uses > 0
        distributed = False
        for site in self.calls:
            func = site.node.func
            if isinstance(func, cst.Attribute):
                if func.attr.value == "cuda":
                    cuda = True
                elif func.attr.value == "add_argument":
                    option_calls.append(site)
            names = qualified_names(func, site.scope)
            if not names or LOCAL in names:
                continue
            if (
                names <= INIT_PROCESS_GROUP
                or names <= DDP
                or all(n.startswith("horovod.") and n.endswith(".init") for n in names)
            ):
                distributed = True
            elif (
                names <= CUDA_IS_AVAILABLE
                or all(n.startswith("torch.accelerator.") for n in names)
                or (names <= TORCH_DEVICE and _has_cuda_arg(site.node))
            ):
                cuda = True
            elif names <= ARGPARSE_PARSER:
                has_parser = True
        self.touches_cuda = cuda
        self.is_distributed = distributed
        if has_parser:
            self._finish_argparse(option_calls)

    def _finish_argparse(self, option_calls: list[CallSite]) -> None:
        # add_argument receivers are parsers or argument groups: in a file that
        # builds an argparse parser, every add_argument call is taken as an option.
        for site in option_calls:
            option = _argparse_option(site.node)
            if option is not None and option.dest not in self.argparse_options:
                self.argparse_options[option.dest] = option
        for site in self.method_calls("set_defaults"):
            for arg in site.node.args:
                if arg.keyword is not None and arg.keyword.value in self.argparse_options:
                    opt = self.argparse_options[arg.keyword.value]
                    opt.default = arg.value
                    opt.default_arg = arg
        self.args_names = {"args", "opt", "opts"}
        for binding in self._all_bindings():
            value = binding.value
            if isinstance(value, cst.Subscript):
                value = value.value
            if (
                isinstance(value, cst.Call)
                and isinstance(value.func, cst.Attribute)
                and value.func.attr.value in ("parse_args", "parse_known_args")
            ):
                self.args_names.add(binding.name)

    def _all_bindings(self) -> Iterator[Binding]:
        seen: set[int] = set()
        for scope in [self.module_scope, *self.scope_of.values()]:
            if id(scope) in seen:
                continue
            seen.add(id(scope))
            for bindings in scope.bindings.values():
                yield from bindings

    def _finish_constants(self) -> None:
        for name, bindings in self.module_scope.bindings.items():
            if len(bindings) == 1:
                b = bindings[0]
                if (
                    b.kind is BindingKind.LOCAL
                    and b.value is not None
                    and is_literal(b.value)
                    and not _is_augmented(b)
                ):
                    self.constants[name] = b.value

    def _finish_kwargs_dicts(self) -> None:
        for target, value, scope in self._dict_literals:
            bindings = scope.lookup(target.value)
            owner = bindings[0].scope if bindings else scope
            key = (id(owner), target.value)
            values = _literal_dict(value)
            existing = self.kwargs_dicts.get(key)
            if values is None or existing is not None or (bindings and len(bindings) > 1):
                # rebuilt, or not from literals: we cannot say what it holds
                self.kwargs_dicts[key] = KwargsDict({}, resolvable=False)
                continue
            self.kwargs_dicts[key] = KwargsDict(values)
        for target, node, scope, guarded in self._dict_updates:
            bindings = scope.lookup(target.value)
            owner = bindings[0].scope if bindings else scope
            kd = self.kwargs_dicts.get((id(owner), target.value))
            if kd is None or not kd.resolvable:
                continue
            added = self._update_values(node, scope)
            if added is None:
                kd.resolvable = False
                continue
            for k, v in added.items():
                kd.values[k] = v
                if guarded:
                    kd.conditional_keys.add(k)

    def _update_values(
        self, node: cst.Call | cst.Subscript, scope: Scope
    ) -> dict[str, cst.BaseExpression] | None:
        if isinstance(node, cst.Subscript):
            return None
        out: dict[str, cst.BaseExpression] = {}
        for arg in node.args:
            if arg.keyword is not None:
                out[arg.keyword.value] = arg.value
            elif arg.star == "" and isinstance(arg.value, (cst.Dict, cst.Call)):
                values = _literal_dict(arg.value)
                if values is None:
                    return None
                out.update(values)
            elif arg.star == "" and isinstance(arg.value, cst.Name):
                other = self.kwargs_dict(arg.value, scope)
                if other is None or not other.resolvable:
                    return None
                out.update(other.values)
            else:
                return None
        return out


def _is_augmented(binding: Binding) -> bool:
    return isinstance(binding.node, cst.AugAssign)


def is_literal(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.Integer, cst.Float, cst.SimpleString)):
        return True
    if isinstance(expr, cst.Name) and expr.value in ("True", "False", "None"):
        return True
    return (
        isinstance(expr, cst.UnaryOperation)
        and isinstance(expr.operator, cst.Minus)
        and isinstance(expr.expression, (cst.Integer, cst.Float))
    )


def int_value(expr: cst.BaseExpression) -> int | None:
    """The integer a literal denotes (`0`, `0x0`, `False`), else None."""
    if isinstance(expr, cst.Integer):
        try:
            return int(expr.value.replace("_", ""), 0)
        except ValueError:
            return None
    if isinstance(expr, cst.Name) and expr.value in ("True", "False"):
        return int(expr.value == "True")
    return None


def string_value(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.SimpleString):
        value = expr.evaluated_value
        return value if isinstance(value, str) else None
    return None


def _literal_dict(expr: cst.BaseExpression) -> dict[str, cst.BaseExpression] | None:
    """Keys and values of `{'a': 1}` / `dict(a=1)` when every key is a literal string."""
    if isinstance(expr, cst.Dict):
        out: dict[str, cst.BaseExpression] = {}
        for element in expr.elements:
            if not isinstance(element, cst.DictElement):
                return None
            key = string_value(element.key)
            if key is None:
                return None
            out[key] = element.value
        return out
    if isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict":
        out = {}
        for arg in expr.args:
            if arg.keyword is None:
                return None
            out[arg.keyword.value] = arg.value
        return out
    return None


def _is_dict_display(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Dict) or (
        isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and expr.func.value == "dict"
    )


def _has_cuda_arg(call: cst.Call) -> bool:
    for arg in call.args:
        value = string_value(arg.value)
        if value is not None and value.startswith("cuda"):
            return True
        if isinstance(arg.value, cst.IfExp):
            for branch in (arg.value.body, arg.value.orelse):
                text = string_value(branch)
                if text is not None and text.startswith("cuda"):
                    return True
    return False


def _argparse_option(call: cst.Call) -> ArgparseOption | None:
    flags: list[str] = []
    dest: str | None = None
    default: cst.BaseExpression | None = None
    default_arg: cst.Arg | None = None
    for arg in call.args:
        if arg.keyword is None:
            text = string_value(arg.value)
            if text is None:
                return None
            flags.append(text)
        elif arg.keyword.value == "dest":
            dest = string_value(arg.value)
        elif arg.keyword.value == "default":
            default = arg.value
            default_arg = arg
    if dest is None:
        longs = [f for f in flags if f.startswith("--")]
        chosen = longs[0][2:] if longs else (flags[0].lstrip("-") if flags else None)
        if chosen is None:
            return None
        dest = chosen.replace("-", "_")
    return ArgparseOption(dest, default, call, default_arg, tuple(flags))


def is_exit_statement(stmt: cst.BaseStatement, scope: Scope) -> bool:
    """A statement after which its block does not continue (return, raise, sys.exit())."""
    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return False
    last = stmt.body[-1]
    if isinstance(last, (cst.Return, cst.Raise, cst.Continue, cst.Break)):
        return True
    return (
        isinstance(last, cst.Expr)
        and isinstance(last.value, cst.Call)
        and resolves_to(last.value.func, scope, _EXIT_CALLS)
    )


def _block_statements(block: cst.BaseSuite) -> Sequence[cst.BaseStatement]:
    if isinstance(block, cst.IndentedBlock):
        return block.body
    return ()


class FactsCollector:
    """Builds `FileFacts` during the walk; must be the first visitor."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self._exit_guards: list[int] = [0]

    # scopes -----------------------------------------------------------------

    def _push(self, kind: str, node: cst.CSTNode) -> Scope:
        scope = Scope(kind, node, self.facts.scope)
        self.facts.scope = scope
        self.facts.scope_of[node] = scope
        return scope

    def _bind(self, name: str, kind: BindingKind, **kw: object) -> None:
        self.facts.scope.bind(Binding(name, kind, **kw))  # type: ignore[arg-type]

    def _bind_target(
        self, target: cst.BaseExpression, value: cst.BaseExpression | None, node: cst.CSTNode
    ) -> None:
        if isinstance(target, cst.Name):
            kind = BindingKind.LOCAL
            if (
                value is not None
                and dotted_name(value) is not None
                and not (isinstance(value, cst.Name) and value.value in ("None", "True", "False"))
            ):
                kind = BindingKind.ALIAS
            self._bind(target.value, kind, value=value, node=node)
        elif isinstance(target, (cst.Tuple, cst.List)):
            for element in target.elements:
                inner = element.value
                if isinstance(inner, cst.StarredElement):
                    inner = inner.value
                self._bind_target(inner, None, node)
        elif isinstance(target, cst.StarredElement):
            self._bind_target(target.value, None, node)

    def visit_Import(self, node: cst.Import) -> None:
        for alias in node.names:
            full = dotted_name(alias.name)
            if full is None:
                continue
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                self._bind(alias.asname.name.value, BindingKind.IMPORT, target=full, node=node)
            else:
                top = full.split(".")[0]
                self._bind(top, BindingKind.IMPORT, target=top, node=node)

    def visit_ImportFrom(self, node: cst.ImportFrom) -> None:
        module = dotted_name(node.module) if node.module is not None else None
        relative = bool(node.relative)
        if isinstance(node.names, cst.ImportStar):
            if module is not None and not relative:
                self.facts.scope.star_imports.append(module)
            return
        for alias in node.names:
            name = dotted_name(alias.name)
            if name is None:
                continue
            local = name
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                local = alias.asname.name.value
            if relative or module is None:
                self._bind(local, BindingKind.LOCAL, node=node)
            else:
                self._bind(local, BindingKind.IMPORT, target=f"{module}.{name}", node=node)

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, BindingKind.LOCAL, node=node)
        self.facts.function_defs.append((node, self.facts.scope, self.facts.class_def))
        self._push("function", node)
        self.facts.functions_stack.append(node)
        self._bind_params(node.params)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push("function", node)
        self._bind_params(node.params)

    def _enter_body(self, node: cst.FunctionDef | cst.Lambda) -> None:
        # An `if` or loop around a def does not run its body: the body runs where it is
        # called. Decorators and defaults, evaluated at the def, keep the outer context.
        facts = self.facts
        facts.outer_context.append((facts.guards, facts.loops))
        facts.guards = []
        facts.loops = []

    visit_FunctionDef_body = _enter_body
    visit_Lambda_body = _enter_body

    def _bind_params(self, params: cst.Parameters) -> None:
        extras = [p for p in (params.star_arg, params.star_kwarg) if isinstance(p, cst.Param)]
        for param in [*params.posonly_params, *params.params, *params.kwonly_params, *extras]:
            self._bind(param.name.value, BindingKind.LOCAL, node=param)

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._bind(node.name.value, BindingKind.LOCAL, node=node)
        if self.facts.scope is self.facts.module_scope:
            self.facts.class_defs[node.name.value] = node
        self._push("class", node)
        self.facts.classes_stack.append(node)

    def _visit_comprehension(self, node: cst.CSTNode) -> None:
        self._push("comprehension", node)

    visit_ListComp = _visit_comprehension
    visit_SetComp = _visit_comprehension
    visit_DictComp = _visit_comprehension
    visit_GeneratorExp = _visit_comprehension

    def visit_CompFor(self, node: cst.CompFor) -> None:
        self._bind_target(node.target, None, node)

    def visit_Global(self, node: cst.Global) -> None:
        for item in node.names:
            self.facts.scope.globals.add(item.name.value)

    def visit_Nonlocal(self, node: cst.Nonlocal) -> None:
        for item in node.names:
            self.facts.scope.nonlocals.add(item.name.value)

    # bindings -----------------------------------------------------------------

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value, node)
            if isinstance(target.target, cst.Name) and _is_dict_display(node.value):
                self.facts._dict_literals.append((target.target, node.value, self.facts.scope))
            elif isinstance(target.target, cst.Subscript) and isinstance(
                target.target.value, cst.Name
            ):
                self.facts._dict_updates.append(
                    (target.target.value, target.target, self.facts.scope, bool(self.facts.guards))
                )

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value, node)

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._bind_target(node.target, None, node)

    def visit_For(self, node: cst.For) -> None:
        self._bind_target(node.target, None, node)
        self.facts.loops.append(node)

    def visit_While(self, node: cst.While) -> None:
        self.facts.loops.append(node)

    def visit_WithItem(self, node: cst.WithItem) -> None:
        if node.asname is not None:
            self._bind_target(node.asname.name, None, node)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        if node.name is not None and isinstance(node.name.name, cst.Name):
            self._bind(node.name.name.value, BindingKind.LOCAL, node=node)

    def visit_NamedExpr(self, node: cst.NamedExpr) -> None:
        if isinstance(node.target, cst.Name):
            self.facts.scope.function_scope().bind(
                Binding(node.target.value, BindingKind.LOCAL, value=node.value, node=node)
            )

    # calls and guards ---------------------------------------------------------

    def visit_Call(self, node: cst.Call) -> None:
        facts = self.facts
        site = CallSite(node, facts.scope, tuple(facts.guards), tuple(facts.loops), facts.function)
        facts.calls.append(site)
        func = node.func
        if isinstance(func, cst.Attribute):
            facts._method_calls.setdefault(func.attr.value, []).append(site)
            if func.attr.value == "update" and isinstance(func.value, cst.Name):
                facts._dict_updates.append((func.value, node, facts.scope, bool(facts.guards)))
            if func.attr.value == "to":
                for arg in node.args:
                    text = string_value(arg.value)
                    if text is not None and text.startswith("cuda"):
                        facts._cuda_string_uses += 1

    def visit_If_body(self, node: cst.If) -> None:
        self.facts.guards.append((node.test, True))

    def leave_If_body(self, node: cst.If) -> None:
        self.facts.guards.pop()

    def visit_If_orelse(self, node: cst.If) -> None:
        if node.orelse is not None:
            self.facts.guards.append((node.test, False))

    def leave_If_orelse(self, node: cst.If) -> None:
        if node.orelse is not None:
            self.facts.guards.pop()

    def leave_If(self, node: cst.If) -> None:
        # `if rank != 0: return` guards the rest of the enclosing block.
        if node.orelse is None:
            body = _block_statements(node.body)
            if body and is_exit_statement(body[-1], self.facts.scope):
                self.facts.guards.append((node.test, False))
                self._exit_guards[-1] += 1

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        self._exit_guards.append(0)

    def leave_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        for _ in range(self._exit_guards.pop()):
            self.facts.guards.pop()

    def visit_SimpleString(self, node: cst.SimpleString) -> None:
        # "cuda" / "cuda:0" literals (device strings) mark a CUDA-touching file
        if node.value[-5:-1] == "cuda" or "cuda:" in node.value:
            text = string_value(node)
            if text is not None and (text == "cuda" or text.startswith("cuda:")):
                self.facts._cuda_string_uses += 1


class ScopeCloser:
    """Pops the walk context after every rule has left the node; must be the last visitor."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts

    def _pop_scope(self, node: cst.CSTNode) -> None:
        parent = self.facts.scope.parent
        assert parent is not None
        self.facts.scope = parent

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop_scope(node)
        self.facts.functions_stack.pop()

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop_scope(node)
        self.facts.classes_stack.pop()

    leave_Lambda = _pop_scope
    leave_ListComp = _pop_scope
    leave_SetComp = _pop_scope
    leave_DictComp = _pop_scope
    leave_GeneratorExp = _pop_scope

    def _leave_body(self, node: cst.FunctionDef | cst.Lambda) -> None:
        self.facts.guards, self.facts.loops = self.facts.outer_context.pop()

    leave_FunctionDef_body = _leave_body
    leave_Lambda_body = _leave_body

    def leave_For(self, node: cst.For) -> None:
        self.facts.loops.pop()

    def leave_While(self, node: cst.While) -> None:
        self.facts.loops.pop()


__all__ = [
    "LOCAL",
    "ArgparseOption",
    "CallSite",
    "FactsCollector",
    "FileFacts",
    "Guard",
    "KwargsDict",
    "ScopeCloser",
    "int_value",
    "is_exit_statement",
    "is_literal",
    "string_value",
]
