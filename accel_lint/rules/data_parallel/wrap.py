"""The wrap: `model = DataParallel(model)` becomes `model = DistributedDataParallel(
model, device_ids=...)`, out of the `if torch.cuda.device_count() > 1:` around it
(every process must wrap; the rest of the `if` stays in it), and
`isinstance(m, DataParallel)` checks follow the new class.

`find_wrap` surveys it (and the anchor block the other steps work in);
`wrap_in_ddp` is the step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts, int_value
from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import is_main_test
from accel_lint.layout import fits, split_call
from accel_lint.names import BindingKind, Scope, dotted_name, resolves_to
from accel_lint.rules.data_parallel.plan import Plan, merge
from accel_lint.rules.data_parallel.shape import (
    NoFix,
    Reference,
    Shape,
    Wrap,
    is_none,
    line_of,
    local_function,
)
from accel_lint.rules.data_parallel.source import expression
from accel_lint.rules.data_parallel.tree import Block, Tree, descendants
from accel_lint.torch_api import CUDA_DEVICE_COUNT, DATALOADER, MODULE_RETURNS_SELF

_PARAMS = ("module", "device_ids", "output_device", "dim")
_MOVES = frozenset({"to", "cuda"})
# module methods that return the module itself: `DataParallel(m).eval().to(device)`
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def find_wrap(
    call: cst.Call,
    scope: Scope,
    tree: Tree,
    facts: FileFacts,
    branches: Sequence[cst.Call] = (),
) -> tuple[Wrap, Block]:
    """The wrap around `call`, and the anchor block: the body of the function (or
    the module, or its `if __name__ == "__main__":` block) that wraps the model.
    `branches` are the other calls wrapping the same model in the other branches of
    one `if` (`exclusive_wraps`): the anchor is found from that `if`, and each wrap
    stays in its branch."""
    try:
        statement, target, chained = _assigned_wrap(call, tree)
    except NoFix as refused:
        raise NoFix(f"{refused}{_nothing_trains_here(call, tree, facts)}") from None
    module_arg, devices, count = _arguments(call, scope)
    # a move counts when it runs before the wrap on every path: before the `if` whose
    # branches wrap, not in a sibling branch
    moved_before: cst.BaseStatement = statement
    if branches:
        owner = _branching_if(call, branches, tree)
        block, guards = _anchor_block(owner, tree)
        if guards:
            raise NoFix("the `if` whose branches wrap the model sits inside another `if`")
        others = tuple(_branch_wrap(other, owner, scope, tree, facts) for other in branches)
        moved_before = owner
    else:
        block, guards = _anchor_block(statement, tree)
        others = ()
    if count is not None:
        _count_only_picks_devices(count, tree, call, guards)
    before = _placement(statement, guards, target, module_arg.value, scope, facts, tree)
    moved = _chain_moves(chained, call) or _moved_first(
        module_arg.value, moved_before, scope, tree, facts
    )
    wrap = Wrap(
        call, statement, target, guards, before, chained, module_arg, devices, moved, others
    )
    _model_built_here(wrap, scope)
    return wrap, block


def _assigned_wrap(
    call: cst.Call, tree: Tree
) -> tuple[cst.SimpleStatementLine, str, cst.Call | None]:
    statement = tree.statement(call)
    chained = _chain_end(call, tree)
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and len(statement.body[0].targets) == 1
        and isinstance(statement.body[0].targets[0].target, cst.Name)
        and statement.body[0].value is (chained or call)
    ):
        raise NoFix(_not_assigned_to_a_name(statement, chained or call))
    return statement, statement.body[0].targets[0].target.value, chained


def _nothing_trains_here(call: cst.Call, tree: Tree, facts: FileFacts) -> str:
    """For a wrap held in `self.<attr>` by a trainer class: whether its loaders and
    training loop are in this file at all (a base trainer gets them from others)."""
    statement = tree.statement(call)
    assign = statement.body[0] if isinstance(statement, cst.SimpleStatementLine) else None
    if not (
        isinstance(assign, cst.Assign)
        and len(assign.targets) == 1
        and isinstance(assign.targets[0].target, cst.Attribute)
        and isinstance(assign.targets[0].target.value, cst.Name)
        and assign.targets[0].target.value.value == "self"
    ):
        return ""
    loaders = any(resolves_to(s.node.func, s.scope, DATALOADER) for s in facts.calls)
    trains = bool(Loops.of(facts).training_loops())
    if loaders or trains:
        return ""
    return (
        "; this file also builds no DataLoader and runs no `.backward()`, so its "
        "training, if any, happens in other files"
    )


def _not_assigned_to_a_name(statement: cst.CSTNode | None, wrapped: cst.Call) -> str:
    """Why the wrap is not `model = DataParallel(model)`, as the code has it."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and statement.body[0].value is wrapped
    ):
        targets = statement.body[0].targets
        if len(targets) == 1 and isinstance(targets[0].target, cst.Attribute):
            return (
                f"the wrapped model is assigned to an attribute (`{code_for(targets[0].target)}"
                " = ...`); the migration follows a model held in a plain name only"
            )
        return "the wrapped model is assigned to several targets at once"
    return (
        "the wrapped model is not assigned: the DataParallel call is used directly "
        "(`model = DataParallel(model)` is the shape the migration follows)"
    )


def several_wraps(sites: Sequence[tuple[cst.Call, cst.FunctionDef | None]], tree: Tree) -> str:
    """Why several DataParallel calls get no migration, true to what they wrap: the
    branches of one `if` wrap one model, and so do wraps of the same module in
    several functions (a runner's `train()` and `sample()`)."""
    calls = [call for call, _ in sites]
    first, *rest = calls
    try:
        _branching_if(first, rest, tree)
    except NoFix:
        exclusive = False
    else:
        exclusive = True
    if exclusive:
        try:
            spelled = sorted({_wrap_spelling(call, tree) for call in calls})
        except NoFix as refused:
            return f"the model is wrapped once in each branch of an `if`, but {refused}"
        listed = ", ".join(f"`{s}`" for s in spelled)
        return f"the branches of the `if` wrap different models ({listed})"
    models = sorted({_module_spelling(call) for call in calls})
    if len(models) > 1:
        listed = ", ".join(f"`{m}`" for m in models)
        return f"the script wraps {len(models)} models in DataParallel ({listed})"
    functions: list[str] = []
    for _, function in sites:
        named = f"`{function.name.value}()`" if function is not None else "the module level"
        if named not in functions:
            functions.append(named)
    if len(functions) > 1:
        return (
            f"the model `{models[0]}` is wrapped in DataParallel in each of "
            f"{len(functions)} functions ({', '.join(functions)}); the migration rewrites "
            "a single wrap"
        )
    return (
        f"the model `{models[0]}` is wrapped in DataParallel {len(calls)} times, not in "
        "the branches of one `if`; the migration rewrites a single wrap"
    )


def _module_spelling(call: cst.Call) -> str:
    for arg in call.args:
        if (arg.keyword is None and not arg.star) or (
            arg.keyword is not None and arg.keyword.value == "module"
        ):
            return code_for(arg.value)
    return code_for(call)


def exclusive_wraps(calls: Sequence[cst.Call], tree: Tree) -> bool:
    """The calls wrap the same model (`model = DataParallel(model)`), each directly in
    another branch of one `if`/`elif`/`else` chain: every path wraps it once."""
    try:
        first, *rest = calls
        _branching_if(first, rest, tree)
        spelled = {_wrap_spelling(call, tree) for call in calls}
    except NoFix:
        return False
    return len(spelled) == 1


def _wrap_spelling(call: cst.Call, tree: Tree) -> str:
    _, target, _ = _assigned_wrap(call, tree)
    module = call.args[0].value if call.args and call.args[0].keyword is None else None
    if module is None:
        raise NoFix("DataParallel is called without a positional module")
    return f"{target} = {code_for(module)}"


def _branching_if(call: cst.Call, others: Sequence[cst.Call], tree: Tree) -> cst.If:
    """The first `if` of the chain whose branches each hold one of the wraps, directly
    in their block."""
    chains: list[list[cst.CSTNode]] = []
    for member in (call, *others):
        statement = tree.statement(member)
        block = tree.block(statement) if isinstance(statement, cst.BaseStatement) else None
        branch = tree.parent(block) if isinstance(block, cst.IndentedBlock) else None
        if not isinstance(branch, (cst.If, cst.Else)):
            raise NoFix("the wraps are not in the branches of one `if`")
        chains.append([branch, *_elif_chain(branch, tree)])
    heads = {id(chain[-1]) for chain in chains}
    owners = {id(chain[0]) for chain in chains}
    if len(heads) != 1 or len(owners) != len(chains):
        raise NoFix("the wraps are not in the branches of one `if`")
    head = chains[0][-1]
    assert isinstance(head, cst.If)
    return head


def _elif_chain(branch: cst.CSTNode, tree: Tree) -> list[cst.CSTNode]:
    """The `if`s above a branch in its `if`/`elif` chain, innermost first."""
    out: list[cst.CSTNode] = []
    current = branch
    while True:
        parent = tree.parent(current)
        if isinstance(parent, cst.If) and parent.orelse is current:
            out.append(parent)
            current = parent
        else:
            return out


def _branch_wrap(call: cst.Call, owner: cst.If, scope: Scope, tree: Tree, facts: FileFacts) -> Wrap:
    statement, target, chained = _assigned_wrap(call, tree)
    own_arg, devices, count = _arguments(call, scope)
    if count is not None:
        raise NoFix("the branches pick their devices with a count the migration cannot follow")
    moved = _chain_moves(chained, call) or _moved_first(own_arg.value, owner, scope, tree, facts)
    return Wrap(call, statement, target, (), False, chained, own_arg, devices, moved)


def _chain_end(call: cst.Call, tree: Tree) -> cst.Call | None:
    """The last call of `DataParallel(model).eval().to(device)`: methods that return
    the module they are called on, which may as well run before the wrap."""
    end: cst.Call | None = None
    node = call
    while True:
        attribute = tree.parent(node)
        if not (
            isinstance(attribute, cst.Attribute)
            and attribute.value is node
            and attribute.attr.value in MODULE_RETURNS_SELF
        ):
            return end
        outer = tree.parent(attribute)
        if not (isinstance(outer, cst.Call) and outer.func is attribute):
            return end
        end = node = outer


def _chain_moves(chained: cst.Call | None, call: cst.Call) -> bool:
    """Whether the chain after the wrap moves the model (`.to(...)`, `.cuda()`)."""
    node: cst.BaseExpression | None = chained
    while isinstance(node, cst.Call) and node is not call:
        assert isinstance(node.func, cst.Attribute)
        if node.func.attr.value in _MOVES:
            return True
        node = node.func.value
    return False


def _rechain(chained: cst.Call, call: cst.Call, model: cst.BaseExpression) -> cst.Call:
    """The chain with the model in place of `DataParallel(model)`."""
    func = chained.func
    assert isinstance(func, cst.Attribute)
    if func.value is call:
        inner: cst.BaseExpression = model
        if not isinstance(model, _ATOMS):
            inner = model.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])
    else:
        assert isinstance(func.value, cst.Call)
        inner = _rechain(func.value, call, model)
    return chained.with_changes(func=func.with_changes(value=inner))


def _moved_first(
    model: cst.BaseExpression,
    statement: cst.BaseStatement,
    scope: Scope,
    tree: Tree,
    facts: FileFacts,
) -> bool:
    """The model is on its device before the wrap: `Net().to(device)`, or a name bound
    to such a value or moved by `model.cuda()` earlier. (Many scripts move it after
    `DataParallel(model)`; DistributedDataParallel needs it moved before.)"""
    if _is_move(model):
        return True
    if not isinstance(model, cst.Name):
        return False
    for binding in scope.lookup(model.value) or []:
        moves = binding.value is not None and _is_move(binding.value)
        if moves and binding.node is not None and tree.precedes(binding.node, statement):
            return True
    for site in [*facts.method_calls("to"), *facts.method_calls("cuda")]:
        receiver = site.node.func.value  # type: ignore[attr-defined]
        if (
            isinstance(receiver, cst.Name)
            and receiver.value == model.value
            and site.scope is scope
            and tree.precedes(site.node, statement)
        ):
            return True
    return False


def _is_move(expr: cst.BaseExpression) -> bool:
    return (
        isinstance(expr, cst.Call)
        and isinstance(expr.func, cst.Attribute)
        and expr.func.attr.value in _MOVES
    )


def _arguments(
    call: cst.Call, scope: Scope
) -> tuple[cst.Arg, str | None, cst.BaseExpression | None]:
    """The module argument; how many devices `device_ids` lists (None: every visible
    one); and the `n` of `device_ids=range(n)` when it is not a literal."""
    module_arg: cst.Arg | None = None
    devices: str | None = None
    count: cst.BaseExpression | None = None
    for index, arg in enumerate(call.args):
        if arg.star:
            raise NoFix("DataParallel's arguments come from `*args` or `**kwargs`")
        if arg.keyword is not None:
            param = arg.keyword.value
        else:
            param = _PARAMS[index] if index < len(_PARAMS) else ""
        if param == "module":
            module_arg = arg
        elif param == "device_ids":
            devices, count = _device_ids(arg.value, scope)
        elif param == "output_device":
            if not (int_value(arg.value) is not None or is_none(arg.value)):
                raise NoFix(f"`output_device={code_for(arg.value)}` cannot be followed")
        elif param == "dim":
            if int_value(arg.value) != 0:
                raise NoFix(f"DataParallel splits batches along `dim={code_for(arg.value)}`")
        else:
            raise NoFix(
                f"DataParallel gets an argument the migration does not know: `{code_for(arg)}`"
            )
    if module_arg is None:
        raise NoFix("DataParallel is called without a module")
    return module_arg, devices, count


def _device_ids(
    expr: cst.BaseExpression, scope: Scope
) -> tuple[str | None, cst.BaseExpression | None]:
    """How many devices `device_ids` lists when it lists the first ones (a literal
    list, `range(n)`), and `n` when it is a name; every visible device (`None`,
    `range(torch.cuda.device_count())`) is None. Anything else: `NoFix`."""
    if is_none(expr):
        return None, None
    if isinstance(expr, (cst.List, cst.Tuple)) and all(
        isinstance(e, cst.Element) and int_value(e.value) is not None for e in expr.elements
    ):
        return str(len(expr.elements)), None
    inner = expr
    if (
        isinstance(inner, cst.Call)
        and resolves_to(inner.func, scope, {"builtins.list"})
        and len(inner.args) == 1
    ):
        inner = inner.args[0].value
    if (
        isinstance(inner, cst.Call)
        and resolves_to(inner.func, scope, {"builtins.range"})
        and len(inner.args) == 1
        and inner.args[0].keyword is None
        and not inner.args[0].star
    ):
        count = inner.args[0].value
        if isinstance(count, cst.Call) and resolves_to(count.func, scope, CUDA_DEVICE_COUNT):
            return None, None
        literal = int_value(count)
        if literal is not None:
            return str(literal), None
        if dotted_name(count) is not None:
            return code_for(count), count
    raise NoFix(
        f"`device_ids={code_for(expr)}` picks devices in a way the migration cannot follow "
        "(under torchrun each process uses the one device `LOCAL_RANK` names)"
    )


def _count_only_picks_devices(
    count: cst.BaseExpression, tree: Tree, call: cst.Call, guards: Sequence[cst.If]
) -> None:
    """Under torchrun, `n` of `device_ids=range(n)` becomes the number of processes, so
    the option may only pick the devices (and decide whether to wrap): a script that
    also scales its batch size by it would scale it again in every process. Where
    it is set (`ngpu = 2`, a parameter) is no use."""
    spelled = dotted_name(count)
    allowed = [call, *(g.test for g in guards)]
    for node in tree.nodes():
        if (
            isinstance(node, (cst.Name, cst.Attribute))
            and dotted_name(node) == spelled
            and not isinstance(tree.parent(node), (cst.Attribute, cst.AssignTarget, cst.Param))
            and not any(tree.inside(node, a) for a in allowed)
        ):
            raise NoFix(
                f"`{spelled}` picks the devices and is also used elsewhere "
                f"(`{line_of(node, tree)}`); under torchrun it would count processes"
            )


def _anchor_block(statement: cst.BaseStatement, tree: Tree) -> tuple[Block, tuple[cst.If, ...]]:
    """The anchor block, and the `if`s around the wrap (innermost first) that the
    wrap leaves, since every process must wrap."""
    guards: list[cst.If] = []
    block = tree.block(statement)
    while isinstance(block, cst.IndentedBlock):
        owner = tree.parent(block)
        assert owner is not None
        branch: cst.CSTNode = owner
        if isinstance(owner, cst.FunctionDef) or (
            isinstance(owner, cst.If)
            and is_main_test(owner.test)
            and tree.block(owner) is tree.module
        ):
            return block, tuple(guards)
        outer = tree.parent(owner)
        if isinstance(owner, cst.Else) or (isinstance(outer, cst.If) and outer.orelse is owner):
            first = line_of(_first_if(branch, tree), tree)
            raise NoFix(f"the wrap is in an `elif` or `else` branch of `{first}`")
        if not isinstance(owner, cst.If):
            raise NoFix(f"the model is wrapped inside a nested block (`{line_of(owner, tree)}`)")
        if owner.orelse is not None:
            raise NoFix("the `if` around the wrap has an `else` branch")
        guards.append(owner)
        block = tree.block(owner)
    if isinstance(block, cst.Module):
        return block, tuple(guards)
    raise NoFix("the model is wrapped inside a nested block")


def _first_if(node: cst.CSTNode, tree: Tree) -> cst.CSTNode:
    """The `if` an `else` or `elif` belongs to (up the `elif` chain)."""
    current = tree.parent(node) if isinstance(node, cst.Else) else node
    while current is not None:
        parent = tree.parent(current)
        if not (isinstance(parent, cst.If) and parent.orelse is current):
            return current
        current = parent
    return node


def _placement(
    statement: cst.SimpleStatementLine,
    guards: Sequence[cst.If],
    target: str,
    model: cst.BaseExpression,
    scope: Scope,
    facts: FileFacts,
    tree: Tree,
) -> bool:
    """Whether the wrap goes before its `if`s (else after them). What precedes it in
    them must still run first; what follows it and reads the model must still run
    after it; and the `if`s' tests run after a wrap put before them."""
    if not guards:
        return False
    preceding: list[cst.CSTNode] = []
    following: list[cst.CSTNode] = []
    inner: cst.CSTNode = statement
    for guard in guards:
        assert isinstance(guard.body, cst.IndentedBlock)
        body = list(guard.body.body)
        at = next(i for i, s in enumerate(body) if s is inner)
        preceding.extend(body[:at])
        following.extend(body[at + 1 :])
        inner = guard
    # the model's names: the wrapped module may be reached through them too
    names = {target} | {n.value for n in [model, *descendants(model)] if isinstance(n, cst.Name)}
    test_use = _first_use([g.test for g in guards], names, scope, facts)
    if not preceding and test_use is None:
        return True
    use = _first_use(following, names, scope, facts)
    if use is None:
        return False
    if preceding:
        raise NoFix(
            "statements inside the `if` around the wrap must run before it, and others after "
            f"it (`{line_of(use, tree)}`)"
        )
    assert test_use is not None
    raise NoFix(f"the test of the `if` around the wrap reads the model (`{code_for(test_use)}`)")


def _first_use(
    nodes: Sequence[cst.CSTNode], names: set[str], scope: Scope, facts: FileFacts
) -> cst.CSTNode | None:
    """The first read of one of `names` in `nodes`, or call of a function of the file
    (which may read the model as a global)."""
    for node in nodes:
        for inner in [node, *descendants(node)]:
            if isinstance(inner, cst.Name) and inner.value in names:
                return inner
            if isinstance(inner, cst.Call) and local_function(inner.func, scope, facts):
                return inner
    return None


def _model_built_here(wrap: Wrap, scope: Scope) -> None:
    """A model built in another function was moved to its device before the process
    group (and `torch.cuda.set_device`) exists."""
    value = wrap.module_arg.value
    if isinstance(value, cst.Name):
        bindings = scope.lookup(value.value) or []
        if any(b.scope is not scope or b.kind is BindingKind.IMPORT for b in bindings):
            raise NoFix(f"the model `{value.value}` is built outside the code that wraps it")


def isinstance_references(
    wrap: Wrap, references: Sequence[Reference], tree: Tree
) -> tuple[cst.BaseExpression, ...]:
    """`isinstance(m, DataParallel)` operands (they become DistributedDataParallel);
    any other use of DataParallel is beyond the migration."""
    found: list[cst.BaseExpression] = []
    wrapping = {wrap.call.func, *(other.call.func for other in wrap.others)}
    for ref in references:
        if ref.node in wrapping:
            continue
        if not _isinstance_operand(ref, tree):
            raise NoFix(f"DataParallel is also used elsewhere (`{line_of(ref.node, tree)}`)")
        found.append(ref.node)
    return tuple(found)


def _isinstance_operand(ref: Reference, tree: Tree) -> bool:
    """`isinstance(m, DataParallel)` or `isinstance(m, (DataParallel, Other))`."""
    arg = tree.parent(ref.node)
    if isinstance(arg, cst.Element):
        arg = tree.parent(tree.parent(arg) or arg)
    call = tree.parent(arg) if isinstance(arg, cst.Arg) else None
    return (
        isinstance(call, cst.Call)
        and resolves_to(call.func, ref.scope, {"builtins.isinstance", "builtins.issubclass"})
        and len(call.args) == 2
        and call.args[1] is arg
    )


def import_statement(
    callee: cst.BaseExpression, scope: Scope, tree: Tree
) -> cst.SimpleStatementLine | None:
    """The top-level `from torch.nn import DataParallel` line the callee name comes from."""
    if not isinstance(callee, cst.Name):
        return None
    bindings = scope.lookup(callee.value) or []
    if len(bindings) != 1 or not isinstance(bindings[0].node, cst.ImportFrom):
        return None
    statement = tree.statement(bindings[0].node)
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and tree.parent(statement) is tree.module
    ):
        return statement
    return None


# -- the step ---------------------------------------------------------------------------


def wrap_in_ddp(shape: Shape) -> Plan:
    plan = Plan()
    wrap = shape.wrap
    names = shape.names
    assign = wrap.statement.body[0]
    assert isinstance(assign, cst.Assign)
    value = wrap.module_arg.value
    if wrap.chained is not None:
        # DataParallel(model).eval().to(device): the chain runs on the model, then the wrap
        value = _rechain(wrap.chained, wrap.call, value)
    model = code_for(value)
    if not wrap.moved:
        # DistributedDataParallel wants the model on the process's device already
        model = model if isinstance(value, _ATOMS) else f"({model})"
        model = f'{model}.to(local_rank if {names.cuda}.is_available() else "cpu")'
    device_ids = f"[local_rank] if {names.cuda}.is_available() else None"
    text = f"{names.ddp}({model}, device_ids={device_ids})"
    call = expression(text)
    assert isinstance(call, cst.Call)
    if not fits(f"{wrap.target} = {text}", shape.depth, shape.module):
        call = split_call(call, shape.module, shape.depth)
    new_body = [assign.with_changes(value=call)]
    if not wrap.guards:
        plan.rewrite(wrap.statement, lambda node: node.with_changes(body=new_body))
    else:
        _leave_guards(wrap, wrap.statement.with_changes(body=new_body), plan)
    for reference in shape.references:
        plan.rewrite(reference, lambda _: expression(names.ddp))
    others = [wrap_in_ddp(replace(shape, wrap=other, references=())) for other in wrap.others]
    return merge([plan, *others]) if others else plan


def _leave_guards(wrap: Wrap, new_line: cst.SimpleStatementLine, plan: Plan) -> None:
    """Take the wrap out of its `if`s; an `if` left with nothing in it goes too, and
    the comments above what goes stay with the wrap."""
    removed: cst.BaseStatement = wrap.statement
    leading = list(wrap.statement.leading_lines)
    for guard in wrap.guards:
        assert isinstance(guard.body, cst.IndentedBlock)
        if len(guard.body.body) > 1:
            break
        removed = guard
        leading = [*guard.leading_lines, *leading]
    outermost = wrap.guards[-1]
    plan.remove(removed)
    if removed is outermost:
        plan.insert_after(outermost, [new_line.with_changes(leading_lines=leading)])
    elif wrap.before:
        # the `if` that stays after the wrap lends it the blank lines and comments above it
        leading = [*outermost.leading_lines, *leading]
        plan.insert_before(outermost, [new_line.with_changes(leading_lines=leading)])
        plan.rewrite(outermost, lambda node: node.with_changes(leading_lines=()))
    else:
        plan.insert_after(outermost, [new_line.with_changes(leading_lines=leading)])


# what the trainer-class survey (`trainer.py`) reuses
anchor_block = _anchor_block
arguments = _arguments
count_only_picks_devices = _count_only_picks_devices
placement = _placement
