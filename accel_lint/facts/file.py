"""Whole-file facts, gathered in the same traversal as the rules and shared by them.

During the walk, `FileFacts` holds the traversal context that rules read while
they visit (`scope`, `guards`, `loops`, `function`), kept by
`facts.collector`. Whole-file answers (is the file distributed, does it touch
CUDA, argparse defaults, constants, kwargs dicts, call sites) are computed once
after the walk, in `FileFacts.finish()`, when every binding is known. Analyses
that several rules ask (the call graph, rank tests, ...) are built on first
request and kept for the file (`FileFacts.shared`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, TypeVar

import libcst as cst

from accel_lint.facts.literals import _literal_dict, device_template, is_literal, string_value
from accel_lint.facts.syntax import is_main_test
from accel_lint.names import (
    LOCAL,
    Binding,
    BindingKind,
    Scope,
    qualified_names,
    resolves_to,
)
from accel_lint.torch_api import (
    CUDA_IS_AVAILABLE,
    DDP,
    INIT_PROCESS_GROUP,
    TORCH_DEVICE,
)

T = TypeVar("T")

# (test expression, True when inside its body / False when inside its else or after an exit)
Guard = tuple[cst.BaseExpression, bool]

ARGPARSE_PARSER = frozenset({"argparse.ArgumentParser"})


@dataclass(frozen=True)
class CallSite:
    """A call in the file, with the context it runs in."""

    node: cst.Call
    scope: Scope
    guards: tuple[Guard, ...]  # enclosing ifs and early exits inside `function` only
    loops: tuple[cst.For | cst.While, ...]  # enclosing loops inside `function` only
    function: cst.FunctionDef | None  # the def whose body contains the call
    # the loops whose body (not header) runs the call, and the `with` blocks around it,
    # inside `function` only
    bodies: tuple[cst.For | cst.While, ...] = ()
    withs: tuple[cst.With, ...] = ()


@dataclass(frozen=True)
class LoopSite:
    """A `for` or `while` loop in the file, with the context it runs in."""

    node: cst.For | cst.While
    scope: Scope
    function: cst.FunctionDef | None
    guards: tuple[Guard, ...]  # around the loop, inside `function` only
    bodies: tuple[cst.For | cst.While, ...]  # loops whose body runs this loop
    withs: tuple[cst.With, ...]


@dataclass
class AttributeAssignment:
    """`receiver.attr = value` somewhere in the file (`self.rank = ...`, `args.gpu = ...`)."""

    receiver: str  # "self", "args", ...
    attr: str
    value: cst.BaseExpression
    scope: Scope
    class_def: cst.ClassDef | None


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

    def __init__(self, module: cst.Module, text: str | None = None) -> None:
        self.module = module
        self._text = text  # what `module` was parsed from, when the caller has it
        self.module_scope = Scope("module", module, None)
        # walk context
        self.scope = self.module_scope
        self.guards: list[Guard] = []
        # tests of `if cond: return/continue/...` whose (test, False) guards the rest of
        # the block: an early exit, not an `else:` branch
        self.exit_tests: set[cst.BaseExpression] = set()
        self.loops: list[cst.For | cst.While] = []
        self.bodies: list[cst.For | cst.While] = []
        self.withs: list[cst.With] = []
        # the context around each def or lambda being walked: its body starts afresh
        self.outer_context: list[
            tuple[list[Guard], list[cst.For | cst.While], list[cst.For | cst.While], list[cst.With]]
        ] = []
        self.functions_stack: list[cst.FunctionDef] = []
        self.classes_stack: list[cst.ClassDef] = []
        # collected
        self.calls: list[CallSite] = []
        self.loop_sites: dict[cst.For | cst.While, LoopSite] = {}
        self.attribute_assignments: dict[str, list[AttributeAssignment]] = {}  # by attr
        self.aug_assigns: list[tuple[cst.AugAssign, Scope]] = []
        self.if_of_test: dict[cst.BaseExpression, cst.If] = {}  # a guard's test -> its `if`
        self._attributes: dict[str, list[tuple[cst.Attribute, Scope]]] = {}
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
        self._shared: dict[Callable[[FileFacts], Any], Any] = {}
        self._resolved: dict[frozenset[str], list[CallSite]] = {}
        self._callees: list[frozenset[str]] = []  # of `calls`, in order

    # -- queries ------------------------------------------------------------

    def shared(self, build: Callable[[FileFacts], T]) -> T:
        """The one instance of an analysis built on these facts (by its builder):
        the first rule that asks builds it, the others get the same object."""
        found = self._shared.get(build)
        if found is None:
            found = self._shared[build] = build(self)
        return found

    @property
    def text(self) -> str:
        """The file's text. `module.code` is the same text but generates it again from
        the whole tree (it costs about as much as the parse): ask this instead."""
        if self._text is None:
            self._text = self.module.code
        return self._text

    def shared_values(self) -> list[object]:
        """The analyses built so far by `shared` (to release them with the file)."""
        return list(self._shared.values())

    def calls_resolving_to(self, targets: frozenset[str]) -> list[CallSite]:
        """Every call whose callee resolves (through imports) to one of `targets`
        (as `resolves_to` decides: every name it can denote is one of them)."""
        found = self._resolved.get(targets)
        if found is None:
            found = self._resolved[targets] = [
                site
                for site, names in zip(self.calls, self.callee_names())
                if names and names <= targets
            ]
        return found

    def callee_names(self) -> list[frozenset[str]]:
        """What each call of `calls` calls (`qualified_names` of its callee), in the
        same order: resolved once for every rule and fact that asks."""
        callees = self._callees
        if len(callees) < len(self.calls):
            callees.extend(
                qualified_names(site.node.func, site.scope) for site in self.calls[len(callees) :]
            )
        return callees

    # -- context helpers for rules ------------------------------------------

    @property
    def function(self) -> cst.FunctionDef | None:
        return self.functions_stack[-1] if self.functions_stack else None

    @property
    def class_def(self) -> cst.ClassDef | None:
        return self.classes_stack[-1] if self.classes_stack else None

    def resolves_to(self, expr: cst.BaseExpression, targets: frozenset[str]) -> bool:
        """During the walk only: does `expr` (in the current scope) denote one of `targets`?"""
        return resolves_to(expr, self.scope, targets)

    def attributes_named(self, attr: str) -> list[tuple[cst.Attribute, Scope]]:
        """Every `<value>.<attr>` in the file (reads and writes), with its scope."""
        return self._attributes.get(attr, [])

    def attribute_names(self) -> Iterator[str]:
        """Every attribute name the file reads or writes (`fp16_run` for `hp.fp16_run`)."""
        return iter(self._attributes)

    def all_bindings(self) -> Iterator[Binding]:
        """Every binding of every scope of the file (imports inside functions included)."""
        return self._all_bindings()

    def method_calls(self, method: str) -> list[CallSite]:
        """Every `<receiver>.<method>(...)` call in the file."""
        return self._method_calls.get(method, [])

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
        # what was resolved while the walk still bound names is resolved again
        self._callees.clear()
        self._resolved.clear()
        self._finish_calls()
        self._finish_constants()
        self._finish_kwargs_dicts()
        # every binding is known: `qualified_names` may keep its answers from here on
        self.module_scope.final = {}

    def _finish_calls(self) -> None:
        option_calls: list[CallSite] = []
        has_parser = False
        cuda = self._cuda_string_uses > 0
        distributed = False
        for site, names in zip(self.calls, self.callee_names()):
            func = site.node.func
            if isinstance(func, cst.Attribute):
                if func.attr.value == "cuda":
                    cuda = True
                elif func.attr.value == "add_argument":
                    option_calls.append(site)
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


def conditions(guards: tuple[Guard, ...] | list[Guard]) -> tuple[Guard, ...]:
    """The guards that are conditions on what runs: `if __name__ == "__main__":` is not
    one (it is the script itself), so code under it runs unconditionally."""
    return tuple(guard for guard in guards if not is_main_test(guard[0]))


def _is_augmented(binding: Binding) -> bool:
    return isinstance(binding.node, cst.AugAssign)


def _has_cuda_arg(call: cst.Call) -> bool:
    for arg in call.args:
        value = string_value(arg.value)
        if value is None:
            value = device_template(arg.value)  # `"cuda:{:d}".format(rank)`
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
