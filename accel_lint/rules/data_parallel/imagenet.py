"""The ImageNet template: pytorch/examples' imagenet/main.py and its copies (MoCo,
SimSiam, EfficientNet-PyTorch's example). `main()` sets `args.distributed =
args.world_size > 1 or args.multiprocessing_distributed` and spawns one `main_worker`
per GPU (`--multiprocessing-distributed`) or calls it once; `main_worker` sets up the
process group when distributed (under `--dist-url env://` with `WORLD_SIZE` and `RANK`
from the environment) and places the model in one chain: `if args.distributed:` DDP
(on `args.gpu` when given: `set_device`, the node's batch divided among its GPUs,
`device_ids=[args.gpu]`), `elif args.gpu is not None:` one GPU, `else:` DataParallel
over every GPU.

torchrun drives that distributed path, one process per GPU, once `--dist-url` is
`env://` and each process has its own `--gpu`. The migration makes those the defaults
where torchrun's environment is, and drops what assumed DataParallel:

- `--dist-url` defaults to `env://` when `RANK` is set, `--gpu` to `LOCAL_RANK` when it
  is set and CUDA is available (on CPU, `--gpu` would send tensors to a missing GPU);
- the DataParallel fallback trains on the current GPU and sets `args.gpu` to it, as
  `--gpu` does: the template moves its inputs only when `args.gpu` is set
  (DataParallel scattered them from the CPU);
- the warning that a chosen GPU disables data parallelism goes: no path has it now,
  and under torchrun every process has its GPU;
- a test `not args.multiprocessing_distributed or ...` (the saves) also asks for
  `LOCAL_RANK` 0: torchrun's processes are not spawned, so each of them passed it.

Without torchrun's environment the script runs as before, as one process (or spawning
its own with `--multiprocessing-distributed`).

`imagenet_fix` recognises the template (None when the script is not one) and builds
the fix, or raises `NoFix` for a copy the migration cannot follow.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import ArgparseOption, CallSite, FileFacts, string_value
from accel_lint.facts.loops import Loops
from accel_lint.facts.ranks import env_key
from accel_lint.facts.syntax import argument_for, descendants, sub_expressions
from accel_lint.layout import fits, split_call
from accel_lint.names import Scope, root_is_module_import, spelling_for
from accel_lint.rule import Fix, Replacement
from accel_lint.rules.data_parallel.own_ddp import chain_head
from accel_lint.rules.data_parallel.shape import ALREADY_DISTRIBUTED, NoFix, is_none, line_of
from accel_lint.rules.data_parallel.source import expression, statements
from accel_lint.rules.data_parallel.tree import Tree
from accel_lint.torch_api import DDP, DISTRIBUTED_SAMPLER, INIT_PROCESS_GROUP

_WARN = frozenset({"warnings.warn"})
_STRING_TESTS = frozenset({"startswith", "endswith"})  # `args.arch.startswith("vgg")`
_SPAWNED = "multiprocessing_distributed"
_BRACKETS = (cst.Call, cst.Subscript, cst.List, cst.Tuple, cst.Set, cst.Dict, cst.BaseComp)


@dataclass(frozen=True)
class _Placement:
    """The chain that places the model: its `args.distributed` branch, and the later
    branch that wraps in DataParallel."""

    distributed: cst.If
    fallback: cst.If | cst.Else
    args: str  # the name main_worker reads its options from


def imagenet_fix(calls: Sequence[CallSite], facts: FileFacts, tree: Tree) -> Fix | None:
    """The migration of the ImageNet template whose DataParallel calls are `calls`."""
    placement = _placement(calls[0].node, facts, tree)
    if placement is None:
        return None
    if not Loops.of(facts).training_loops():
        raise NoFix(f"{ALREADY_DISTRIBUTED}, and trains nothing here")
    model = _fallback_model(placement.fallback, calls, tree)
    gpu = _option(facts, "gpu")
    url = _option(facts, "dist_url")
    if not is_none(gpu.default_value):
        raise NoFix(f"`{gpu.flag}` defaults to `{code_for(gpu.default_value)}`, not None")
    if string_value(url.default_value) is None:
        raise NoFix(f"`{url.flag}` has no string default")
    for dest in ("world_size", "rank"):
        option = _option(facts, dest)
        if _squeezed(option.default_value) != "-1":
            raise NoFix(f"`{option.flag}` does not default to -1, which torchrun's value replaces")
    if _SPAWNED not in facts.argparse_options:
        raise NoFix("the script has no `--multiprocessing-distributed` option")
    _distributed_path(placement, facts, tree)

    imports: list[str] = []
    module = facts.module_scope
    environ = _spelled("os.environ", module, imports)
    quote = _quote(url.default_value)

    def text(value: str) -> str:
        return f"{quote}{value}{quote}"

    local_rank = text("LOCAL_RANK")
    available = _spelled("torch.cuda.is_available", module, imports)
    replacements: dict[cst.CSTNode, Replacement] = dict(
        [
            _with_default(
                gpu,
                (
                    f"int({environ}[{local_rank}])",
                    f"{local_rank} in {environ} and {available}()",
                    code_for(gpu.default_value),
                ),
                tree,
            ),
            _with_default(
                url,
                (text("env://"), f"{text('RANK')} in {environ}", code_for(url.default_value)),
                tree,
            ),
        ]
    )
    current = _spelled("torch.cuda.current_device", calls[0].scope, imports)
    replacements[placement.fallback.body] = _one_gpu(placement, model, current, tree.module)
    for warning in _fallback_warnings(facts, tree):
        replacements[warning] = cst.RemovalSentinel.REMOVE
    first_of_node = f"{environ}.get({local_rank}, {text('0')}) == {text('0')}"
    for guard in _spawned_only(facts, tree):
        replacements[guard] = _also_first_of_node(guard, first_of_node, tree.module)
    return Fix(
        "Drop the DataParallel fallback: under `torchrun --nproc_per_node=<GPUs>` the "
        "script takes its own DistributedDataParallel path, one process per GPU "
        "(`--dist-url` defaults to `env://` and `--gpu` to `LOCAL_RANK` there); without "
        "torchrun it trains on one GPU",
        replacements,
        tuple(dict.fromkeys(imports)),
    )


# -- the template -----------------------------------------------------------------------


def _placement(call: cst.Call, facts: FileFacts, tree: Tree) -> _Placement | None:
    """The innermost chain with an `args.distributed` branch before the branch that
    holds `call`."""
    for ancestor in tree.ancestors(call):
        if isinstance(ancestor, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            return None
        if isinstance(ancestor, cst.If) and not tree.inside(call, ancestor.body):
            continue  # the call is in its `elif` or `else`: met as that branch
        if not isinstance(ancestor, (cst.If, cst.Else)):
            continue
        for earlier in chain_head(ancestor, tree):
            if earlier is not ancestor and _is_option(earlier.test, "distributed", facts):
                test = earlier.test
                assert isinstance(test, cst.Attribute) and isinstance(test.value, cst.Name)
                return _Placement(earlier, ancestor, test.value.value)
    return None


def _is_option(expr: cst.BaseExpression, attr: str, facts: FileFacts) -> bool:
    """`args.<attr>`, on a name the file parses its options into."""
    return (
        isinstance(expr, cst.Attribute)
        and expr.attr.value == attr
        and isinstance(expr.value, cst.Name)
        and expr.value.value in facts.args_names
    )


def _squeezed(expr: cst.CSTNode) -> str:
    """The source of `expr` without whitespace: equal for the same expression however
    it is laid out."""
    return "".join(code_for(expr).split())


@dataclass(frozen=True)
class _Option:
    arg: cst.Arg  # its `default=` argument
    default_value: cst.BaseExpression
    flag: str
    call: cst.Call


def _option(facts: FileFacts, dest: str) -> _Option:
    option: ArgparseOption | None = facts.argparse_options.get(dest)
    if option is None or option.default_arg is None or option.default is None:
        raise NoFix(f"the script has no `--{dest.replace('_', '-')}` option with a default")
    return _Option(option.default_arg, option.default, option.flag, option.call)


def _distributed_path(placement: _Placement, facts: FileFacts, tree: Tree) -> None:
    """The template's distributed path, as torchrun needs it: `NoFix` otherwise."""
    flag = facts.attribute_assignments.get("distributed", [])
    receiver = flag[0].receiver if flag else ""
    if len(flag) != 1 or _squeezed(flag[0].value) != _squeezed(
        cst.parse_expression(f"{receiver}.world_size > 1 or {receiver}.{_SPAWNED}")
    ):
        raise NoFix(
            "`args.distributed` is not `args.world_size > 1 or args.multiprocessing_distributed`"
        )
    for attr, key in (("world_size", "WORLD_SIZE"), ("rank", "RANK")):
        if not _read_under_env_url(attr, key, facts, tree):
            raise NoFix(f"`args.{attr}` is not read from `{key}` under `--dist-url env://`")
    setups = facts.calls_resolving_to(INIT_PROCESS_GROUP)
    if len(setups) != 1 or not _guarded_by_flag(setups[0], facts):
        raise NoFix("the process group is not set up once, when `args.distributed`")
    for keyword in ("init_method", "world_size", "rank"):
        value = argument_for(setups[0].node, keyword, None, 0)
        option = {"init_method": "dist_url"}.get(keyword, keyword)
        if value is None or not _is_option(value, option, facts):
            raise NoFix(f"`init_process_group` does not take `{keyword}=args.{option}`")
    if not any(
        tree.inside(site.node, placement.distributed.body) and _wraps_on_gpu(site, facts)
        for site in facts.calls_resolving_to(DDP)
    ):
        raise NoFix(
            "the `args.distributed` branch does not wrap in DistributedDataParallel with "
            "`device_ids=[args.gpu]` when `args.gpu is not None`"
        )
    if not any(_guarded_by_flag(s, facts) for s in facts.calls_resolving_to(DISTRIBUTED_SAMPLER)):
        raise NoFix("no DistributedSampler is built when `args.distributed`")


def _read_under_env_url(attr: str, key: str, facts: FileFacts, tree: Tree) -> bool:
    """`args.<attr> = int(os.environ["<key>"])` in an `if args.dist_url == "env://" ...:`."""
    for assignment in facts.attribute_assignments.get(attr, []):
        if not any(env_key(e, assignment.scope) == key for e in sub_expressions(assignment.value)):
            continue
        statement = tree.statement(assignment.value)
        block = tree.block(statement) if statement is not None else None
        owner = tree.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if isinstance(owner, cst.If) and any(
            isinstance(e, cst.Comparison)
            and len(e.comparisons) == 1
            and isinstance(e.comparisons[0].operator, cst.Equal)
            and _is_option(e.left, "dist_url", facts)
            and string_value(e.comparisons[0].comparator) == "env://"
            for e in sub_expressions(owner.test)
        ):
            return True
    return False


def _guarded_by_flag(site: CallSite, facts: FileFacts) -> bool:
    return any(positive and _is_option(t, "distributed", facts) for t, positive in site.guards)


def _gpu_given(test: cst.BaseExpression, facts: FileFacts) -> bool:
    """`args.gpu is not None`."""
    return (
        isinstance(test, cst.Comparison)
        and len(test.comparisons) == 1
        and isinstance(test.comparisons[0].operator, cst.IsNot)
        and _is_option(test.left, "gpu", facts)
        and is_none(test.comparisons[0].comparator)
    )


def _wraps_on_gpu(site: CallSite, facts: FileFacts) -> bool:
    """`DistributedDataParallel(model, device_ids=[args.gpu])` under `if args.gpu is not None:`."""
    ids = argument_for(site.node, "device_ids", 1, 0)
    return (
        isinstance(ids, (cst.List, cst.Tuple))
        and len(ids.elements) == 1
        and _is_option(ids.elements[0].value, "gpu", facts)
        and any(positive and _gpu_given(t, facts) for t, positive in site.guards)
    )


# -- the fallback -----------------------------------------------------------------------


def _fallback_model(branch: cst.If | cst.Else, calls: Sequence[CallSite], tree: Tree) -> str:
    """The model the fallback wraps (`model = DataParallel(model).cuda()`, or
    `model.features = DataParallel(model.features)` then `model.cuda()`): the branch
    does nothing else, and moves the model to the GPU on every path."""
    if any(not tree.inside(site.node, branch.body) for site in calls):
        raise NoFix("the script wraps in DataParallel outside its single-process fallback")
    body = branch.body
    assert isinstance(body, cst.IndentedBlock)
    wraps = {site.node for site in calls}
    models: set[str] = set()
    if not _moves(body.body, wraps, models, tree):
        raise NoFix("the DataParallel fallback does not move the model to the GPU on every path")
    if len(models) != 1:
        raise NoFix("the DataParallel fallback places more than one model")
    return models.pop()


def _moves(
    body: Sequence[cst.BaseStatement], wraps: set[cst.Call], models: set[str], tree: Tree
) -> bool:
    """Whether every path through `body` moves the model (`.cuda()`); `NoFix` for a
    statement other than the fallback's wraps and moves."""
    moved = False
    for statement in body:
        if isinstance(statement, cst.If):
            branches: list[cst.BaseSuite] = []
            current: cst.If | cst.Else | None = statement
            while isinstance(current, cst.If):
                if not _plain_test(current.test):
                    raise NoFix(f"the DataParallel fallback tests `{code_for(current.test)}`")
                branches.append(current.body)
                current = current.orelse
            if current is not None:
                branches.append(current.body)
            every = [
                _moves(b.body, wraps, models, tree) if isinstance(b, cst.IndentedBlock) else False
                for b in branches
            ]
            moved = moved or (current is not None and all(every))
        elif isinstance(statement, cst.SimpleStatementLine) and len(statement.body) == 1:
            found = _wrap_or_move(statement.body[0], wraps, models)
            if found is None:
                raise NoFix(f"the DataParallel fallback also runs `{line_of(statement, tree)}`")
            moved = moved or found
        else:
            raise NoFix(f"the DataParallel fallback also runs `{line_of(statement, tree)}`")
    return moved


def _plain_test(test: cst.BaseExpression) -> bool:
    """A test whose only calls are string tests: dropping it drops no effect."""
    return all(
        isinstance(e.func, cst.Attribute) and e.func.attr.value in _STRING_TESTS
        for e in sub_expressions(test)
        if isinstance(e, cst.Call)
    )


def _wrap_or_move(
    small: cst.BaseSmallStatement, wraps: set[cst.Call], models: set[str]
) -> bool | None:
    """True for `model.cuda()` or `model = DataParallel(model).cuda()`, False for a
    wrap that does not move (`model.features = DataParallel(model.features)`), None
    for anything else."""
    if isinstance(small, cst.Expr):
        call = small.value
        if (
            isinstance(call, cst.Call)
            and not call.args
            and isinstance(call.func, cst.Attribute)
            and call.func.attr.value == "cuda"
            and isinstance(call.func.value, cst.Name)
        ):
            models.add(call.func.value.value)
            return True
        return None
    if not (isinstance(small, cst.Assign) and len(small.targets) == 1):
        return None
    value, moves = small.value, False
    if (
        isinstance(value, cst.Call)
        and not value.args
        and isinstance(value.func, cst.Attribute)
        and value.func.attr.value == "cuda"
    ):
        value, moves = value.func.value, True
    target = small.targets[0].target
    if not (
        value in wraps
        and isinstance(value, cst.Call)
        and len(value.args) == 1
        and value.args[0].keyword is None
        and not value.args[0].star
        and code_for(value.args[0].value) == code_for(target)
    ):
        return None
    root: cst.BaseExpression = target
    while isinstance(root, cst.Attribute):
        root = root.value
    if not isinstance(root, cst.Name):
        return None
    models.add(root.value)
    return moves


def _one_gpu(placement: _Placement, model: str, current: str, module: cst.Module) -> cst.CSTNode:
    """The fallback's block, training on the current GPU as `--gpu` would."""
    body = placement.fallback.body
    assert isinstance(body, cst.IndentedBlock)
    args = placement.args
    first, *rest = statements(
        f"{args}.gpu = {current}()\n{model} = {model}.cuda({args}.gpu)\n", module
    )
    why = cst.EmptyLine(
        comment=cst.Comment("# one process trains on one GPU; torchrun starts one per GPU")
    )
    return body.with_changes(body=[first.with_changes(leading_lines=[why]), *rest])


# -- around the fallback ----------------------------------------------------------------


def _fallback_warnings(facts: FileFacts, tree: Tree) -> list[cst.If]:
    """`if args.gpu is not None: warnings.warn("... disable data parallelism.")`."""
    found: list[cst.If] = []
    for site in facts.calls_resolving_to(_WARN):
        statement = tree.statement(site.node)
        block = tree.block(statement) if statement is not None else None
        owner = tree.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not (
            isinstance(owner, cst.If)
            and owner.orelse is None
            and block is not None
            and len(block.body) == 1
            and isinstance(statement, cst.SimpleStatementLine)
            and len(statement.body) == 1
            and isinstance(statement.body[0], cst.Expr)
            and statement.body[0].value is site.node
            and _gpu_given(owner.test, facts)
            and "data parallel" in code_for(site.node).lower()
        ):
            continue
        outer = tree.block(owner)
        if outer is not None and len(outer.body) > 1:
            found.append(owner)
    return found


def _spawned_only(facts: FileFacts, tree: Tree) -> list[cst.If]:
    """`if not args.multiprocessing_distributed or ...:`, which lets through every
    process that `mp.spawn` did not start."""
    found: list[cst.If] = []
    for node in tree.nodes():
        if not (
            isinstance(node, cst.If)
            and isinstance(node.test, cst.BooleanOperation)
            and isinstance(node.test.operator, cst.Or)
        ):
            continue
        left = node.test.left
        if (
            isinstance(left, cst.UnaryOperation)
            and isinstance(left.operator, cst.Not)
            and _is_option(left.expression, _SPAWNED, facts)
        ):
            found.append(node)
    return found


def _also_first_of_node(guard: cst.If, first_of_node: str, module: cst.Module) -> cst.If:
    """`if (not args.multiprocessing_distributed and <LOCAL_RANK is 0>) or ...:`, laid
    out as black would (the test no longer fits one line)."""
    test = guard.test
    assert isinstance(test, cst.BooleanOperation)
    indent = module.default_indent
    left = f"(\n{indent}{code_for(test.left)}\n{indent}and {first_of_node}\n)"
    right = _one_line(test.right)
    new_test: cst.BaseExpression
    if right is None:
        first = expression(f"({code_for(test.left)} and {first_of_node})")
        new_test = test.with_changes(left=first)
    else:
        new_test = expression(f"{left} or {right}")
    why = cst.EmptyLine(
        comment=cst.Comment("# torchrun's processes are not spawned: the first of each node saves")
    )
    return guard.with_changes(test=new_test, leading_lines=[*guard.leading_lines, why])


class _OneLine(cst.CSTTransformer):
    """An expression's line breaks made single spaces (none inside parentheses)."""

    def leave_LeftParen(self, original: cst.LeftParen, updated: cst.LeftParen) -> cst.LeftParen:
        return updated.with_changes(whitespace_after=cst.SimpleWhitespace(""))

    def leave_RightParen(self, original: cst.RightParen, updated: cst.RightParen) -> cst.RightParen:
        return updated.with_changes(whitespace_before=cst.SimpleWhitespace(""))

    def leave_ParenthesizedWhitespace(
        self, original: cst.ParenthesizedWhitespace, updated: cst.ParenthesizedWhitespace
    ) -> cst.SimpleWhitespace:
        return cst.SimpleWhitespace(" ")


def _one_line(expr: cst.BaseExpression) -> str | None:
    """`expr` on one line; None when it holds a comment (it would be lost) or a bracket
    other than parentheses (its line breaks are not ours to undo)."""
    if "#" in code_for(expr) or any(isinstance(n, _BRACKETS) for n in descendants(expr)):
        return None
    flat = expr.visit(_OneLine())
    assert isinstance(flat, cst.BaseExpression)
    return code_for(flat)


# -- spelling -----------------------------------------------------------------------------


def _spelled(qualified: str, scope: Scope, imports: list[str]) -> str:
    spelled, needed = spelling_for(qualified, scope)
    if not root_is_module_import(spelled, scope):
        raise NoFix(f"`{spelled.split('.')[0]}` is not a module-level import here")
    if needed:
        imports.append(needed)
    return spelled


def _quote(string: cst.BaseExpression) -> str:
    """The quote the file writes its strings with, seen on `string`."""
    if isinstance(string, cst.SimpleString) and string.value[-1:] == "'":
        return "'"
    return '"'


def _with_default(
    option: _Option, conditional: tuple[str, str, str], tree: Tree
) -> tuple[cst.CSTNode, cst.CSTNode]:
    """The option's `default=` made `<body> if <test> else <orelse>`. A call that no
    longer fits one line is laid out as black would, the default split over lines too
    when it does not fit one (a call with an argument over several lines is left to
    the fixer's layout)."""
    body, test, orelse = conditional
    value = f"{body} if {test} else {orelse}"
    module = tree.module
    depth = sum(isinstance(a, cst.IndentedBlock) for a in tree.ancestors(option.call))
    arg = option.arg.with_changes(value=expression(value))
    call = option.call.with_changes(args=[arg if a is option.arg else a for a in option.call.args])
    texts = [code_for(a.with_changes(comma=cst.MaybeSentinel.DEFAULT)) for a in call.args]
    if fits(f"{code_for(call.func)}({', '.join(texts)})", depth, module) or any(
        "\n" in text for text in texts
    ):
        return option.arg, arg
    if not fits(f"default={value},", depth + 1, module):
        indent = module.default_indent
        lines = "".join(f"{indent * 2}{line}\n" for line in (body, f"if {test}", f"else {orelse}"))
        arg = arg.with_changes(value=expression(f"(\n{lines}{indent})"))
        call = call.with_changes(args=[arg if a is option.arg else a for a in option.call.args])
    return option.call, split_call(call, module, depth)
