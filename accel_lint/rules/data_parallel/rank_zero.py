"""Checkpoints (and copies of them) and prints come from rank 0 only: consecutive
such lines share one `if rank == 0:` (`dist.get_rank() == 0` in helper
functions, where the block's `rank` is not visible). A line whose arguments may
need every process (a forward of the model, torch.distributed, a function of
the file) is not limited: a print keeps running everywhere, and a save makes
the script beyond the codemod.

`rank_zero_lines` surveys; `only_rank_zero` is the step.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.facts.ranks import is_guarded_to_one_process
from accel_lint.names import Scope, qualified_names, resolves_to
from accel_lint.rules.data_parallel.plan import GuardRun, Plan
from accel_lint.rules.data_parallel.region import Region
from accel_lint.rules.data_parallel.shape import NoFix, RankZero, Shape, line_of, local_function
from accel_lint.rules.data_parallel.tree import Tree, calls_in
from accel_lint.torch_api import TORCH_SAVE

# copies of a checkpoint (`shutil.copyfile(path, "model_best.pth")`): on another rank
# they would race with the save they copy
COPIES = frozenset(
    {"shutil.copyfile", "shutil.copy", "shutil.copy2", "shutil.copytree", "shutil.move"}
)
PRINT = frozenset({"builtins.print"})


def rank_zero_lines(
    facts: FileFacts, tree: Tree, region: Region, model: str
) -> tuple[RankZero, ...]:
    """`torch.save(...)` and `print(...)` lines that run once the process group exists."""
    found: list[RankZero] = []
    for site in region.sites:
        is_save = resolves_to(site.node.func, site.scope, TORCH_SAVE | COPIES)
        if not is_save and not resolves_to(site.node.func, site.scope, PRINT):
            continue
        if is_guarded_to_one_process(site.guards, site.scope, facts):
            continue
        statement = _sole_call_line(site.node, tree)
        if statement is None or _may_communicate(site.node, site.scope, facts, model):
            if is_save:
                raise NoFix(
                    f"`{line_of(site.node, tree)}` cannot be limited to rank 0 automatically"
                )
            continue
        block = tree.block(statement)
        assert block is not None
        found.append(RankZero(statement, block, region.in_block(site)))
    return tuple(found)


def _may_communicate(call: cst.Call, scope: Scope, facts: FileFacts, model: str) -> bool:
    """Whether computing the call's arguments may need every process: a forward of the
    wrapped model (DDP may broadcast buffers), torch.distributed, or a function of
    the file (which may do either). `print(f"{evaluate(model)}")` must stay on all ranks."""
    for inner in calls_in(call):
        func = inner.func
        if isinstance(func, cst.Name) and func.value == model:
            return True
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == "self"
        ):
            return True
        if local_function(func, scope, facts) is not None:
            return True
        if any(n.startswith("torch.distributed.") for n in qualified_names(func, scope)):
            return True
    return False


def _sole_call_line(call: cst.Call, tree: Tree) -> cst.SimpleStatementLine | None:
    """The line `call` is alone on, as a statement of a block."""
    statement = tree.statement(call)
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and statement.body[0].value is call
        and tree.block(statement) is not None
    ):
        return statement
    return None


# -- the step ---------------------------------------------------------------------------


def only_rank_zero(shape: Shape) -> Plan:
    plan = Plan()
    chosen = {id(r.statement): r for r in shape.rank_zero}
    blocks = {id(r.block): r.block for r in shape.rank_zero}
    for block in blocks.values():
        run: list[RankZero] = []
        for statement in [*block.body, None]:
            current = chosen.get(id(statement)) if statement is not None else None
            if run and (current is None or current.in_anchor != run[0].in_anchor):
                plan.guards.append(_guard(run, shape))
                run = []
            if current is not None:
                run.append(current)
    return plan


def _guard(run: list[RankZero], shape: Shape) -> GuardRun:
    test = "rank == 0" if run[0].in_anchor else f"{shape.names.dist}.get_rank() == 0"
    return GuardRun(test, tuple(r.statement for r in run))
