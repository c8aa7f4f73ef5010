"""The process group: set up from torchrun's environment before the first statement
that needs it, destroyed at the end of the same block. Every device the script
names must be "the current CUDA device", which `torch.cuda.set_device(local_rank)`
then makes the process's own.

`setup_position`, `end_of` and `check_devices` survey; `set_up_and_tear_down` is
the step.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts, int_value, string_value
from accel_lint.names import Scope, qualified_names, resolves_to
from accel_lint.rules.data_parallel.plan import Plan, Statement
from accel_lint.rules.data_parallel.shape import NoFix, Shape, as_statement
from accel_lint.rules.data_parallel.source import BLANK, statements
from accel_lint.rules.data_parallel.tree import Block, Tree, calls_in, method_name
from accel_lint.torch_api import CUDA_SET_DEVICE, TORCH_DEVICE

NEW_NAMES = ("local_rank", "rank", "world_size")
_COMMENT = "# set by torchrun (one process per device); plain `python` runs one process"
_SETUP = """\
local_rank = int({environ}.get("LOCAL_RANK", 0))
rank = int({environ}.get("RANK", 0))
world_size = int({environ}.get("WORLD_SIZE", 1))
{environ}.setdefault("MASTER_ADDR", "127.0.0.1")
{environ}.setdefault("MASTER_PORT", "0")  # torchrun sets the real one
if {cuda}.is_available():
    {cuda}.set_device(local_rank)
{dist}.init_process_group(
    "nccl" if {cuda}.is_available() else "gloo", rank=rank, world_size=world_size
)
"""
_ARGPARSE_METHODS = frozenset(
    {
        "add_argument",
        "add_argument_group",
        "add_mutually_exclusive_group",
        "add_subparsers",
        "add_parser",
        "parse_args",
        "parse_known_args",
        "set_defaults",
    }
)
_HARMLESS_CALLS = frozenset(
    {
        "argparse.ArgumentParser",
        "torch.manual_seed",
        "torch.cuda.manual_seed",
        "torch.cuda.manual_seed_all",
        "random.seed",
        "numpy.random.seed",
    }
)
_PINNED = re.compile(r"^cuda:\d")


def setup_position(block: Block, scope: Scope) -> Statement:
    """The first statement of the anchor block that may need the process group."""
    for name in NEW_NAMES:
        if scope.lookup(name) is not None:
            raise NoFix(f"the script already uses the name `{name}`")
    return next(as_statement(s) for s in block.body if not _preamble(s, scope))


def _preamble(statement: cst.BaseStatement, scope: Scope) -> bool:
    """Statements that may stay before the process group: imports, definitions,
    constants, argument parsing and seeding."""
    if isinstance(statement, (cst.FunctionDef, cst.ClassDef)):
        return True
    if not isinstance(statement, cst.SimpleStatementLine):
        return False
    for small in statement.body:
        if isinstance(small, (cst.Import, cst.ImportFrom, cst.Pass, cst.Global, cst.Nonlocal)):
            continue
        if not isinstance(small, (cst.Expr, cst.Assign, cst.AnnAssign)):
            return False
        for call in calls_in(small):
            if method_name(call) in _ARGPARSE_METHODS:
                continue
            names = qualified_names(call.func, scope)
            if not names or not names <= _HARMLESS_CALLS:
                return False
    return True


def end_of(block: Block) -> tuple[Statement, bool]:
    """The anchor block's last statement, and whether it is a `return`."""
    last = as_statement(block.body[-1])
    is_return = (
        isinstance(last, cst.SimpleStatementLine)
        and len(last.body) == 1
        and isinstance(last.body[0], cst.Return)
    )
    return last, is_return


def check_devices(facts: FileFacts, tree: Tree) -> None:
    """`NoFix` when the script pins a device index or picks its device itself."""
    for site in facts.calls:
        call = site.node
        func = call.func
        method = method_name(call)
        last = method or (func.value if isinstance(func, cst.Name) else None)
        pinned = False
        if method == "cuda":
            pinned = any(a.keyword is None or a.keyword.value == "device" for a in call.args)
        elif method == "to":
            pinned = any(a.keyword is None and int_value(a.value) is not None for a in call.args)
        elif last == "set_device" and resolves_to(func, site.scope, CUDA_SET_DEVICE):
            raise NoFix("the script already picks its CUDA device (`torch.cuda.set_device`)")
        elif last == "device" and resolves_to(func, site.scope, TORCH_DEVICE):
            pinned = len(call.args) > 1
        if pinned:
            raise NoFix(
                f"`{code_for(call)}` pins a CUDA device; under torchrun each process must "
                "use its own"
            )
    for node in tree.nodes():
        if isinstance(node, cst.SimpleString):
            text = string_value(node)
            pinned = text is not None and bool(_PINNED.match(text))
        elif isinstance(node, cst.FormattedString):
            first = node.parts[0] if node.parts else None
            pinned = isinstance(first, cst.FormattedStringText) and first.value.startswith("cuda:")
        else:
            continue
        if pinned:
            raise NoFix(
                f"the script names the device `{code_for(node)}`; under torchrun each "
                "process must use its own"
            )


# -- the step ---------------------------------------------------------------------------


def set_up_and_tear_down(shape: Shape) -> Plan:
    names = shape.names
    plan = Plan()
    setup = statements(
        _SETUP.format(environ=names.environ, cuda=names.cuda, dist=names.dist), shape.module
    )
    first = shape.setup_before
    blanks, rest = _split_leading(first.leading_lines)
    if not blanks and shape.block.body[0] is not first:
        blanks = [BLANK]
    comment = cst.EmptyLine(comment=cst.Comment(_COMMENT))
    setup[0] = setup[0].with_changes(leading_lines=[*blanks, comment])
    plan.insert_before(first, setup)
    plan.rewrite(first, lambda node: node.with_changes(leading_lines=[BLANK, *rest]))
    destroy = statements(f"{names.dist}.destroy_process_group()\n", shape.module)
    if shape.end_is_return:
        plan.insert_before(shape.end, destroy)
    else:
        plan.insert_after(shape.end, destroy)
    return plan


def _split_leading(
    lines: Sequence[cst.EmptyLine],
) -> tuple[list[cst.EmptyLine], list[cst.EmptyLine]]:
    """The blank lines above a statement, and its comment block (which stays with it)."""
    index = 0
    while index < len(lines) and lines[index].comment is None:
        index += 1
    return list(lines[:index]), list(lines[index:])
