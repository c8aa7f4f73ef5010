"""ACL403 save-on-every-rank: `torch.save` in a distributed script that every process
runs, so all ranks write the same file. Page: rules/ACL403.md"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts import CallSite, Guard
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.ranks import RankAnalysis, has_main_process_decorator
from accel_lint.facts.syntax import argument_for, last_name, sub_expressions
from accel_lint.names import BindingKind, Scope, qualified_names, resolves_to, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Invariant, Rule, Verification
from accel_lint.torch_api import (
    DDP,
    GET_RANK,
    INIT_PROCESS_GROUP,
    IS_INITIALIZED,
    PROCESS_LAUNCHERS,
    TORCH_SAVE,
)

# Calls that run a function once per process, or as the entry point of every process:
# its body is every rank's code.
_LAUNCHERS = PROCESS_LAUNCHERS | {"fire.Fire", "typer.run", "jsonargparse.CLI"}
_MAX_CALL_DEPTH = 4


@dataclass(frozen=True)
class _Save:
    call: cst.Call
    scope: Scope
    guards: tuple[Guard, ...]  # enclosing ifs of its own function, and short-circuits
    function: cst.FunctionDef | None
    statement: cst.SimpleStatementLine | cst.SimpleStatementSuite | None
    order: int


@dataclass(frozen=True)
class _Def:
    """Where a def statement runs: its body can only run in processes that ran it."""

    order: int
    guards: tuple[Guard, ...]  # inside the enclosing function (or module)
    scope: Scope
    enclosing: cst.FunctionDef | None


@dataclass(frozen=True)
class _Entry:
    """A place that runs a function, or hands it on (`register(save)`), and its context."""

    guards: tuple[Guard, ...]
    scope: Scope
    function: cst.FunctionDef | None
    class_def: cst.ClassDef | None = None


class SaveOnEveryRank(Rule):
    code = "ACL403"
    name = "save-on-every-rank"
    summary = "torch.save in a distributed script, not guarded to one process"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.RANK0_SAVE)
    # a distributed file names one of these (through an import or a call)

    def setup(self) -> None:
        self._saves: list[_Save] = []
        self._order = 0
        self._statements: list[cst.SimpleStatementLine | cst.SimpleStatementSuite] = []
        self._expr_guards: list[Guard] = []
        self._call_funcs: set[int] = set()
        self._stores: set[int] = set()  # assignment targets: not uses of a function
        self._arg_call: dict[int, tuple[cst.Call, Scope]] = {}
        self._refs: dict[str, list[tuple[cst.CSTNode, _Entry]]] = {}
        self._lambda_guards: list[tuple[Guard, ...]] = []
        self._defs: dict[cst.FunctionDef, _Def] = {}
        self._with_of: dict[cst.WithItem, cst.With] = {}
        self._assigned: dict[cst.CSTNode, tuple[int, tuple[Guard, ...]]] = {}
        self._destroys: list[tuple[cst.Call, Scope, cst.FunctionDef | None, int]] = []

    # -- walk: collect -----------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        stack = self.facts.functions_stack  # FactsCollector has pushed `node` already
        enclosing = stack[-2] if len(stack) > 1 else None
        scope = self.facts.scope.parent or self.facts.scope
        self._defs[node] = _Def(self._order, tuple(self.facts.guards), scope, enclosing)

    def visit_Lambda(self, node: cst.Lambda) -> None:
        # a lambda's body has fresh guards: keep the ones where it is made (and so callable)
        self._lambda_guards.append(tuple(self.facts.guards))

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._lambda_guards.pop()

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.append(node)

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._statements.pop()

    def visit_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._statements.append(node)

    def leave_SimpleStatementSuite(self, node: cst.SimpleStatementSuite) -> None:
        self._statements.pop()

    def visit_IfExp_body(self, node: cst.IfExp) -> None:
        self._expr_guards.append((node.test, True))

    def leave_IfExp_body(self, node: cst.IfExp) -> None:
        self._expr_guards.pop()

    def visit_IfExp_orelse(self, node: cst.IfExp) -> None:
        self._expr_guards.append((node.test, False))

    def leave_IfExp_orelse(self, node: cst.IfExp) -> None:
        self._expr_guards.pop()

    def visit_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        # `rank == 0 and torch.save(...)`
        self._expr_guards.append((node.left, isinstance(node.operator, cst.And)))

    def leave_BooleanOperation_right(self, node: cst.BooleanOperation) -> None:
        self._expr_guards.pop()

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            self._with_of[item] = node

    def visit_Assign(self, node: cst.Assign) -> None:
        self._note_binding(node)
        self._stores.update(id(target.target) for target in node.targets)

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._note_binding(node)
        self._stores.add(id(node.target))

    def visit_AugAssign(self, node: cst.AugAssign) -> None:
        self._stores.add(id(node.target))

    def _note_binding(self, node: cst.CSTNode) -> None:
        self._order += 1
        self._assigned[node] = (self._order, self._guards())

    def visit_Call(self, node: cst.Call) -> None:
        self._order += 1
        self._call_funcs.add(id(node.func))
        for arg in node.args:
            self._arg_call[id(arg.value)] = (node, self.facts.scope)
        name = last_name(node.func)
        if name == "destroy_process_group":
            self._destroys.append((node, self.facts.scope, self.facts.function, self._order))
        if name != "save":
            return
        statement = self._statements[-1] if self._statements else None
        self._saves.append(
            _Save(
                node, self.facts.scope, self._guards(), self.facts.function, statement, self._order
            )
        )

    def visit_Name(self, node: cst.Name) -> None:
        if id(node) not in self._call_funcs and id(node) not in self._stores:
            self._refs.setdefault(node.value, []).append((node, self._entry()))

    def visit_Attribute(self, node: cst.Attribute) -> None:
        # `self.save_checkpoint` handed over as a callback rather than called
        if (
            id(node) not in self._call_funcs
            and id(node) not in self._stores
            and isinstance(node.value, cst.Name)
            and node.value.value in ("self", "cls")
        ):
            self._refs.setdefault(node.attr.value, []).append((node, self._entry()))

    def _guards(self) -> tuple[Guard, ...]:
        """Guards of the node being visited inside its function (`facts.guards` starts
        afresh in each def), those of the lambdas it sits in, and short-circuits."""
        outer = tuple(guard for guards in self._lambda_guards for guard in guards)
        return outer + tuple(self.facts.guards) + tuple(self._expr_guards)

    def _entry(self) -> _Entry:
        facts = self.facts
        return _Entry(self._guards(), facts.scope, facts.function, facts.class_def)

    # -- finish: decide ----------------------------------------------------------

    def finish(self) -> None:
        if not self.facts.is_distributed:
            return
        self._calls = CallGraph.of(self.facts)
        self._ranks = RankAnalysis.of(self.facts)
        for save in self._saves:
            if not resolves_to(save.call.func, save.scope, TORCH_SAVE):
                continue
            if self._ranks.guarded(save.guards, save.scope):
                continue
            if save.function is not None and self._function_guarded(save.function, 0, frozenset()):
                continue
            if self._per_process_destination(save):
                continue
            self._report(save)

    def _function_guarded(
        self, func: cst.FunctionDef, depth: int, seen: frozenset[cst.FunctionDef]
    ) -> bool:
        """Every way this file runs `func` admits one process.

        A function the file never calls is judged by its own body: its callers are in
        other files, and nothing shows that one process only runs it. A function handed
        to code we cannot see (`register(save)`) is judged where it is handed over."""
        if has_main_process_decorator(func):
            return True
        if depth > _MAX_CALL_DEPTH or func in seen:
            return True
        inner = seen | {func}
        # made only on rank 0 (`if rank == 0: def save(): ...`), or inside a function
        # that only one process runs: no other process has this function to call
        made = self._defs[func]
        if self._ranks.guarded(made.guards, made.scope):
            return True
        if made.enclosing is not None and self._function_guarded(made.enclosing, depth + 1, inner):
            return True
        entries = [
            _Entry(site.guards, site.scope, site.function)
            for site, _ in self._calls.invocations(func)
        ]
        for node, entry in self._references(func):
            owner = self._arg_call.get(id(node))
            if owner is not None and resolves_to(owner[0].func, owner[1], _LAUNCHERS):
                return False  # started once per process
            entries.append(entry)
        if not entries:
            # `obj(...)` runs `__call__`, `with obj:` runs `__enter__`: callers we cannot see
            return _is_dunder(func) and func.name.value != "__init__"
        for entry in entries:
            if self._ranks.guarded(entry.guards, entry.scope):
                continue
            if entry.function is not None and self._function_guarded(
                entry.function, depth + 1, inner
            ):
                continue
            return False
        return True

    def _references(self, func: cst.FunctionDef) -> Iterator[tuple[cst.CSTNode, _Entry]]:
        """Uses of `func` other than calls: `mp.spawn(main)`, `callbacks=[self.save]`."""
        owner = self._calls.class_of(func)
        for node, entry in self._refs.get(func.name.value, ()):
            if isinstance(node, cst.Attribute):
                if owner is not None and entry.class_def is owner:  # `self` is an `owner`
                    yield node, entry
                continue
            bindings = entry.scope.lookup(func.name.value)
            if bindings and any(b.node is func for b in bindings):
                yield node, entry

    def _per_process_destination(self, save: _Save) -> bool:
        """One file per rank (`f"ckpt_{rank}.pt"`), or an in-memory / temporary target."""
        dest = _destination(save.call)
        if dest is not None:
            return self._per_process(dest, save.scope, save.function, 0)
        if save.function is not None:
            forwarded = self._forwarded_destinations(save.call, save.function)
            if forwarded is not None:
                return any(
                    self._per_process(value, site.scope, site.function, 1)
                    for value, site in forwarded
                )
        return True  # cannot tell where it writes

    def _forwarded_destinations(
        self, call: cst.Call, func: cst.FunctionDef
    ) -> list[tuple[cst.BaseExpression, CallSite]] | None:
        """For `def save_on_master(*args, **kwargs): torch.save(*args, **kwargs)`, the
        destination each call of the function in the file passes; None when the save's
        arguments are not forwarded that way or a call cannot be read."""
        star = func.params.star_arg
        star_kwarg = func.params.star_kwarg
        prefix = 0
        forwards_args = forwards_kwargs = False
        for arg in call.args:
            name = arg.value.value if isinstance(arg.value, cst.Name) else None
            if arg.star == "*" and isinstance(star, cst.Param) and name == star.name.value:
                forwards_args = True
            elif arg.star == "**" and star_kwarg is not None and name == star_kwarg.name.value:
                forwards_kwargs = True
            elif arg.star or arg.keyword is not None or forwards_args:
                return None
            else:
                prefix += 1
        if not forwards_args and not forwards_kwargs:
            return None
        named = len(func.params.posonly_params) + len(func.params.params)
        out: list[tuple[cst.BaseExpression, CallSite]] = []
        for site, offset in self._calls.invocations(func):
            if any(arg.star for arg in site.node.args):
                return None
            positional = [arg.value for arg in site.node.args if arg.keyword is None]
            extra = positional[max(0, named - offset) :]
            keywords = {arg.keyword.value: arg.value for arg in site.node.args if arg.keyword}
            if forwards_args and 0 <= 1 - prefix < len(extra):
                out.append((extra[1 - prefix], site))
            elif forwards_kwargs and "f" in keywords:
                out.append((keywords["f"], site))
        return out

    def _per_process(
        self,
        expr: cst.BaseExpression,
        scope: Scope,
        function: cst.FunctionDef | None,
        depth: int,
    ) -> bool:
        if depth > _MAX_CALL_DEPTH:
            return False
        for sub in sub_expressions(expr):
            if isinstance(sub, cst.Call) and _private_target(sub, scope):
                return True
            if isinstance(
                sub, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)
            ) and self._ranks.is_rank(sub, scope):
                return True
            if not isinstance(sub, cst.Name):
                continue
            for binding in scope.lookup(sub.value) or ():
                node = binding.node
                if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call):
                    if _private_target(node.item, binding.scope or scope):
                        return True
                elif isinstance(node, cst.Param) and function is not None:
                    if self._per_process_argument(function, node, depth):
                        return True
                elif (
                    binding.value is not None
                    and binding.scope is not None
                    and self._per_process(binding.value, binding.scope, function, depth + 1)
                ):
                    return True
        return False

    def _per_process_argument(self, func: cst.FunctionDef, param: cst.Param, depth: int) -> bool:
        """A path parameter that some caller fills with a per-rank path."""
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        for site, offset in self._calls.invocations(func):
            value = argument_for(site.node, param.name.value, index, offset)
            if value is not None and self._per_process(value, site.scope, site.function, depth + 1):
                return True
        return False

    # -- report and fix ------------------------------------------------------------

    def _report(self, save: _Save) -> None:
        message = (
            "Every process runs this `torch.save`: all ranks write the same file at once, "
            "which races and can leave a corrupt checkpoint"
        )
        target, reason = self._wrap_target(save)
        if target is None:
            self.report(save.call, message, no_fix_reason=reason)
            return
        test, imports = self._zero_test(save)
        if test is None:
            reason = "the process group is already destroyed here, so get_rank() would raise"
            self.report(save.call, message, no_fix_reason=reason)
            return
        fix = Fix(
            f"Save on rank 0 only: wrap it in `if {test}:`",
            {target: _wrapped(target, cst.parse_expression(test))},
            imports,
        )
        self.report(save.call, message, fix)

    def _wrap_target(
        self, save: _Save
    ) -> tuple[cst.SimpleStatementLine | cst.SimpleStatementSuite | cst.With | None, str]:
        statement = save.statement
        if statement is None or not _is_lone_call(statement, save.call):
            if statement is not None and len(statement.body) > 1:
                return None, "the call shares its line with other statements"
            return None, "the call is part of a larger expression"
        if any(self._ranks.mentions_rank(test, save.scope) for test, _ in save.guards):
            return None, "an enclosing condition already tests the rank"
        dest = _destination(save.call)
        handle = self._opened_file(dest, save.scope) if dest is not None else None
        if handle is None:
            return statement, ""
        with_node = self._with_of.get(handle) if isinstance(handle, cst.WithItem) else None
        if with_node is None:
            return None, "every rank opens the file before this call; guard the `open` too"
        body = with_node.body
        if body is statement or (
            isinstance(body, cst.IndentedBlock) and list(body.body) == [statement]
        ):
            return with_node, ""
        return None, "every rank opens the file in the enclosing `with`; guard that block"

    def _opened_file(self, dest: cst.BaseExpression, scope: Scope) -> cst.CSTNode | None:
        """The `with open(...) as f` item or `f = open(...)` statement behind `f`."""
        if not isinstance(dest, cst.Name):
            return None
        for binding in scope.lookup(dest.value) or ():
            node = binding.node
            if isinstance(node, cst.WithItem) and isinstance(node.item, cst.Call):
                return node
            if isinstance(binding.value, cst.Call) and binding.kind is BindingKind.LOCAL:
                names = qualified_names(binding.value.func, binding.scope or scope)
                if names and names <= {"builtins.open", "io.open", "gzip.open"}:
                    return node
        return None

    def _after_destroy(self, save: _Save) -> bool:
        """A `dist.destroy_process_group()` runs earlier in the save's own function."""
        return any(
            function is save.function
            and order < save.order
            and resolves_to(call.func, scope, {"torch.distributed.destroy_process_group"})
            for call, scope, function, order in self._destroys
        )

    def _zero_test(self, save: _Save) -> tuple[str | None, tuple[str, ...]]:
        """`rank == 0` with the script's own rank variable, else its own main-process
        predicate (`is_main_process()`), else `dist.get_rank() == 0`."""
        for variable in self._ranks.rank_variables(save.scope):
            if self._bound_before(variable.binding_nodes, save):
                return variable.zero_test(), ()
        if self._after_destroy(save):
            return None, ()
        predicate = self._ranks.main_process_predicate(save.scope)
        if predicate is not None and self._defined_before(predicate, save):
            return f"{predicate.name.value}()", ()
        horovod = self._horovod_module()
        if horovod is not None and not self._uses_torch_distributed():
            spelled, needed = spelling_for(f"{horovod}.rank", save.scope)
            return f"{spelled}() == 0", (needed,) if needed else ()
        get_rank, needed = spelling_for(GET_RANK, save.scope)
        imports = [needed] if needed else []
        test = f"{get_rank}() == 0"
        if self._setup_is_conditional():
            # without a process group (a single-process run) get_rank() raises
            initialized, needed = spelling_for(IS_INITIALIZED, save.scope)
            if needed and needed not in imports:
                imports.append(needed)
            test = f"not {initialized}() or {test}"
        return test, tuple(imports)

    def _defined_before(self, func: cst.FunctionDef, save: _Save) -> bool:
        """The def runs unconditionally before the save: at import, for a save in a
        function; earlier in the module, for a module-level save."""
        made = self._defs[func]
        return not made.guards and (save.function is not None or made.order < save.order)

    def _bound_before(self, nodes: tuple[cst.CSTNode | None, ...], save: _Save) -> bool:
        """Some binding of the variable runs before the save on every path to it."""
        if not nodes:
            return True
        for node in nodes:
            if isinstance(node, cst.Param):
                return True
            noted = self._assigned.get(node) if node is not None else None
            if noted is None:
                continue
            order, guards = noted
            if order < save.order and _is_prefix(guards, save.guards):
                return True
            if (
                save.function is not None
                and node not in self._in_function(save.function)
                and all(_is_main_module_test(test) for test, _ in guards)
            ):
                return True  # a module-level variable, set before functions run
        return False

    def _in_function(self, func: cst.FunctionDef) -> set[cst.CSTNode]:
        scope = self.facts.scope_of.get(func)
        if scope is None:
            return set()
        return {b.node for bs in scope.bindings.values() for b in bs if b.node is not None}

    def _setup_sites(self) -> list[CallSite]:
        init = [s for s in self.facts.calls if _resolves(s, INIT_PROCESS_GROUP)]
        return init or [s for s in self.facts.calls if _resolves(s, DDP)]

    def _uses_torch_distributed(self) -> bool:
        return bool(self._setup_sites())

    def _setup_is_conditional(self) -> bool:
        sites = self._setup_sites()
        return bool(sites) and all(
            any(not self._setup_guard_is_incidental(test, s.scope) for test, _ in s.guards)
            for s in sites
        )

    def _setup_guard_is_incidental(self, test: cst.BaseExpression, scope: Scope) -> bool:
        """`if __name__ == "__main__":` or a choice of backend by device, not of whether to
        run distributed."""
        if _is_main_module_test(test):
            return True
        for sub in sub_expressions(test):
            names = (
                qualified_names(sub, scope) if isinstance(sub, (cst.Name, cst.Attribute)) else ()
            )
            if names and all(n.startswith(("torch.cuda", "torch.accelerator")) for n in names):
                return True
        return False

    def _horovod_module(self) -> str | None:
        for site in self.facts.calls:
            for name in qualified_names(site.node.func, site.scope):
                if name.startswith("horovod.") and name.endswith(".init"):
                    return name[: -len(".init")]
        return None


def _is_dunder(func: cst.FunctionDef) -> bool:
    name = func.name.value
    return name.startswith("__") and name.endswith("__")


def _resolves(site: CallSite, targets: frozenset[str]) -> bool:
    return resolves_to(site.node.func, site.scope, targets)


def _destination(call: cst.Call) -> cst.BaseExpression | None:
    """The `f` argument of `torch.save(obj, f, ...)`."""
    positional = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            if arg.keyword.value == "f":
                return arg.value
            continue
        if positional == 1:
            return arg.value
        positional += 1
    return None


def _private_target(call: cst.Call, scope: Scope) -> bool:
    """`io.BytesIO()`, `tempfile.NamedTemporaryFile()`: a target no other rank shares."""
    names = qualified_names(call.func, scope)
    return (
        bool(names)
        and all(n.startswith(("io.", "tempfile.")) for n in names)
        and not (names <= {"io.open"})
    )


def _is_lone_call(
    statement: cst.SimpleStatementLine | cst.SimpleStatementSuite, call: cst.Call
) -> bool:
    body = statement.body
    return len(body) == 1 and isinstance(body[0], cst.Expr) and body[0].value is call


def _is_prefix(prefix: tuple[Guard, ...], guards: tuple[Guard, ...]) -> bool:
    if len(prefix) > len(guards):
        return False
    return all(a[0] is b[0] and a[1] == b[1] for a, b in zip(prefix, guards))


def _is_main_module_test(test: cst.BaseExpression) -> bool:
    return (
        isinstance(test, cst.Comparison)
        and isinstance(test.left, cst.Name)
        and test.left.value == "__name__"
    )


def _wrapped(
    target: cst.SimpleStatementLine | cst.SimpleStatementSuite | cst.With,
    test: cst.BaseExpression,
) -> cst.CSTNode:
    """`target` inside `if <test>:`, comments above it kept above the `if`."""
    if isinstance(target, cst.SimpleStatementSuite):
        # `if cond: torch.save(...)` becomes a block holding the guarded statement
        small = target.body[0].with_changes(semicolon=cst.MaybeSentinel.DEFAULT)
        line = cst.SimpleStatementLine(body=[small], trailing_whitespace=target.trailing_whitespace)
        return cst.IndentedBlock(body=[cst.If(test=test, body=cst.IndentedBlock(body=[line]))])
    return cst.If(
        test=test,
        body=cst.IndentedBlock(body=[target.with_changes(leading_lines=())]),
        leading_lines=target.leading_lines,
    )
