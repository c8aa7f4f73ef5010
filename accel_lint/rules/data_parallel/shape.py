"""What the survey of a DataParallel script finds: the nodes each migration step
edits, and the reason when the script's shape is beyond the codemod (`NoFix`).

The shape the codemod handles is the one of the DataParallel tutorials and of
most single-file training scripts: `model = DataParallel(model)` (possibly
under an `if`), in `main()`, in an `if __name__ == "__main__":` block or at
module level, in the same block as an epoch loop that iterates a DataLoader
(directly or through a function it calls) with `.backward()` inside.
"""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts
from accel_lint.names import Scope
from accel_lint.rules.data_parallel.plan import Plan, Statement
from accel_lint.rules.data_parallel.tree import Block, Tree

ALREADY_DISTRIBUTED = (
    "the script already uses torch.distributed (a process group or DistributedDataParallel)"
)


class NoFix(Exception):
    """The script's shape is beyond the codemod; the message says why."""


@dataclass(frozen=True)
class Reference:
    """An expression that denotes DataParallel, and the scope it is read in."""

    node: cst.BaseExpression
    scope: Scope


@dataclass(frozen=True)
class Wrap:
    """`model = DataParallel(model)`: the call, its line, the `if`s it sits in."""

    call: cst.Call
    statement: cst.SimpleStatementLine
    target: str  # the name the wrapped model is bound to
    # `if torch.cuda.device_count() > 1:` around it, innermost first: the wrap leaves them
    guards: tuple[cst.If, ...]
    before: bool  # the wrap goes before the outermost guard (else after it)
    chained: cst.Call | None  # `DataParallel(model).eval().to(device)`: the outermost call
    module_arg: cst.Arg
    devices: str | None  # how many devices `device_ids` lists (`2`, `args.num_gpus`)
    moved: bool  # the model is on its device before the wrap
    # the same model wrapped again in the other branches of an `if` (every path wraps
    # once): each is rewritten in place, like this one
    others: tuple[Wrap, ...] = ()


@dataclass(frozen=True)
class TrainingLoader:
    """A DataLoader iterated with `.backward()` in the loop: it gets a sampler."""

    call: cst.Call
    statement: cst.SimpleStatementLine
    name: str
    dataset: cst.Arg
    dataset_name: str | None  # a dataset built in the call is bound to this name first
    batch_size: cst.Arg
    shuffle: str  # the order the sampler keeps: the loader's `shuffle=` (or "False")
    shuffle_arg: cst.Arg | None  # `shuffle=...`: `sampler=` takes its place
    sampler: str  # the name the DistributedSampler is bound to
    depth: int  # how many blocks deep its line is
    in_helper: bool = False  # in the function the anchor block calls to train
    # `train_sampler = None` before a loader given `sampler=train_sampler` (the ImageNet
    # template without its distributed path): the sampler is built there instead
    none_sampler: cst.Assign | None = None
    # the loader's name is bound in several branches of one `if`: `set_epoch` goes
    # through `<loader>.sampler`, whichever branch built it
    branches: bool = False


@dataclass(frozen=True)
class EpochLoop:
    loop: cst.For | cst.While
    epoch: str  # the loop variable (or a `while` loop's epoch counter) `set_epoch` receives
    rename: bool  # the target was `_`: it becomes `epoch`
    samplers: tuple[str, ...]
    # a `while` loop's `epochs += 1`: `set_epoch` goes right after it
    after: cst.BaseStatement | None = None
    # a `while` loop that counts no epochs: `epoch` is a new counter of its passes
    counts: bool = False


@dataclass(frozen=True)
class RankZero:
    """A `torch.save(...)` or `print(...)` line that only rank 0 must run."""

    statement: cst.SimpleStatementLine
    block: Block  # the block that lists it (consecutive ones share one `if`)
    in_anchor: bool  # in the anchor block (`rank` is visible) or in a helper function


@dataclass(frozen=True)
class Names:
    """How the new code spells what it uses, in the file's import style."""

    environ: str  # os.environ
    cuda: str  # torch.cuda
    dist: str  # torch.distributed
    ddp: str  # DistributedDataParallel
    sampler: str  # DistributedSampler
    imports: Plan  # imports to add, and import statements to edit


@dataclass(frozen=True)
class Shape:
    tree: Tree
    module: cst.Module
    wrap: Wrap
    block: Block  # the anchor block: the process group is set up and destroyed in it
    depth: int  # how many blocks deep the anchor block is (for line lengths)
    setup_before: Statement  # the first statement that needs the process group
    end: Statement  # destroy after it (or before it, when it is a `return`)
    end_is_return: bool
    loaders: tuple[TrainingLoader, ...]
    epoch_loops: tuple[EpochLoop, ...]
    rank_zero: tuple[RankZero, ...]
    references: tuple[cst.BaseExpression, ...]  # `isinstance(m, DataParallel)` operands
    directories: tuple[cst.Call, ...]  # `os.mkdir(d)` calls every process now makes
    names: Names


# -- small questions several steps ask --------------------------------------------------


def is_none(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value == "None"


def as_statement(node: cst.BaseStatement) -> Statement:
    assert isinstance(node, (cst.SimpleStatementLine, cst.BaseCompoundStatement))
    return node


def depth_of(node: cst.CSTNode, tree: Tree) -> int:
    """How many blocks deep `node` is (a block counts itself)."""
    return sum(isinstance(a, cst.IndentedBlock) for a in [node, *tree.ancestors(node)])


def line_of(node: cst.CSTNode, tree: Tree) -> str:
    """The first line of the statement holding `node`, for messages."""
    statement = tree.statement(node) or node
    if isinstance(statement, (cst.SimpleStatementLine, cst.BaseCompoundStatement)):
        statement = statement.with_changes(leading_lines=())
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        statement = statement.with_changes(decorators=())
    return code_for(statement).strip().splitlines()[0]


def local_function(
    callee: cst.BaseExpression, scope: Scope, facts: FileFacts
) -> tuple[cst.FunctionDef, Scope] | None:
    """The def a plain-name call runs, when the name is bound once, by that def."""
    if not isinstance(callee, cst.Name):
        return None
    bindings = scope.lookup(callee.value) or []
    if len(bindings) == 1 and isinstance(bindings[0].node, cst.FunctionDef):
        func = bindings[0].node
        own = facts.scope_of.get(func)
        if own is not None:
            return func, own
    return None
