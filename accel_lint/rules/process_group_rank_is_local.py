"""ACL414 process-group-rank-is-local: `init_process_group(..., rank=<local rank>)`
while the world may span several nodes: the ranks repeat on every node and the job
hangs. Page: rules/ACL414.md

A value is a local rank only when the file shows it on every path: `LOCAL_RANK` (or
another launcher's local variable) read from the environment, a `--local_rank` /
`--gpu` option, the process index `mp.spawn` passes, or a name or attribute bound only
to those. A rank computed from a node rank (`node_rank * gpus + gpu`) is global. The
world is one node when `world_size` is `torch.cuda.device_count()`, `len(...)` or a
literal, or the rendezvous address is the machine itself.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.literals import string_value
from accel_lint.facts.ranks import LOCAL_RANK, RankAnalysis, env_key
from accel_lint.facts.syntax import argument_for, descendants
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.rule import FixSafety, Rule
from accel_lint.torch_api import CUDA_DEVICE_COUNT, INIT_PROCESS_GROUP

_MAX_DEPTH = 4
_LOCAL_ENV = frozenset(
    {"LOCAL_RANK", "SLURM_LOCALID", "OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID"}
)
_LOCAL_OPTIONS = frozenset({"local_rank", "gpu", "local_process_rank"})
# init_process_group(backend, init_method, timeout, world_size, rank, store, ...)
_WORLD_SIZE_POSITION = 3
_RANK_POSITION = 4
_THIS_MACHINE = ("localhost", "127.0.0.1")
_SPAWN = frozenset({"torch.multiprocessing.spawn", "torch.multiprocessing.spawn.spawn"})


class ProcessGroupRankIsLocal(Rule):
    code = "ACL414"
    name = "process-group-rank-is-local"
    summary = "init_process_group(rank=<local rank>): ranks repeat on every node"
    fix_safety = FixSafety.NONE

    def finish(self) -> None:
        sites = self.facts.calls_resolving_to(INIT_PROCESS_GROUP)
        if not sites:
            return
        self._ranks = RankAnalysis.of(self.facts)
        self._calls = CallGraph.of(self.facts)
        for site in sites:
            call = site.node
            if any(a.star for a in call.args):
                continue
            rank = argument_for(call, "rank", _RANK_POSITION, 0)
            if rank is None or not self._local(rank, site.scope, 0):
                continue
            world = argument_for(call, "world_size", _WORLD_SIZE_POSITION, 0)
            if world is not None and self._one_node(world, site.scope, 0):
                continue
            init = argument_for(call, "init_method", 1, 0)
            address = string_value(init) if init is not None else None
            if address is not None and any(m in address for m in _THIS_MACHINE):
                continue
            if self._local_master():
                continue  # `os.environ["MASTER_ADDR"] = "localhost"`: one machine
            text = code_for(rank)
            self.report(
                rank,
                f"`rank={text}` is the process's rank on its own node: with more than one "
                "node the ranks repeat on every node and `init_process_group` waits forever "
                "for the missing ones; pass the global rank (`int(os.environ['RANK'])` under "
                "torchrun, or node rank * processes per node + local rank)",
            )

    def _local_master(self) -> bool:
        """The file points the rendezvous at this machine: `os.environ["MASTER_ADDR"] =
        "localhost"` (or 127.0.0.1)."""
        for statement in descendants(self.facts.module):
            if not isinstance(statement, cst.Assign) or len(statement.targets) != 1:
                continue
            target = statement.targets[0].target
            value = string_value(statement.value)
            if value not in _THIS_MACHINE or not isinstance(target, cst.Subscript):
                continue
            index = target.slice[0].slice if len(target.slice) == 1 else None
            if isinstance(index, cst.Index) and string_value(index.value) == "MASTER_ADDR":
                return True
        return False

    def _local(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        """`expr` holds the local rank on every path the file shows."""
        if depth > _MAX_DEPTH:
            return False
        key = env_key(expr, scope)
        if key is not None:
            return key in _LOCAL_ENV
        if isinstance(expr, cst.Call):
            if (
                isinstance(expr.func, cst.Name)
                and expr.func.value == "int"
                and len(expr.args) == 1
                and resolves_to(expr.func, scope, {"builtins.int"})
            ):
                return self._local(expr.args[0].value, scope, depth + 1)
            return self._ranks.rank_kind(expr, scope) == LOCAL_RANK
        if isinstance(expr, cst.Name):
            return self._local_name(expr, scope, depth)
        if isinstance(expr, cst.Attribute):
            return self._local_attribute(expr, scope, depth)
        return False

    def _local_name(self, expr: cst.Name, scope: Scope, depth: int) -> bool:
        bindings = scope.lookup(expr.value)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.IMPORT or binding.scope is None:
                return False
            node = binding.node
            if isinstance(node, cst.Param):
                if not self._local_param(node, binding.scope, depth):
                    return False
            elif binding.value is None or not self._local(binding.value, binding.scope, depth + 1):
                return False
        return True

    def _local_param(self, param: cst.Param, scope: Scope, depth: int) -> bool:
        if self._ranks.is_spawn_index(param, scope):
            return True
        func = scope.node
        if not isinstance(func, cst.FunctionDef):
            return False
        positional = [*func.params.posonly_params, *func.params.params]
        index = next((i for i, p in enumerate(positional) if p is param), None)
        values = [
            (argument_for(site.node, param.name.value, index, offset), site.scope)
            for site, offset in self._calls.invocations(func)
        ]
        return bool(values) and all(
            value is not None and self._local(value, at, depth + 1) for value, at in values
        )

    def _local_attribute(self, expr: cst.Attribute, scope: Scope, depth: int) -> bool:
        assignments = self.facts.attribute_assignments.get(expr.attr.value, ())
        option = self.facts.argparse_option_for(expr)
        if not assignments:
            return option is not None and option.dest in _LOCAL_OPTIONS
        if option is not None and option.dest not in _LOCAL_OPTIONS:
            return False
        return all(self._local(a.value, a.scope, depth + 1) for a in assignments)

    def _spawn_arguments(
        self, func: cst.FunctionDef, index: int | None
    ) -> list[tuple[cst.BaseExpression, Scope]]:
        """What `mp.spawn(func, args=(a, b), ...)` passes for the parameter at `index`:
        the process index comes first, then the `args` tuple."""
        out: list[tuple[cst.BaseExpression, Scope]] = []
        if index is None or index == 0:
            return out
        for site in self.facts.calls_resolving_to(_SPAWN):
            call = site.node
            target = call.args[0].value if call.args and call.args[0].keyword is None else None
            if not isinstance(target, cst.Name):
                continue
            bindings = site.scope.lookup(target.value) or []
            if not any(b.node is func for b in bindings):
                continue
            args = argument_for(call, "args", 1, 0)
            if isinstance(args, cst.Tuple) and index - 1 < len(args.elements):
                out.append((args.elements[index - 1].value, site.scope))
        return out

    def _one_node(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        """`world_size` counts the processes of one machine: the GPUs it has, the length
        of a list of devices, or a number written in the file."""
        if depth > _MAX_DEPTH:
            return False
        if isinstance(expr, cst.Integer):
            return True
        if isinstance(expr, cst.Call):
            if resolves_to(expr.func, scope, CUDA_DEVICE_COUNT | {"builtins.len"}):
                return True
            if resolves_to(expr.func, scope, {"builtins.int"}) and len(expr.args) == 1:
                return self._one_node(expr.args[0].value, scope, depth + 1)
            return False
        if not isinstance(expr, cst.Name):
            return False
        bindings = scope.lookup(expr.value)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.IMPORT or binding.scope is None:
                return False
            node = binding.node
            if isinstance(node, cst.Param):
                func = binding.scope.node
                if not isinstance(func, cst.FunctionDef):
                    return False
                positional = [*func.params.posonly_params, *func.params.params]
                index = next((i for i, p in enumerate(positional) if p is node), None)
                sites = self._calls.invocations(func)
                spawned = self._spawn_arguments(func, index)
                if not sites and not spawned:
                    return False
                if not all(self._one_node(v, at, depth + 1) for v, at in spawned):
                    return False
                for site, offset in sites:
                    value = argument_for(site.node, node.name.value, index, offset)
                    if value is None or not self._one_node(value, site.scope, depth + 1):
                        return False
            elif binding.value is None or not self._one_node(
                binding.value, binding.scope, depth + 1
            ):
                return False
        return True
