"""A script that already trains with DistributedDataParallel when it is launched
distributed, and falls back to DataParallel otherwise: `if args.local_rank != -1:
model = DDP(model) elif n_gpu > 1: model = DataParallel(model)` (NVIDIA's BERT
scripts), `if cuda and RANK == -1 and device_count() > 1: model = DataParallel(model)`
(the YOLO family), `if args.n_gpu > 1: model = DataParallel(model)` where the
distributed branch sets `args.n_gpu = 1` (the legacy transformers examples).

The migration is to drop the fallback and launch with torchrun, which takes the
script's own distributed path. That path must be one torchrun switches on: every
rank test that decides it (around `init_process_group`, around the DDP wrap, and
in the fallback's test) reads torchrun's environment, or an argparse option whose
default then reads it (`--local_rank` defaults to `LOCAL_RANK`; torchrun does not
pass the option).

`own_ddp_fix` surveys and builds the fix, or raises `NoFix`.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.loops import Loops
from accel_lint.facts.ranks import RankAnalysis, env_key
from accel_lint.facts.syntax import last_name, sub_expressions
from accel_lint.names import Scope, root_is_module_import, spelling_for
from accel_lint.rule import Fix, Replacement
from accel_lint.rules.data_parallel.shape import ALREADY_DISTRIBUTED, NoFix, line_of
from accel_lint.rules.data_parallel.tree import Tree
from accel_lint.torch_api import INIT_PROCESS_GROUP
from accel_lint.walk import all_children

_LOG_CALLS = frozenset({"print", "info", "warning", "warn", "debug", "log"})
_LOCAL = re.compile(r"local", re.IGNORECASE)
_DDP_HELPER = re.compile(r"(?:^|_)(?:DDP|ddp)$")  # `smart_DDP`, `to_ddp`


def own_ddp_fix(site: CallSite, facts: FileFacts, tree: Tree) -> Fix:
    """Drop the DataParallel fallback at `site` of a script with its own DDP path."""
    if not Loops.of(facts).training_loops():
        raise NoFix(f"{ALREADY_DISTRIBUTED}, and trains nothing here")
    statement = tree.statement(site.node)
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
    ):
        raise NoFix(
            f"{ALREADY_DISTRIBUTED}, and its DataParallel call is not assigned alone "
            f"(`{line_of(site.node, tree)}`)"
        )
    branch = _branch_of(statement, tree)
    if branch is None:
        raise NoFix(f"{ALREADY_DISTRIBUTED}, and wraps the model always")
    ranks = RankAnalysis.of(facts)
    switches = _switches(branch, site, facts, tree, ranks)
    defaults: dict[cst.CSTNode, Replacement] = {}
    imports: list[str] = []
    for expr, scope in switches:
        _from_environment(expr, scope, facts, ranks, defaults, imports)
    replacements: dict[cst.CSTNode, Replacement] = {**defaults, **_drop(statement, branch, tree)}
    note = " (`--local_rank` now defaults to torchrun's `LOCAL_RANK`)" if defaults else ""
    return Fix(
        "Drop the DataParallel fallback: the script's own DistributedDataParallel path runs "
        f"under `torchrun --nproc_per_node=<GPUs>`{note}",
        replacements,
        tuple(dict.fromkeys(imports)),
    )


# -- the branch that wraps, and why it is the single-process one ------------------------


def _branch_of(statement: cst.SimpleStatementLine, tree: Tree) -> cst.If | cst.Else | None:
    """The `if`, `elif` or `else` branch whose block holds the wrap directly."""
    block = tree.block(statement)
    owner = tree.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return owner if isinstance(owner, (cst.If, cst.Else)) else None


def chain_head(branch: cst.If | cst.Else, tree: Tree) -> list[cst.If]:
    """The `if`s before this branch in its chain, outermost first (the branch itself
    when it is an `if`, last)."""
    chain: list[cst.If] = [branch] if isinstance(branch, cst.If) else []
    current: cst.CSTNode = branch
    while True:
        parent = tree.parent(current)
        if isinstance(parent, cst.If) and parent.orelse is current:
            chain.insert(0, parent)
            current = parent
        else:
            return chain


def _switches(
    branch: cst.If | cst.Else,
    site: CallSite,
    facts: FileFacts,
    tree: Tree,
    ranks: RankAnalysis,
) -> list[tuple[cst.BaseExpression, Scope]]:
    """The rank expressions that decide between the distributed path and this
    fallback, with their scopes; `NoFix` when the branch is not shown to be the
    single-process one."""
    chain = chain_head(branch, tree)
    ddp_sites = [s for s in facts.calls if _is_ddp(s, tree)]
    earlier = [b for b in chain if b is not branch]
    own_test = branch.test if isinstance(branch, cst.If) else None
    single = False
    # (a) an earlier branch of the same chain wraps in DDP
    if any(any(tree.inside(s.node, b.body) for s in ddp_sites) for b in earlier):
        single = True
    # (b) the branch's own test says "no rank": `RANK == -1`
    if own_test is not None and _tests_no_rank(own_test, site.scope, ranks):
        single = True
    # (c) `n_gpu > 1` where the distributed setup sets `n_gpu = 1`
    if own_test is not None and _count_is_one_when_distributed(own_test, facts, tree):
        single = True
    if not single:
        raise NoFix(
            f"{ALREADY_DISTRIBUTED}, and its DataParallel branch is not "
            "shown to be the single-process one"
        )
    if not ddp_sites:
        raise NoFix("the script sets up torch.distributed but never wraps in DDP")
    tests: list[tuple[cst.BaseExpression, Scope]] = [(b.test, site.scope) for b in chain]
    for setup in facts.calls_resolving_to(INIT_PROCESS_GROUP):
        tests.extend((test, setup.scope) for test, _ in setup.guards)
    for ddp in ddp_sites:
        tests.extend((test, ddp.scope) for test, _ in ddp.guards)
    found: list[tuple[cst.BaseExpression, Scope]] = []
    seen: set[str] = set()
    for test, scope in tests:
        for expr in _rank_terms(test, scope, ranks):
            key = code_for(expr)
            if key not in seen:
                seen.add(key)
                found.append((expr, scope))
    if not found:
        raise NoFix("the script's distributed path is not chosen by a rank torchrun sets")
    return found


def _is_ddp(site: CallSite, tree: Tree) -> bool:
    """`DistributedDataParallel(model, ...)`, or the project's own helper that wraps in
    it, spelled so and rebinding the model: `model = smart_DDP(model)` (the YOLO family)."""
    name = last_name(site.node.func)
    if name in ("DistributedDataParallel", "DDP"):
        return site.node.args != ()
    if name is None or not _DDP_HELPER.search(name) or len(site.node.args) != 1:
        return False
    arg = site.node.args[0]
    statement = tree.statement(site.node)
    return (
        arg.keyword is None
        and not arg.star
        and isinstance(arg.value, cst.Name)
        and isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and statement.body[0].value is site.node
        and code_for(statement.body[0].targets[0].target) == arg.value.value
    )


def _rank_terms(
    test: cst.BaseExpression, scope: Scope, ranks: RankAnalysis
) -> Iterator[cst.BaseExpression]:
    """The outermost names and attributes of `test` that denote a rank."""
    stack: list[cst.CSTNode] = [test]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.Name, cst.Attribute)) and ranks.is_rank(node, scope):
            yield node
            continue
        if isinstance(node, (cst.Call, cst.Lambda)):
            continue  # `torch.cuda.device_count()`, `isinstance(m, ...)`: not switches
        stack.extend(all_children(node))


def _tests_no_rank(test: cst.BaseExpression, scope: Scope, ranks: RankAnalysis) -> bool:
    """A conjunct of `test` compares a rank with -1 (`RANK == -1`, `rank in [-1]`)."""
    for conjunct in _conjuncts(test):
        if (
            isinstance(conjunct, cst.Comparison)
            and len(conjunct.comparisons) == 1
            and isinstance(conjunct.comparisons[0].operator, cst.Equal)
        ):
            sides = (conjunct.left, conjunct.comparisons[0].comparator)
            if any(code_for(s) == "-1" for s in sides) and any(
                ranks.is_rank(s, scope) for s in sides if code_for(s) != "-1"
            ):
                return True
    return False


def _conjuncts(test: cst.BaseExpression) -> list[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        return [*_conjuncts(test.left), *_conjuncts(test.right)]
    return [test]


def _count_is_one_when_distributed(test: cst.BaseExpression, facts: FileFacts, tree: Tree) -> bool:
    """A conjunct `N > 1` where the block that calls `init_process_group` sets `N = 1`."""
    for conjunct in _conjuncts(test):
        if not (
            isinstance(conjunct, cst.Comparison)
            and len(conjunct.comparisons) == 1
            and isinstance(conjunct.comparisons[0].operator, cst.GreaterThan)
            and code_for(conjunct.comparisons[0].comparator) == "1"
        ):
            continue
        counted = code_for(conjunct.left)
        for setup in facts.calls_resolving_to(INIT_PROCESS_GROUP):
            statement = tree.statement(setup.node)
            block = tree.block(statement) if statement is not None else None
            if block is not None and any(
                isinstance(s, cst.SimpleStatementLine)
                and len(s.body) == 1
                and isinstance(s.body[0], cst.Assign)
                and code_for(s.body[0].targets[0].target) == counted
                and code_for(s.body[0].value) == "1"
                for s in block.body
            ):
                return True
    return False


# -- the rank comes from torchrun -------------------------------------------------------


def _from_environment(
    expr: cst.BaseExpression,
    scope: Scope,
    facts: FileFacts,
    ranks: RankAnalysis,
    defaults: dict[cst.CSTNode, Replacement],
    imports: list[str],
) -> None:
    """`expr` reads torchrun's environment; an argparse option's default is made to."""
    option = facts.argparse_option_for(expr)
    if option is not None:
        if option.default is not None and _reads_environment(option.default, facts):
            return
        if option.default_arg is None:
            raise NoFix(f"`{option.flag}` has no default for torchrun's environment to fill")
        key = "LOCAL_RANK" if _LOCAL.search(option.dest) else "RANK"
        environ, needed = spelling_for("os.environ", facts.module_scope)
        if not root_is_module_import(environ, facts.module_scope):
            raise NoFix("`os` is not a module-level import here")
        fallback = code_for(option.default) if option.default is not None else "-1"
        value = cst.parse_expression(f'int({environ}.get("{key}", {fallback}))')
        defaults[option.default_arg] = option.default_arg.with_changes(value=value)
        if needed:
            imports.append(needed)
        return
    if _assigned_from_environment(expr, scope, facts):
        return
    raise NoFix(
        f"the script runs distributed when `{code_for(expr)}` says so, and torchrun does not set it"
    )


def _reads_environment(expr: cst.BaseExpression, facts: FileFacts) -> bool:
    return any(env_key(sub, facts.module_scope) for sub in sub_expressions(expr))


def _assigned_from_environment(expr: cst.BaseExpression, scope: Scope, facts: FileFacts) -> bool:
    """A name or attribute whose every assignment reads the environment."""
    values: list[tuple[cst.BaseExpression, Scope]] = []
    followed = False  # a binding to another name or attribute that reads the environment
    if isinstance(expr, cst.Name):
        for binding in scope.lookup(expr.value) or ():
            value = binding.value
            if value is None and isinstance(binding.node, cst.Assign):
                value = _unpacked(binding.node, expr.value)  # `a, rank = x, opt.rank`
            if value is None or binding.scope is None:
                return False
            if isinstance(value, (cst.Name, cst.Attribute)) and value is not expr:
                if not _assigned_from_environment(value, binding.scope, facts):
                    return False
                followed = True
                continue
            values.append((value, binding.scope))
    elif isinstance(expr, cst.Attribute):
        values = [(a.value, a.scope) for a in facts.attribute_assignments.get(expr.attr.value, ())]
    return (bool(values) or followed) and all(
        any(env_key(sub, s) for sub in sub_expressions(value)) for value, s in values
    )


def _unpacked(node: cst.Assign, name: str) -> cst.BaseExpression | None:
    """The element of a tuple display that `a, name = x, y` binds to `name`."""
    if len(node.targets) != 1:
        return None
    target, value = node.targets[0].target, node.value
    if not (isinstance(target, cst.Tuple) and isinstance(value, cst.Tuple)):
        return None
    if len(target.elements) != len(value.elements):
        return None
    for left, right in zip(target.elements, value.elements):
        if isinstance(left.value, cst.Name) and left.value.value == name:
            return None if isinstance(right, cst.StarredElement) else right.value
    return None


# -- the edit ---------------------------------------------------------------------------


def _drop(
    statement: cst.SimpleStatementLine, branch: cst.If | cst.Else, tree: Tree
) -> dict[cst.CSTNode, Replacement]:
    """Remove the wrap; a branch left with nothing but log lines goes with it."""
    body = branch.body
    assert isinstance(body, cst.IndentedBlock)
    rest = [s for s in body.body if s is not statement]
    if any(not _logs_only(s) for s in rest):
        return {statement: cst.RemovalSentinel.REMOVE}
    parent = tree.parent(branch)
    if isinstance(branch, cst.Else):
        assert isinstance(parent, cst.If)
        return {parent: parent.with_changes(orelse=None)}
    if isinstance(parent, cst.If) and parent.orelse is branch:
        # `elif`: the chain skips it
        return {parent: parent.with_changes(orelse=branch.orelse)}
    if branch.orelse is not None:
        # `if`: its `elif` takes its place, or its `else` becomes plain code... keep it simple
        raise NoFix("the DataParallel branch has an `else`; remove the wrap by hand")
    return {branch: cst.RemovalSentinel.REMOVE}


def _logs_only(statement: cst.BaseStatement) -> bool:
    return isinstance(statement, cst.SimpleStatementLine) and all(
        isinstance(small, cst.Pass)
        or (
            isinstance(small, cst.Expr)
            and isinstance(small.value, cst.Call)
            and last_name(small.value.func) in _LOG_CALLS
        )
        for small in statement.body
    )
