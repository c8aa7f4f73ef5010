"""Rank expressions, rank-zero guards and rank variables: what the distributed
rules ask about a file (`RankAnalysis.of(facts)`, built once per file).

- `is_rank(expr, scope)`: `expr` denotes this process's rank (`int(os.environ["RANK"])`,
  `dist.get_rank()`, `hvd.rank()`, a variable bound from one, or spelled like one:
  `rank`, `local_rank`, `args.rank`), following attribute assignments
  (`self.gpu_id = int(os.environ["LOCAL_RANK"])`) and the file's own calls.
- `one_process(test, scope, positive)` / `guarded(guards, scope)`: a condition lets
  only one process through (`rank == 0`, `args.local_rank in [-1, 0]`, `not rank`,
  `is_main_process()`, an alias such as `master_process = rank == 0`).
- `rank_variables(scope)`: the script's own global-rank variables a fix can test.
- `main_process_predicate(scope)`: the file's own `is_main_process()`.

Precision first: a guard whose test mentions a rank in a way we cannot read
(`if rank in save_ranks:`) counts as a guard.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import AttributeAssignment, FileFacts, Guard
from accel_lint.facts.literals import int_value, string_value
from accel_lint.facts.syntax import argument_for, last_name, returns, sub_expressions
from accel_lint.names import LOCAL, Binding, BindingKind, Scope, qualified_names, resolves_to
from accel_lint.torch_api import IS_INITIALIZED

GLOBAL = "global"
LOCAL_RANK = "local"

_GLOBAL_ENV = frozenset(
    {"RANK", "WORLD_RANK", "SLURM_PROCID", "OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"}
)
_LOCAL_ENV = frozenset(
    {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}
)
_ENV_READERS = frozenset({"os.getenv", "os.environ.get"})
_RANK_CALLS = {
    "torch.distributed.get_rank": GLOBAL,
    "torch.distributed.get_node_local_rank": LOCAL_RANK,
    "torch_xla.core.xla_model.get_ordinal": GLOBAL,
    "torch_xla.core.xla_model.get_local_ordinal": LOCAL_RANK,
}
# Callee names that return a rank, whatever module they come from (utils.get_rank()).
_RANK_CALL_NAMES = {
    "get_rank": GLOBAL,
    "get_global_rank": GLOBAL,
    "get_world_rank": GLOBAL,
    "get_ordinal": GLOBAL,
    "get_local_rank": LOCAL_RANK,
    "get_local_ordinal": LOCAL_RANK,
}
_RANK_SPELLING = re.compile(r"^[a-z0-9_]*rank(?:_id|_idx)?$|^(?:local_)?process_index$")
_NOT_RANK = frozenset({"node_rank", "matrix_rank", "group_rank", "nnodes_rank"})
# Predicates and flags that mean "this is the main process" (accelerate, Lightning,
# HF Trainer, timm/DeiT utils, mmcv): how guards are written in the wild.
_MAIN_SPELLING = re.compile(
    r"^(?:is_)?(?:local_|global_|world_)?(?:main|master|chief|primary|leader)"
    r"(?:_process|_proc|_rank|_worker|_node|_ordinal|_gpu)?$"
    r"|^(?:is_)?(?:global|rank|local|world_process|local_process|process|rank_is)_?(?:zero|0)$"
    r"|^should_(?:save|log)$"
)
_MAIN_DECORATORS = frozenset(
    {
        "rank_zero_only",
        "on_main_process",
        "on_local_main_process",
        "main_process_only",
        "master_only",
        "rank_zero",
    }
)
_SINGLE_PROCESS_FLAG = re.compile(r"distributed|ddp|multiprocessing|multi_gpu|multigpu", re.I)
_WORLD_SIZE = re.compile(r"world_size|num_replicas|num_processes|n_?gpus", re.I)
_MAX_DEPTH = 4
_SPAWN = frozenset(
    {
        "torch.multiprocessing.spawn",
        "torch.multiprocessing.spawn.spawn",
        "torch.multiprocessing.start_processes",
    }
)


class Verdict(IntEnum):
    """Does a condition restrict the code it guards to one process?"""

    NO = 0
    UNSURE = 1  # mentions the rank in a way we cannot read: precision says "guarded"
    YES = 2


def _const(expr: cst.BaseExpression) -> int | None:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        inner = int_value(expr.expression)
        return None if inner is None else -inner
    text = string_value(expr)
    if text is not None:
        return int(text) if re.fullmatch(r"-?\d+", text) else None
    return int_value(expr)


def _consts(expr: cst.BaseExpression) -> list[int] | None:
    if isinstance(expr, (cst.List, cst.Tuple, cst.Set)):
        out = []
        for element in expr.elements:
            value = _const(element.value)
            if value is None:
                return None
            out.append(value)
        return out
    return None


def _is_bool_literal(expr: cst.BaseExpression | None) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("True", "False")


def env_key(expr: cst.BaseExpression, scope: Scope) -> str | None:
    """`RANK` for `os.environ["RANK"]`, `os.environ.get("RANK", 0)`, `os.getenv("RANK")`."""
    if isinstance(expr, cst.Subscript) and len(expr.slice) == 1:
        index = expr.slice[0].slice
        if isinstance(index, cst.Index) and resolves_to(expr.value, scope, {"os.environ"}):
            return string_value(index.value)
    if isinstance(expr, cst.Call) and expr.args and resolves_to(expr.func, scope, _ENV_READERS):
        return string_value(expr.args[0].value)
    return None


class RankAnalysis:
    """Rank questions about one file; valid after the walk (`finish()`)."""

    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.attributes: dict[str, list[AttributeAssignment]] = facts.attribute_assignments
        self.calls = CallGraph.of(facts)
        self._spawn_targets: set[cst.FunctionDef] | None = None
        # answers that do not depend on who asks, kept so that a rule asking once per
        # save stays linear in the size of the file
        self._kinds: dict[tuple[int, int], str | None] = {}
        self._name_variables: dict[tuple[int, str], RankVariable | None] = {}
        self._attribute_kinds: dict[str, tuple[str, bool] | None] = {}
        # per bindings list (a name bound N times, asked about at each of N uses):
        # what its bindings make of it, computed once (linear time, issue 9 item 5)
        self._name_kinds: dict[tuple[int, int, int], tuple[list[Binding], str | None]] = {}
        self._name_verdicts: dict[
            tuple[int, int, bool, int], tuple[list[Binding], Verdict | None]
        ] = {}

    @classmethod
    def of(cls, facts: FileFacts) -> RankAnalysis:
        return facts.shared(cls)

    # -- what is a rank --------------------------------------------------------

    def rank_kind(self, expr: cst.BaseExpression, scope: Scope, depth: int = 0) -> str | None:
        """`"global"` or `"local"` when `expr` denotes a rank, else None."""
        if depth == 0:
            key = (id(expr), id(scope))
            if key not in self._kinds:
                self._kinds[key] = self._rank_kind(expr, scope, 0)
            return self._kinds[key]
        return self._rank_kind(expr, scope, depth)

    def _rank_kind(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> str | None:
        if depth > _MAX_DEPTH:
            return None
        if isinstance(expr, cst.Call):
            return self._call_rank_kind(expr, scope, depth)
        key = env_key(expr, scope)
        if key is not None:
            return _env_kind(key)
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value)
            if bindings:
                memo_key = (id(bindings), len(bindings), depth)
                known = self._name_kinds.get(memo_key)
                if known is None or known[0] is not bindings:
                    known = (bindings, self._bound_name_kind(expr, bindings, depth))
                    self._name_kinds[memo_key] = known
                return known[1]
            return _spelled_kind(expr.value)
        if isinstance(expr, cst.Attribute):
            for assignment in self.attributes.get(expr.attr.value, ()):
                kind = self.rank_kind(assignment.value, assignment.scope, depth + 1)
                if kind is not None:
                    return kind
            names = qualified_names(expr, scope)
            if names and LOCAL not in names:
                return None  # a module attribute, not a variable
            return _spelled_kind(expr.attr.value)
        return None

    def _bound_name_kind(self, expr: cst.Name, bindings: list[Binding], depth: int) -> str | None:
        kinds = {
            self.rank_kind(b.value, b.scope, depth + 1)
            for b in bindings
            if b.value is not None and b.scope is not None and b.kind is not BindingKind.IMPORT
        }
        # a parameter named like a rank is one; others are what callers pass
        kinds |= {
            _spelled_kind(expr.value) or self._parameter_kind(b.node, b.scope, depth + 1)
            for b in bindings
            if isinstance(b.node, cst.Param) and b.scope is not None
        }
        kinds.discard(None)
        if kinds:
            return GLOBAL if GLOBAL in kinds else LOCAL_RANK
        if all(b.value is not None and not _could_be_int(b.value) for b in bindings):
            return None  # `per_rank = f"shard-{rank}.pt"` is a path, not a rank
        return _spelled_kind(expr.value)

    def _parameter_kind(self, param: cst.Param, scope: Scope, depth: int) -> str | None:
        """A parameter is a rank when a caller in the file passes one (`Trainer(model,
        rank)` fills `gpu_id`), or when it is the process index `mp.spawn` passes."""
        func = scope.node
        if not isinstance(func, cst.FunctionDef) or depth > _MAX_DEPTH:
            return None
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        if index == 0 and func in self._spawned():
            return LOCAL_RANK
        kinds: set[str | None] = set()
        for site, offset in self.calls.invocations(func):
            value = argument_for(site.node, param.name.value, index, offset)
            if value is not None:
                kinds.add(self.rank_kind(value, site.scope, depth))
        kinds.discard(None)
        if not kinds:
            return None
        return GLOBAL if GLOBAL in kinds else LOCAL_RANK

    def is_spawn_index(self, param: cst.Param, scope: Scope) -> bool:
        """`param` is the process index `mp.spawn(f, ...)` passes first to `f`: the
        local rank of the process on its node."""
        func = scope.node
        if not isinstance(func, cst.FunctionDef) or func not in self._spawned():
            return False
        positional = [*func.params.posonly_params, *func.params.params]
        return bool(positional) and positional[0] is param

    def _spawned(self) -> set[cst.FunctionDef]:
        """Functions started once per process by `mp.spawn(f, ...)`: `f(i, *args)`."""
        if self._spawn_targets is None:
            self._spawn_targets = set()
            for site in self.facts.calls:
                args = site.node.args
                if not args or args[0].keyword is not None:
                    continue
                if resolves_to(site.node.func, site.scope, _SPAWN):
                    target = args[0].value
                    bindings = (
                        site.scope.lookup(target.value) if isinstance(target, cst.Name) else None
                    )
                    for binding in bindings or ():
                        if isinstance(binding.node, cst.FunctionDef):
                            self._spawn_targets.add(binding.node)
        return self._spawn_targets

    def _call_rank_kind(self, call: cst.Call, scope: Scope, depth: int) -> str | None:
        key = env_key(call, scope)
        if key is not None:
            return _env_kind(key)
        func = call.func
        if (
            isinstance(func, cst.Name)
            and func.value in ("int", "str")
            and len(call.args) == 1
            and resolves_to(func, scope, {f"builtins.{func.value}"})
        ):
            return self.rank_kind(call.args[0].value, scope, depth + 1)
        names = qualified_names(func, scope)
        if names and LOCAL not in names:
            kinds = {_RANK_CALLS.get(n) or _horovod_kind(n) for n in names}
            if len(kinds) == 1 and None not in kinds:
                return kinds.pop()
        local = self._local_function(func, scope)
        if local is not None:
            fdef, fscope = local
            kinds = {self.rank_kind(v, fscope, depth + 1) for v in returns(fdef) if v is not None}
            kinds.discard(None)
            if kinds:
                return GLOBAL if GLOBAL in kinds else LOCAL_RANK
        name = last_name(func)
        return _RANK_CALL_NAMES.get(name) if name else None

    def _local_function(
        self, func: cst.BaseExpression, scope: Scope
    ) -> tuple[cst.FunctionDef, Scope] | None:
        if not isinstance(func, cst.Name):
            return None
        bindings = scope.lookup(func.value)
        if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.FunctionDef):
            return None
        fdef = bindings[0].node
        fscope = self.facts.scope_of.get(fdef)
        return (fdef, fscope) if fscope is not None else None

    def is_rank(self, expr: cst.BaseExpression, scope: Scope) -> bool:
        return self.rank_kind(expr, scope) is not None

    def mentions_rank(self, expr: cst.CSTNode, scope: Scope) -> bool:
        for sub in sub_expressions(expr):
            if isinstance(sub, (cst.Name, cst.Attribute, cst.Call, cst.Subscript)) and self.is_rank(
                sub, scope
            ):
                return True
        return False

    # -- which conditions admit one process ------------------------------------

    def one_process(
        self, expr: cst.BaseExpression, scope: Scope, positive: bool = True, depth: int = 0
    ) -> Verdict:
        """Verdict on "only one process gets here when `expr` is truthy (falsy if not positive)"."""
        if depth > _MAX_DEPTH:
            return Verdict.UNSURE
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.one_process(expr.expression, scope, not positive, depth + 1)
        if isinstance(expr, cst.BooleanOperation):
            return self._boolean(expr, scope, positive, depth)
        if isinstance(expr, cst.Comparison):
            return self._comparison(expr, scope, positive, depth)
        if _is_bool_literal(expr):
            return Verdict.NO
        name = last_name(expr)
        if name is not None and _MAIN_SPELLING.match(name.lower()):
            return Verdict.YES if positive else Verdict.NO
        if self.is_rank(expr, scope):
            return Verdict.NO if positive else Verdict.YES  # `if rank:` is every rank but 0
        if isinstance(expr, cst.Name):
            alias = self._alias(expr, scope, positive, depth)
            if alias is not None:
                return alias
        if isinstance(expr, cst.Call):
            local = self._local_function(expr.func, scope)
            if local is not None:
                fdef, fscope = local
                values = list(returns(fdef))
                if values and all(v is not None for v in values):
                    return min(
                        self.one_process(v, fscope, positive, depth + 1)
                        for v in values
                        if v is not None
                    )
        return Verdict.UNSURE if self.mentions_rank(expr, scope) else Verdict.NO

    def _alias(self, expr: cst.Name, scope: Scope, positive: bool, depth: int) -> Verdict | None:
        """`master_process = rank == 0` (and `master_process = True` when not distributed)."""
        bindings = scope.lookup(expr.value)
        if not bindings:
            return None
        memo_key = (id(bindings), len(bindings), positive, depth)
        known = self._name_verdicts.get(memo_key)
        if known is None or known[0] is not bindings:
            known = (bindings, self._bound_alias(bindings, positive, depth))
            self._name_verdicts[memo_key] = known
        return known[1]

    def _bound_alias(self, bindings: list[Binding], positive: bool, depth: int) -> Verdict | None:
        if any(b.value is None or b.scope is None for b in bindings):
            return None
        verdicts = [
            self.one_process(b.value, b.scope, positive, depth + 1)
            for b in bindings
            if b.value is not None and b.scope is not None and not _is_bool_literal(b.value)
        ]
        # a literal beside the rank test is the script's single-process branch
        return min(verdicts) if verdicts else None

    def _boolean(
        self, expr: cst.BooleanOperation, scope: Scope, positive: bool, depth: int
    ) -> Verdict:
        left = expr.left
        right = expr.right
        conjunction = isinstance(expr.operator, cst.And) == positive
        if conjunction:  # `a and b`, or `not (a or b)`: either side narrowing is enough
            return max(
                self.one_process(left, scope, positive, depth + 1),
                self.one_process(right, scope, positive, depth + 1),
            )
        # `a or b`: every branch must admit one process, or be the non-distributed case
        verdicts = [
            Verdict.YES
            if self.single_process(side, scope, positive)
            else self.one_process(side, scope, positive, depth + 1)
            for side in (left, right)
        ]
        if all(self.single_process(side, scope, positive) for side in (left, right)):
            return Verdict.NO
        return min(verdicts)

    def single_process(self, expr: cst.BaseExpression, scope: Scope, positive: bool) -> bool:
        """`not dist.is_initialized()`, `not args.distributed`, `world_size == 1`."""
        if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Not):
            return self.single_process(expr.expression, scope, not positive)
        if isinstance(expr, cst.Comparison) and len(expr.comparisons) == 1:
            target = expr.comparisons[0]
            size = _const(target.comparator)
            text = _dotted_or_call_name(expr.left)
            if size is not None and text is not None and _WORLD_SIZE.search(text):
                op = target.operator
                one = (
                    (isinstance(op, cst.Equal) and size == 1)
                    or (isinstance(op, cst.LessThanEqual) and size == 1)
                    or (isinstance(op, cst.LessThan) and size == 2)
                )
                many = (isinstance(op, cst.GreaterThan) and size == 1) or (
                    isinstance(op, cst.NotEqual) and size == 1
                )
                return one if positive else many
            return False
        if positive:
            return False
        if isinstance(expr, cst.Call):
            names = qualified_names(expr.func, scope)
            if names and names <= {IS_INITIALIZED, "torch.distributed.is_available"}:
                return True
        text = _dotted_or_call_name(expr)
        return text is not None and bool(_SINGLE_PROCESS_FLAG.search(text))

    def _comparison(
        self, expr: cst.Comparison, scope: Scope, positive: bool, depth: int
    ) -> Verdict:
        if len(expr.comparisons) != 1:
            return Verdict.UNSURE if self.mentions_rank(expr, scope) else Verdict.NO
        target = expr.comparisons[0]
        op = target.operator
        left, right = expr.left, target.comparator
        if (
            isinstance(op, (cst.Is, cst.IsNot))
            and isinstance(right, cst.Name)
            and right.value == "None"
        ):
            return Verdict.NO  # `args.gpu is not None` asks whether it is set, not who runs
        # `is_master == True`, `flag is False`
        if isinstance(op, (cst.Equal, cst.Is, cst.NotEqual, cst.IsNot)) and _is_bool_literal(right):
            assert isinstance(right, cst.Name)
            same = (right.value == "True") == isinstance(op, (cst.Equal, cst.Is))
            return self.one_process(left, scope, positive == same, depth + 1)
        flipped = False
        if not self.is_rank(left, scope) and self.is_rank(right, scope):
            left, right, flipped = right, left, True
        if not self.is_rank(left, scope):
            # `rank % 8 == 0`: the first process of each node, a deliberate choice
            if (
                isinstance(left, cst.BinaryOperation)
                and isinstance(left.operator, cst.Modulo)
                and self.is_rank(left.left, scope)
                and isinstance(op, cst.Equal)
            ):
                return Verdict.YES if positive else Verdict.NO
            return Verdict.UNSURE if self.mentions_rank(expr, scope) else Verdict.NO
        values = _consts(right) if isinstance(op, (cst.In, cst.NotIn)) else None
        constant = _const(right)
        if values is None and constant is None:
            if isinstance(op, cst.Equal):
                return Verdict.YES if positive else Verdict.UNSURE
            if isinstance(op, cst.NotEqual):
                return Verdict.UNSURE if positive else Verdict.YES
            return Verdict.UNSURE

        def holds(rank: int) -> bool:
            a, b = (constant, rank) if flipped else (rank, constant)
            if values is not None:
                return (rank in values) == isinstance(op, cst.In)
            assert a is not None and b is not None
            if isinstance(op, cst.Equal):
                return a == b
            if isinstance(op, cst.NotEqual):
                return a != b
            if isinstance(op, cst.LessThan):
                return a < b
            if isinstance(op, cst.LessThanEqual):
                return a <= b
            if isinstance(op, cst.GreaterThan):
                return a > b
            if isinstance(op, cst.GreaterThanEqual):
                return a >= b
            raise _Unreadable

        try:
            admitted = [r for r in range(8) if holds(r) == positive]
        except _Unreadable:
            return Verdict.UNSURE
        return Verdict.YES if len(admitted) <= 1 else Verdict.NO

    def guarded(self, guards: Sequence[Guard], scope: Scope) -> bool:
        return any(
            self.one_process(test, scope, polarity) >= Verdict.UNSURE for test, polarity in guards
        )

    # -- the script's own rank variable ----------------------------------------

    def rank_variables(self, scope: Scope) -> Iterator[RankVariable]:
        """Global-rank variables visible at `scope`, nearest first: names bound in `scope`
        or an enclosing scope (LEGB), then `self.<attr>` / `args.<attr>`."""
        current: Scope | None = scope
        while current is not None:
            if current.kind != "class" or current is scope:
                here: list[RankVariable] = []
                for name in current.bindings:
                    candidate = self._name_variable(name, current)
                    if candidate is not None and _visible(name, scope, current):
                        here.append(candidate)
                # `rank == 0` reads better than `RANK in (-1, 0)`
                here.sort(key=lambda v: (v.minus_one, v.source != "rank", v.source))
                yield from here
            current = current.parent
        attribute = self._attribute_variable(scope)
        if attribute is not None:
            yield attribute

    def _name_variable(self, name: str, owner: Scope) -> RankVariable | None:
        key = (id(owner), name)
        if key not in self._name_variables:
            self._name_variables[key] = self._read_name_variable(name, owner)
        return self._name_variables[key]

    def _read_name_variable(self, name: str, owner: Scope) -> RankVariable | None:
        bindings = owner.bindings[name]
        if any(b.kind is BindingKind.IMPORT for b in bindings):
            return None
        kinds: set[str | None] = set()
        minus_one = False
        for binding in bindings:
            if isinstance(binding.node, cst.Param):
                kinds.add(_spelled_kind(name))
                default = binding.node.default
                minus_one = minus_one or (default is not None and _const(default) == -1)
            elif binding.value is not None and binding.scope is not None:
                value = binding.value
                if _const(value) is not None:
                    minus_one = minus_one or _const(value) == -1
                    continue  # a default beside the real assignment
                spelled = _spelled_kind(name) if _could_be_int(value) else None
                kinds.add(self.rank_kind(value, binding.scope) or spelled)
                minus_one = minus_one or _env_default(value) == -1
            else:
                kinds.add(None)
        if kinds != {GLOBAL}:
            return None
        return RankVariable(name, minus_one, tuple(b.node for b in bindings))

    def _attribute_variable(self, scope: Scope) -> RankVariable | None:
        """`self.rank` / `args.rank` assigned from a global rank somewhere in the file
        (`args.rank = int(os.environ["RANK"])`). An argparse `--rank` alone does not
        count: nothing sets it from the launcher's rank."""
        for attr in sorted(self.attributes):
            assignments = self.attributes[attr]
            read = self._attribute_kind(attr)
            if read is None:
                continue
            receiver = read[0]
            visible = scope.lookup(receiver)
            if not visible or any(_is_star_param(b.node, b.scope) for b in visible):
                continue  # `def save_on_master(*args)`: this `args` is a tuple
            if receiver == "self":
                owner = _class_of_method(scope)
                if owner is None or any(a.class_def is not owner for a in assignments):
                    continue
            option = self.facts.argparse_options.get(attr)
            minus_one = any(_const(a.value) == -1 for a in assignments) or (
                receiver in self.facts.args_names
                and option is not None
                and option.default is not None
                and _const(option.default) == -1
            )
            return RankVariable(f"{receiver}.{attr}", minus_one, ())
        return None

    def _attribute_kind(self, attr: str) -> tuple[str, bool] | None:
        """(the one receiver, True) when every assignment of `<receiver>.<attr>` is a
        global rank (none a local one); None otherwise. The same for every asker."""
        if attr not in self._attribute_kinds:
            assignments = self.attributes[attr]
            receivers = {a.receiver for a in assignments}
            found: tuple[str, bool] | None = None
            if len(receivers) == 1:
                kinds = {
                    self.rank_kind(a.value, a.scope) for a in assignments if _could_be_int(a.value)
                }
                if GLOBAL in kinds and LOCAL_RANK not in kinds:
                    found = (receivers.pop(), True)
            self._attribute_kinds[attr] = found
        return self._attribute_kinds[attr]

    def main_process_predicate(self, scope: Scope) -> cst.FunctionDef | None:
        """A module-level function of the file, callable without arguments from `scope`,
        that returns whether this is the one main process (`def is_main_process(): return
        get_rank() == 0`): read from its returns, not from its name alone."""
        for func, owner, cls in self.facts.function_defs:
            name = func.name.value
            if cls is not None or owner is not self.facts.module_scope:
                continue
            if not _MAIN_SPELLING.match(name.lower()) or _required_params(func):
                continue
            bindings = scope.lookup(name)
            if not bindings or any(b.node is not func for b in bindings):
                continue
            fscope = self.facts.scope_of.get(func)
            values = list(returns(func))
            if fscope is None or not values:
                continue
            if all(v is not None and self.one_process(v, fscope) is Verdict.YES for v in values):
                return func
        return None


class _Unreadable(Exception):
    pass


@dataclass(frozen=True)
class RankVariable:
    """A rank variable a fix can test. `minus_one`: it is -1 when not distributed."""

    source: str
    minus_one: bool
    binding_nodes: tuple[cst.CSTNode | None, ...]

    def zero_test(self) -> str:
        return f"{self.source} in (-1, 0)" if self.minus_one else f"{self.source} == 0"


_NOT_INT = (
    cst.SimpleString,
    cst.FormattedString,
    cst.ConcatenatedString,
    cst.Float,
    cst.Imaginary,
    cst.List,
    cst.Tuple,
    cst.Set,
    cst.Dict,
    cst.ListComp,
    cst.SetComp,
    cst.DictComp,
    cst.GeneratorExp,
    cst.Lambda,
    cst.Comparison,
)


def _could_be_int(expr: cst.BaseExpression) -> bool:
    """False for values that are certainly not a rank number (strings, containers, tests)."""
    if isinstance(expr, cst.BinaryOperation):
        return _could_be_int(expr.left) and _could_be_int(expr.right)
    return not isinstance(expr, _NOT_INT) and not _is_bool_literal(expr)


def _visible(name: str, at: Scope, owner: Scope) -> bool:
    bindings = at.lookup(name)
    if not bindings:
        return False
    return all(b.scope is owner for b in bindings)


def _is_star_param(node: cst.CSTNode | None, scope: Scope | None) -> bool:
    func = scope.node if scope is not None else None
    return (
        node is not None
        and isinstance(func, (cst.FunctionDef, cst.Lambda))
        and node in (func.params.star_arg, func.params.star_kwarg)
    )


def _required_params(func: cst.FunctionDef) -> bool:
    params = func.params
    return any(
        p.default is None for p in (*params.posonly_params, *params.params, *params.kwonly_params)
    )


def _class_of_method(scope: Scope) -> cst.ClassDef | None:
    current: Scope | None = scope
    while current is not None and current.kind != "function":
        current = current.parent
    if current is None or current.parent is None or current.parent.kind != "class":
        return None
    node = current.parent.node
    return node if isinstance(node, cst.ClassDef) else None


def _env_kind(key: str) -> str | None:
    if key in _GLOBAL_ENV:
        return GLOBAL
    if key in _LOCAL_ENV:
        return LOCAL_RANK
    return None


def _env_default(expr: cst.BaseExpression) -> int | None:
    """-1 for `int(os.environ.get("RANK", -1))`."""
    while isinstance(expr, cst.Call) and isinstance(expr.func, cst.Name) and len(expr.args) == 1:
        expr = expr.args[0].value
    if (
        isinstance(expr, cst.Call)
        and len(expr.args) == 2
        and last_name(expr.func) in ("get", "getenv")
    ):
        return _const(expr.args[1].value)
    return None


def _horovod_kind(name: str) -> str | None:
    if not name.startswith("horovod."):
        return None
    if name.endswith(".local_rank"):
        return LOCAL_RANK
    if name.endswith(".rank"):
        return GLOBAL
    return None


def _spelled_kind(name: str) -> str | None:
    lower = name.lower()
    if lower in _NOT_RANK or not _RANK_SPELLING.match(lower):
        return None
    return LOCAL_RANK if "local" in lower else GLOBAL


def _dotted_or_call_name(expr: cst.BaseExpression) -> str | None:
    if isinstance(expr, cst.Call):
        expr = expr.func
    parts: list[str] = []
    while isinstance(expr, cst.Attribute):
        parts.append(expr.attr.value)
        expr = expr.value
    if isinstance(expr, cst.Name):
        parts.append(expr.value)
        return ".".join(reversed(parts))
    return None


def has_main_process_decorator(func: cst.FunctionDef) -> bool:
    """`@rank_zero_only`, `@accelerator.on_main_process`, `@master_only` (mmcv)."""
    return any(last_name(d.decorator) in _MAIN_DECORATORS for d in func.decorators)


# -- the small functional API ---------------------------------------------------


def is_guarded_to_one_process(guards: Sequence[Guard], scope: Scope, facts: FileFacts) -> bool:
    """True when one of `guards` (enclosing ifs and early exits) admits one process only."""
    return RankAnalysis.of(facts).guarded(guards, scope)
