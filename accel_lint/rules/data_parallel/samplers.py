"""Training data: each training loader gets a `DistributedSampler` (its `shuffle=`
moves into the sampler) and the per-process share of the global batch; each
epoch loop starts with `sampler.set_epoch(epoch)`. Evaluation loaders (no
`.backward()` in their loop) stay whole on every process. A loader built and
trained in a function that the anchor block calls once (`train(model, config)`)
gets its sampler there, and divides by `dist.get_world_size()`. Nothing else may
be built for the loader's batch: it would not match the smaller batches.

`training_loaders` surveys; `shard_training_data` is the step.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import libcst as cst

from accel_lint.edits import add_keyword, code_for, keyword_arg
from accel_lint.facts import FileFacts, int_value
from accel_lint.facts.loops import Loops
from accel_lint.layout import fits, split_call
from accel_lint.names import Scope, resolves_to
from accel_lint.rules.data_parallel.plan import Plan, Statement
from accel_lint.rules.data_parallel.region import Region
from accel_lint.rules.data_parallel.shape import (
    EpochLoop,
    NoFix,
    Shape,
    TrainingLoader,
    depth_of,
    is_none,
    line_of,
    local_function,
)
from accel_lint.rules.data_parallel.source import (
    expression,
    hoisted,
    statements,
)
from accel_lint.rules.data_parallel.tree import Block, Tree, calls_in, descendants, method_name
from accel_lint.torch_api import DATALOADER

_PARAMS = ("dataset", "batch_size", "shuffle", "sampler", "batch_sampler")
_ATOMS = (cst.Name, cst.Attribute, cst.Integer, cst.Call, cst.Subscript)


def training_loaders(
    facts: FileFacts, tree: Tree, block: Block, scope: Scope, region: Region
) -> tuple[tuple[TrainingLoader, ...], tuple[EpochLoop, ...]]:
    """The training loaders of the anchor block (and of a function it calls once to
    train), and the epoch loops they are trained in."""
    loaders: list[TrainingLoader] = []
    loops: dict[cst.For | cst.While, list[str]] = {}
    scope_of_loop: dict[cst.For | cst.While, Scope] = {}
    bound_in: dict[str, Scope] = {}  # each training loader's name, and its scope
    trainers = _training_functions(facts, tree, block, region)
    for site in region.sites:
        if not resolves_to(site.node.func, site.scope, DATALOADER):
            continue
        if region.in_block(site):
            where, where_scope, in_helper = block, scope, False
        elif (
            site.function in trainers
            and site.function is not None
            and isinstance(site.function.body, cst.IndentedBlock)
        ):
            # the function the anchor block calls once to train: the loader, its epoch
            # loop and the sampler all live there; the anchor's `world_size` does not
            where, where_scope, in_helper = site.function.body, trainers[site.function], True
        else:
            continue
        name = _assigned_name(site.node, tree)
        if name is None:
            continue
        epoch_loops = _epoch_loops_training(name, facts, tree, where, where_scope, region)
        if not epoch_loops:
            continue  # an evaluation loader: every process keeps the whole dataset
        # the names the other loaders' lines add (a loader bound in several branches
        # of one `if` may use the same names in each)
        taken = {
            n
            for x in loaders
            if x.name != name
            for n in (x.sampler, x.dataset_name)
            if n is not None
        }
        branches = _in_branches(name, where_scope, tree)
        loader = _loader(site.node, name, tree, where_scope, taken, in_helper, branches)
        _batch_sizes_nothing_else(loader, facts, tree)
        for loop in epoch_loops:
            if not tree.precedes(loader.statement, loop):
                raise NoFix(f"the training loader `{name}` is built inside its epoch loop")
            # one `set_epoch` per loader name, through the loader when branches build it
            receiver = f"{name}.sampler" if branches else loader.sampler
            if receiver not in loops.setdefault(loop, []):
                loops[loop].append(receiver)
            scope_of_loop[loop] = where_scope
        loaders.append(loader)
        bound_in[name] = where_scope
    for name, where_scope in bound_in.items():
        if sum(x.name == name for x in loaders) != len(where_scope.lookup(name) or []):
            # a binding that is not a training loader (`train_loader = None` first)
            raise NoFix(f"the training loader `{name}` is assigned more than once")
    if not loaders:
        owner = tree.parent(block)
        if Loops.of(facts).training_loops() and isinstance(owner, cst.FunctionDef):
            # the file trains, elsewhere than where the model is wrapped
            raise NoFix(
                f"the model is wrapped in `{owner.name.value}()`, and no training loop over "
                "a DataLoader runs there (nor in a function it calls once to train): the "
                "migration needs the wrap and the training loop in one function"
            )
        raise NoFix(
            "no training loop over a DataLoader was found (a `for` over a loader, with "
            "`.backward()` inside, in an epoch loop)"
        )
    epochs = tuple(
        _epoch_loop(loop, samplers, scope_of_loop[loop], tree) for loop, samplers in loops.items()
    )
    return tuple(loaders), epochs


def _in_branches(name: str, scope: Scope, tree: Tree) -> bool:
    """`name` is bound more than once, each time in another branch of one `if` chain
    (CIFAR or ImageNet loaders): no run builds two of them. Raises when bound
    several times otherwise."""
    bindings = scope.lookup(name) or []
    if len(bindings) <= 1:
        return False
    lines: list[cst.BaseStatement] = []
    for binding in bindings:
        line = tree.statement(binding.node) if binding.node is not None else None
        if binding.scope is not scope or line is None:
            raise NoFix(f"the training loader `{name}` is assigned more than once")
        lines.append(line)
    if not all(tree.exclusive(a, b) for i, a in enumerate(lines) for b in lines[i + 1 :]):
        raise NoFix(f"the training loader `{name}` is assigned more than once")
    return True


def _free_at(name: str, statement: cst.BaseStatement, scope: Scope, tree: Tree) -> bool:
    """No binding of `name` reaches `statement`: unbound, or bound only in other
    branches of an `if` that `statement` is in (binding it there too changes nothing
    the original could read without a NameError)."""
    for binding in scope.lookup(name) or []:
        line = tree.statement(binding.node) if binding.node is not None else None
        if binding.scope is not scope or line is None or not tree.exclusive(line, statement):
            return False
    return True


def _batch_sizes_nothing_else(loader: TrainingLoader, facts: FileFacts, tree: Tree) -> None:
    """Each process now loads `batch // world_size` samples; something else built for the
    loader's batch (`Yolo_loss(batch=config.batch // config.subdivisions)`, whose
    buffers have that many rows) would no longer match the batches it gets."""
    spelled = code_for(loader.batch_size.value)
    if int_value(loader.batch_size.value) is not None:
        return  # a literal batch size says nothing about who else uses the number
    for site in facts.calls:
        if site.node is loader.call or resolves_to(site.node.func, site.scope, DATALOADER):
            continue
        for arg in site.node.args:
            if (
                arg.keyword is not None
                and "batch" in arg.keyword.value.lower()
                and code_for(arg.value) == spelled
            ):
                raise NoFix(
                    f"`{line_of(site.node, tree)}` is built for the batch of `{loader.name}` "
                    f"(`{spelled}`), which each process now divides"
                )


def _training_functions(
    facts: FileFacts, tree: Tree, block: Block, region: Region
) -> dict[cst.FunctionDef, Scope]:
    """Functions of the file that the anchor block calls exactly once, outside any loop
    (`train(model, config)`), and that hold their own epoch loop: a loader built there
    is trained there. Only these are searched for loaders besides the anchor block."""
    calls: dict[cst.FunctionDef, list[cst.Call]] = {}
    for site in region.sites:
        found = local_function(site.node.func, site.scope, facts) if region.in_block(site) else None
        if found is not None and found[0] in region.helpers:
            calls.setdefault(found[0], []).append(site.node)
    out: dict[cst.FunctionDef, Scope] = {}
    for func, sites in calls.items():
        own = facts.scope_of.get(func)
        if own is None or len(sites) != 1 or tree.loops(sites[0], block):
            continue
        if any(isinstance(n, (cst.For, cst.While)) for n in descendants(func.body)):
            out[func] = own
    return out


def sole_target(call: cst.Call, statement: cst.CSTNode | None) -> cst.BaseExpression | None:
    """`x` (or `self.x`) when `statement` is `x = call` and nothing else."""
    if (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and statement.body[0].value is call
        and len(statement.body[0].targets) == 1
    ):
        return statement.body[0].targets[0].target
    return None


def _assigned_name(call: cst.Call, tree: Tree) -> str | None:
    target = sole_target(call, tree.statement(call))
    return target.value if isinstance(target, cst.Name) else None


def _epoch_loops_training(
    name: str, facts: FileFacts, tree: Tree, block: Block, scope: Scope, region: Region
) -> list[cst.For | cst.While]:
    """The loops of the anchor block around each training iteration of loader `name`."""
    # where, in the anchor block, the loader is iterated: directly, or by a call
    places: list[cst.CSTNode] = [
        node
        for node in descendants(block)
        if isinstance(node, cst.For)
        and _iterates(node.iter, name)
        and _trains(node.body, facts, scope)
    ]
    loader_bindings = scope.lookup(name)
    for site in region.sites:
        within = tree.same_function(site.node, block)
        found = local_function(site.node.func, site.scope, facts) if within else None
        if found is None:
            continue
        func, fscope = found
        # the function reaches the loader through a parameter, or as a global
        aliases = {_parameter_for(site.node, func, name)}
        if fscope.lookup(name) == loader_bindings:
            aliases.add(name)
        if any(
            isinstance(node, cst.For)
            and any(_iterates(node.iter, alias) for alias in aliases if alias is not None)
            and _trains(node.body, facts, fscope)
            for node in descendants(func.body)
        ):
            places.append(site.node)
    loops: list[cst.For | cst.While] = []
    for place in places:
        around = tree.loops(place, block)
        if not around:
            raise NoFix(f"the training loop over `{name}` is not inside an epoch loop")
        innermost = around[0]
        if isinstance(innermost, cst.While) and _epoch_counter(innermost, place, tree) is None:
            if _counts_epochs(innermost):
                raise NoFix(
                    f"the epoch loop around `{name}` is a `while` loop that counts its epochs "
                    "after the loader is read"
                )
            if scope.lookup(PASS_COUNTER) is not None:
                # passes are counted in a new `epoch` (see `_epoch_loop`): it must be free
                raise NoFix(
                    f"the epoch loop around `{name}` is a `while` loop that counts no epochs "
                    f"(`epoch += 1` in its body, before the loader is read), and the name "
                    f"`{PASS_COUNTER}` a count of its passes needs is taken"
                )
        if innermost not in loops:
            loops.append(innermost)
    return loops


# the counter a `while` loop that counts no epochs gets, for `set_epoch`
PASS_COUNTER = "epoch"
_EPOCH_COUNTER = re.compile(r"(?:^|_)(?:epoch|epochs|ep)$", re.IGNORECASE)


def _epoch_counter(
    loop: cst.While, place: cst.CSTNode, tree: Tree
) -> cst.SimpleStatementLine | None:
    """`cur_epochs += 1` as a statement of the `while` loop's body, before the one that
    reads the loader (`place`): each pass is an epoch, and it is the epoch's number."""
    if not isinstance(loop.body, cst.IndentedBlock):
        return None
    for statement in loop.body.body:
        if tree.inside(place, statement):
            return None
        if _is_counter(statement):
            assert isinstance(statement, cst.SimpleStatementLine)
            return statement
    return None


def _counts_epochs(loop: cst.While) -> bool:
    """An epoch counter anywhere among the statements of the loop's body."""
    return isinstance(loop.body, cst.IndentedBlock) and any(map(_is_counter, loop.body.body))


def _is_counter(statement: cst.BaseStatement) -> bool:
    """`cur_epochs += 1`."""
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.AugAssign)
        and isinstance(statement.body[0].operator, cst.AddAssign)
        and isinstance(statement.body[0].target, cst.Name)
        and _EPOCH_COUNTER.search(statement.body[0].target.value) is not None
        and code_for(statement.body[0].value) == "1"
    )


def _iterates(expr: cst.BaseExpression, name: str) -> bool:
    """`loader`, `enumerate(loader)`, `tqdm(loader, ...)`, `zip(a, loader)` (`name` may
    be `self.loader`)."""
    if isinstance(expr, cst.Name):
        return expr.value == name
    if isinstance(expr, cst.Attribute):
        return code_for(expr) == name
    if isinstance(expr, cst.Call):
        return any(
            arg.keyword is None and not arg.star and _iterates(arg.value, name) for arg in expr.args
        )
    return False


def _trains(body: cst.CSTNode, facts: FileFacts, scope: Scope, depth: int = 0) -> bool:
    """`.backward()` in `body`, or in a function of the file that `body` calls."""
    for call in calls_in(body):
        if method_name(call) == "backward":
            return True
        if depth == 0:
            func = local_function(call.func, scope, facts)
            if func is not None and _trains(func[0].body, facts, func[1], depth + 1):
                return True
    return False


def _parameter_for(call: cst.Call, func: cst.FunctionDef, name: str) -> str | None:
    """The parameter of `func` that receives the variable `name` in `call`."""
    params = [*func.params.posonly_params, *func.params.params]
    for index, arg in enumerate(call.args):
        if arg.star or not (isinstance(arg.value, cst.Name) and arg.value.value == name):
            continue
        if arg.keyword is not None:
            return arg.keyword.value
        if index < len(params):
            return params[index].name.value
    return None


def _loader(
    call: cst.Call,
    name: str,
    tree: Tree,
    scope: Scope,
    taken: set[str],
    in_helper: bool,
    branches: bool,
) -> TrainingLoader:
    statement = tree.statement(call)
    assert isinstance(statement, cst.SimpleStatementLine)
    given: dict[str, cst.Arg] = {}
    positional = [a for a in call.args if a.keyword is None and not a.star]
    for index, arg in enumerate(call.args):
        if arg.star:
            raise NoFix(f"`{name}` gets its arguments from `{arg.star}{code_for(arg.value)}`")
        if arg.keyword is not None:
            given[arg.keyword.value] = arg
        elif index < len(_PARAMS):
            given[_PARAMS[index]] = arg
        else:
            raise NoFix(f"`{name}` passes many arguments by position")
    if "batch_sampler" in given:
        raise NoFix(f"`{name}` already has its own sampler")
    shuffle = given.get("shuffle")
    if shuffle is not None and shuffle.keyword is None and positional[-1] is not shuffle:
        raise NoFix(f"`{name}` passes arguments after `shuffle` by position")
    dataset = given.get("dataset")
    if dataset is None:
        raise NoFix(f"`{name}` has no dataset")
    none_sampler = None
    if "sampler" in given:
        none_sampler = _none_sampler(
            name, given["sampler"], dataset, shuffle, statement, scope, tree
        )
    dataset_name = None
    if not isinstance(dataset.value, (cst.Name, cst.Attribute)):
        # the sampler needs the dataset too: a line before the loader's binds it
        dataset_name = _free_name(name, "dataset", statement, scope, tree, taken)
        if dataset_name is None:
            raise NoFix(
                f"the dataset of `{name}` is built in the call, and the names "
                f"`{_derived(name, 'dataset')}` and `{name}_dataset` are taken"
            )
    batch_size = given.get("batch_size")
    if batch_size is None or is_none(batch_size.value):
        raise NoFix(f"`{name}` has no batch size to divide among the processes")
    if none_sampler is not None:
        target = none_sampler.targets[0].target
        assert isinstance(target, cst.Name)
        sampler = target.value
        # `shuffle=(train_sampler is None)` was true: the sampler shuffles
        order = "True" if shuffle is not None else "False"
    else:
        free = _free_name(name, "sampler", statement, scope, tree, taken)
        if free is None:
            raise NoFix(
                f"the script already uses the names `{_derived(name, 'sampler')}` and "
                f"`{name}_sampler`"
            )
        sampler = free
        order = code_for(shuffle.value) if shuffle is not None else "False"
    depth = depth_of(statement, tree)
    return TrainingLoader(
        call,
        statement,
        name,
        dataset,
        dataset_name,
        batch_size,
        order,
        shuffle,
        sampler,
        depth,
        in_helper,
        none_sampler,
        branches,
    )


def _none_sampler(
    name: str,
    sampler: cst.Arg,
    dataset: cst.Arg,
    shuffle: cst.Arg | None,
    statement: cst.SimpleStatementLine,
    scope: Scope,
    tree: Tree,
) -> cst.Assign:
    """`train_sampler = None` ... `DataLoader(train_dataset, shuffle=(train_sampler is
    None), sampler=train_sampler)`: the ImageNet template with its distributed branch
    taken out. The `None` line may build the DistributedSampler instead when it is the
    name's only binding, in the loader's block before it, after the dataset is built,
    and the loader is all that reads it."""
    own = f"`{name}` already has its own sampler"
    value = sampler.value
    if not isinstance(value, cst.Name) or sampler.keyword is None:
        raise NoFix(own)
    bindings = scope.lookup(value.value) or []
    if len(bindings) != 1 or bindings[0].scope is not scope or bindings[0].node is None:
        raise NoFix(own)
    line = tree.statement(bindings[0].node)
    if not (
        isinstance(line, cst.SimpleStatementLine)
        and len(line.body) == 1
        and isinstance(line.body[0], cst.Assign)
        and len(line.body[0].targets) == 1
        and isinstance(line.body[0].targets[0].target, cst.Name)
        and is_none(line.body[0].value)
        and tree.block(line) is tree.block(statement)
        and tree.precedes(line, statement)
    ):
        raise NoFix(own)
    assign = line.body[0]
    if shuffle is not None and not _is_none_test(shuffle.value, value.value):
        raise NoFix(f"`{name}` has `sampler={value.value}` and a `shuffle=` of its own")
    # every `train_sampler` of the function, nested definitions included (of the whole
    # file for a module-level one): the loader must be the only reader
    function = scope.node if scope.node is not None and scope.kind != "module" else tree.module
    readers = [
        n
        for n in tree.nodes()
        if isinstance(n, cst.Name)
        and n.value == value.value
        and n is not assign.targets[0].target
        and tree.inside(n, function)
        and not tree.inside(n, statement)
    ]
    if readers:
        raise NoFix(f"`{value.value}`, the sampler of `{name}`, is also read elsewhere")
    if not isinstance(dataset.value, cst.Name) or not all(
        b.node is not None and tree.precedes(tree.statement(b.node) or b.node, line)
        for b in scope.lookup(dataset.value.value) or []
    ):
        raise NoFix(f"`{code_for(line).strip()}` does not follow the dataset of `{name}`")
    return assign


def _is_none_test(expr: cst.BaseExpression, name: str) -> bool:
    """`name is None`, in parentheses or not."""
    return (
        isinstance(expr, cst.Comparison)
        and isinstance(expr.left, cst.Name)
        and expr.left.value == name
        and len(expr.comparisons) == 1
        and isinstance(expr.comparisons[0].operator, cst.Is)
        and is_none(expr.comparisons[0].comparator)
    )


def _free_name(
    loader: str,
    kind: str,
    statement: cst.BaseStatement,
    scope: Scope,
    tree: Tree,
    taken: set[str],
) -> str | None:
    """`train_dataset` for `train_loader`, or `train_loader_dataset` when that is taken."""
    for name in dict.fromkeys((_derived(loader, kind), f"{loader}_{kind}")):
        if name not in taken and _free_at(name, statement, scope, tree):
            return name
    return None


def _derived(loader: str, kind: str) -> str:
    """`train_loader` -> `train_sampler`, `trainloader` -> `trainsampler`, `loader` ->
    `sampler`, `batches` -> `batches_sampler` (`kind` is "sampler" or "dataset")."""
    for suffix in ("dataloader", "loader", "dl"):
        if loader == suffix:
            return kind
        if loader.endswith("_" + suffix) or (suffix != "dl" and loader.endswith(suffix)):
            return loader[: -len(suffix)] + kind
    return f"{loader}_{kind}"


def _epoch_loop(
    loop: cst.For | cst.While, samplers: list[str], scope: Scope, tree: Tree
) -> EpochLoop:
    if not isinstance(loop.body, cst.IndentedBlock):
        raise NoFix("the epoch loop is written on one line")
    if isinstance(loop, cst.While):
        counter = next(
            (
                s
                for s in loop.body.body
                if isinstance(s, cst.SimpleStatementLine)
                and _epoch_counter(loop, loop.body.body[-1], tree) is s
            ),
            None,
        )
        if counter is None:
            # an iteration-based loop (`while i <= train_iters:` around a pass over the
            # loader): each pass gets the next number of a new counter. Every process
            # runs the same passes, so they agree on it; any number new to each pass
            # gives that pass a new order.
            if scope.lookup(PASS_COUNTER) is not None:
                raise NoFix(
                    "the epoch loop is a `while` loop that counts no epochs, and the name "
                    f"`{PASS_COUNTER}` a count of its passes needs is taken"
                )
            return EpochLoop(loop, PASS_COUNTER, False, tuple(samplers), counts=True)
        aug = counter.body[0]
        assert isinstance(aug, cst.AugAssign) and isinstance(aug.target, cst.Name)
        return EpochLoop(loop, aug.target.value, False, tuple(samplers), after=counter)
    target = loop.target
    if not isinstance(target, cst.Name):
        raise NoFix(f"the epoch loop's target `{code_for(target)}` is not a single name")
    if target.value != "_":
        return EpochLoop(loop, target.value, False, tuple(samplers))
    uses = any(isinstance(n, cst.Name) and n.value == "_" for n in descendants(loop.body))
    if uses or scope.lookup("epoch") is not None:
        raise NoFix("the epoch loop has no epoch variable (`for _ in ...`)")
    return EpochLoop(loop, "epoch", True, tuple(samplers))


# -- the step ---------------------------------------------------------------------------


def shard_training_data(shape: Shape) -> Plan:
    plan = Plan()
    for loader in shape.loaders:
        new: list[Statement] = []
        dataset = code_for(loader.dataset.value)
        if loader.none_sampler is not None:
            # `train_sampler = None` builds the sampler; the loader already passes it
            built = expression(f"{shape.names.sampler}({dataset}, shuffle={loader.shuffle})")
            plan.rewrite(loader.none_sampler, _with_value(built))
            plan.rewrite(
                loader.statement,
                lambda node, loader=loader: _with_call(
                    node, _sharded(loader, shape), loader.depth, shape, keyword=None
                ),  # type: ignore[misc]
            )
            continue
        if loader.dataset_name is not None:
            new.append(_bind_dataset(loader, shape))
            dataset = loader.dataset_name
        new.extend(
            statements(
                f"{loader.sampler} = {shape.names.sampler}({dataset}, shuffle={loader.shuffle})\n",
                shape.module,
            )
        )
        # comments above the loader now introduce the new lines and the loader together
        new[0] = new[0].with_changes(leading_lines=loader.statement.leading_lines)
        plan.insert_before(loader.statement, new)
        plan.rewrite(loader.statement, lambda node: node.with_changes(leading_lines=()))
        plan.rewrite(
            loader.statement,
            lambda node, loader=loader: _with_call(
                node, _sharded(loader, shape), loader.depth, shape
            ),  # type: ignore[misc]
        )
    for epoch_loop in shape.epoch_loops:
        body = epoch_loop.loop.body
        assert isinstance(body, cst.IndentedBlock)
        calls = "".join(f"{s}.set_epoch({epoch_loop.epoch})\n" for s in epoch_loop.samplers)
        if epoch_loop.counts:
            # `epoch = 0` before the loop; each pass starts `set_epoch(epoch)`, `epoch += 1`
            counter = epoch_loop.epoch
            start = statements(f"{counter} = 0\n", shape.module)
            plan.insert_before(epoch_loop.loop, start)
            calls += f"{counter} += 1\n"
            plan.insert_before(body.body[0], statements(calls, shape.module))
        elif epoch_loop.after is not None:
            plan.insert_after(epoch_loop.after, statements(calls, shape.module))
        else:
            plan.insert_before(body.body[0], statements(calls, shape.module))
        if epoch_loop.rename:
            plan.rewrite(epoch_loop.loop, lambda loop: loop.with_changes(target=cst.Name("epoch")))
    return plan


def _with_value(value: cst.BaseExpression) -> Callable[[cst.Assign], cst.Assign]:
    return lambda node: node.with_changes(value=value)


def _bind_dataset(loader: TrainingLoader, shape: Shape) -> cst.SimpleStatementLine:
    """`train_dataset = <the dataset expression>`, laid out as it was in the call."""
    assert loader.dataset_name is not None
    prefix = f"{loader.dataset_name} = "
    value = hoisted(loader.statement, loader.dataset.value, prefix)
    line = statements(f"{prefix}None\n", shape.module)[0]
    assert isinstance(line, cst.SimpleStatementLine)
    assign = line.body[0]
    assert isinstance(assign, cst.Assign)
    return line.with_changes(body=[assign.with_changes(value=value)])


def _sharded(loader: TrainingLoader, shape: Shape) -> cst.Call:
    """The loader call with `batch_size // world_size` and `sampler=` (in place of
    `shuffle=`), and the dataset's new name."""
    call = loader.call
    args = list(call.args)
    if loader.dataset_name is not None:
        at = args.index(loader.dataset)
        args[at] = args[at].with_changes(value=cst.Name(loader.dataset_name))
    at = args.index(loader.batch_size)
    value = loader.batch_size.value
    text = code_for(value) if isinstance(value, _ATOMS) else f"({code_for(value)})"
    # a helper does not see the anchor's `world_size`
    world_size = f"{shape.names.dist}.get_world_size()" if loader.in_helper else "world_size"
    args[at] = args[at].with_changes(value=expression(f"{text} // {world_size}"))
    if loader.none_sampler is not None:
        return call.with_changes(args=args)  # `sampler=` is there, `shuffle=` now false
    if loader.shuffle_arg is None:
        return add_keyword(call.with_changes(args=args), "sampler", loader.sampler)
    at = args.index(loader.shuffle_arg)
    args[at] = keyword_arg("sampler", loader.sampler).with_changes(comma=args[at].comma)
    return call.with_changes(args=args)


def _with_call(
    statement: cst.SimpleStatementLine,
    call: cst.Call,
    depth: int,
    shape: Shape,
    keyword: str | None = "sampler",
) -> cst.SimpleStatementLine:
    """`loader = <call>` with the new call, split over lines if it got too long: one
    line as black would; a call already over several lines, before `sampler=` (the
    argument it gained; with none gained, `keyword` is None and its lines stay)."""
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    line = code_for(
        statement.with_changes(body=[assign.with_changes(value=call)], leading_lines=())
    )
    lines = line.rstrip("\n").split("\n")
    if len(lines) == 1:
        if not fits(lines[0], depth, shape.module):
            call = split_call(call, shape.module, depth)
    else:
        old = code_for(statement.with_changes(leading_lines=())).rstrip("\n").split("\n")
        longest = max(len(x) for x in old)
        too_long = any(len(x) > longest and not fits(x, depth, shape.module) for x in lines)
        if too_long and keyword is not None:
            call = _break_before(call, keyword)
    return statement.with_changes(body=[assign.with_changes(value=call)])


def _break_before(call: cst.Call, keyword: str) -> cst.Call:
    """`call` with a line break before its `keyword=` argument, indented as the
    call's other continuation lines."""
    args = list(call.args)
    at = next(i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == keyword)
    breaks = [
        call.whitespace_before_args,
        *(a.comma.whitespace_after for a in args[:-1] if isinstance(a.comma, cst.Comma)),
    ]
    newline = next((w for w in breaks if isinstance(w, cst.ParenthesizedWhitespace)), None)
    if at == 0 or newline is None:
        return call
    comma = args[at - 1].comma
    assert isinstance(comma, cst.Comma)
    # the break's own comment and blank lines stay where they are
    newline = newline.with_changes(first_line=cst.TrailingWhitespace(), empty_lines=[])
    args[at - 1] = args[at - 1].with_changes(comma=comma.with_changes(whitespace_after=newline))
    return call.with_changes(args=args)


# what the trainer-class survey (`trainer.py`) reuses
batch_sizes_nothing_else = _batch_sizes_nothing_else
epoch_loop = _epoch_loop
iterates = _iterates
training_loader = _loader
