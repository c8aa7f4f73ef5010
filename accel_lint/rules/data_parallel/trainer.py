"""A trainer class: `self.model = DataParallel(self.model)` in `__init__`, which also
builds the training loaders (`self.train_loader = DataLoader(...)`), and an epoch loop
in another method of the class that trains on them (directly or through a method it
calls). The class is built once and its epoch method called once in the file.

The migration is the script's, in the class's shape: the process group is set up in
`__init__` (its `rank`, `world_size` and `local_rank` are locals there; the other
methods ask `dist.get_rank()`), the loaders get their `DistributedSampler` in
`__init__`, the epoch loop calls `self.train_loader.sampler.set_epoch(epoch)`, saves
and prints run on rank 0, and the group is destroyed after the epoch loop.

`is_trainer_wrap` tells the shape; `survey_trainer` surveys it into a `Shape` that the
script's steps migrate.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import CallSite, FileFacts
from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import is_main_test
from accel_lint.names import Scope, resolves_to
from accel_lint.rules.data_parallel.directories import directory_calls
from accel_lint.rules.data_parallel.process_group import check_devices, end_of, setup_position
from accel_lint.rules.data_parallel.rank_zero import rank_zero_lines
from accel_lint.rules.data_parallel.region import Region
from accel_lint.rules.data_parallel.samplers import (
    batch_sizes_nothing_else,
    epoch_loop,
    iterates,
    sole_target,
    training_loader,
)
from accel_lint.rules.data_parallel.shape import (
    EpochLoop,
    NoFix,
    Reference,
    Shape,
    TrainingLoader,
    Wrap,
    depth_of,
    line_of,
)
from accel_lint.rules.data_parallel.spelling import choose_names
from accel_lint.rules.data_parallel.tree import Tree, calls_in, descendants, method_name
from accel_lint.rules.data_parallel.wrap import (
    anchor_block,
    arguments,
    count_only_picks_devices,
    import_statement,
    isinstance_references,
    placement,
)
from accel_lint.torch_api import DATALOADER, TORCH_SAVE

_NOT_A_TRAINER = "the migration of a trainer class"


def is_trainer_wrap(call: cst.Call, tree: Tree) -> bool:
    """`self.<attr> = DataParallel(...)` in a method of a class."""
    statement = tree.statement(call)
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and statement.body[0].value is call
        and len(statement.body[0].targets) == 1
    ):
        return False
    target = statement.body[0].targets[0].target
    return (
        isinstance(target, cst.Attribute)
        and isinstance(target.value, cst.Name)
        and target.value.value == "self"
        and _method_and_class(call, tree) is not None
    )


def _method_and_class(node: cst.CSTNode, tree: Tree) -> tuple[cst.FunctionDef, cst.ClassDef] | None:
    function = next((a for a in tree.ancestors(node) if isinstance(a, cst.FunctionDef)), None)
    if function is None:
        return None
    block = tree.parent(function)
    owner = tree.parent(block) if isinstance(block, cst.IndentedBlock) else None
    return (function, owner) if isinstance(owner, cst.ClassDef) else None


def survey_trainer(
    site: CallSite, facts: FileFacts, tree: Tree, references: Sequence[Reference]
) -> Shape:
    found = _method_and_class(site.node, tree)
    assert found is not None
    init, cls = found
    _builds_loaders(cls, init, facts, tree)
    if init.name.value != "__init__":
        raise NoFix(
            f"the model is wrapped in `{cls.name.value}.{init.name.value}()`; "
            f"{_NOT_A_TRAINER} needs the wrap in `__init__`"
        )
    scope = facts.scope_of.get(init)
    if scope is None:
        raise NoFix(f"`{cls.name.value}.{init.name.value}()` could not be followed")
    statement = tree.statement(site.node)
    assert isinstance(statement, cst.SimpleStatementLine)
    assign = statement.body[0]
    assert isinstance(assign, cst.Assign)
    target = code_for(assign.targets[0].target)
    block, guards = anchor_block(statement, tree)
    module_arg, devices, count = arguments(site.node, site.scope)
    if count is not None:
        count_only_picks_devices(count, tree, site.node, guards)
    before = placement(statement, guards, target, module_arg.value, scope, facts, tree)
    # `DistributedDataParallel(self.model.to(local_rank ...))`: moved first, always
    wrap = Wrap(site.node, statement, target, guards, before, None, module_arg, devices, False)
    check_devices(facts, tree)
    renamed = isinstance_references(wrap, references, tree)
    assert isinstance(block, cst.IndentedBlock)
    methods = _methods(cls, facts)
    _built_once(cls, facts, tree)
    setup_before = setup_position(block, scope)
    if any(
        isinstance(n, cst.Return) for n in descendants(init.body)
    ):  # leaving `__init__` early would leave the class half set up on some ranks
        raise NoFix(f"`{cls.name.value}.__init__()` returns early")
    region = Region(facts, tree, block, setup_before)
    inside = {s.node for s in region.sites}
    for other in facts.calls:
        in_method = other.function in methods.values() and other.function is not init
        if in_method and other.node not in inside:
            region.sites.append(other)
            inside.add(other.node)
    region.helpers.extend(m for m in methods.values() if m is not init)
    _saves_inside(region, facts, tree, cls)
    loaders, epoch_loops, epochs = _loaders(cls, init, block, scope, methods, facts, tree, region)
    # destroyed at the end of the method with the epoch loop (before its final `return`)
    assert isinstance(epochs.body, cst.IndentedBlock)
    end, end_is_return = end_of(epochs.body)
    _class_calls_outside(cls, facts, tree)
    rank_zero = rank_zero_lines(facts, tree, region, target)
    names = choose_names(
        tree.module,
        facts.module_scope,
        [facts.scope_of[m] for m in methods.values() if m in facts.scope_of],
        site.node.func,
        import_statement(site.node.func, site.scope, tree),
    )
    return Shape(
        tree=tree,
        module=tree.module,
        wrap=wrap,
        block=block,
        depth=depth_of(block, tree),
        setup_before=setup_before,
        end=end,
        end_is_return=end_is_return,
        loaders=loaders,
        epoch_loops=epoch_loops,
        rank_zero=rank_zero,
        references=renamed,
        directories=directory_calls(region.sites),
        names=names,
    )


def _builds_loaders(
    cls: cst.ClassDef, method: cst.FunctionDef, facts: FileFacts, tree: Tree
) -> None:
    """The class builds a DataLoader (a base trainer is handed its loaders instead)."""
    if any(
        tree.inside(s.node, cls) and resolves_to(s.node.func, s.scope, DATALOADER)
        for s in facts.calls
    ):
        return
    where = f"`{cls.name.value}.{method.name.value}()`"
    if Loops.of(facts).training_loops():
        raise NoFix(
            f"the model is wrapped in {where}, but the class builds no DataLoader: "
            f"{_NOT_A_TRAINER} needs its training loaders built in `__init__`"
        )
    raise NoFix(
        f"the model is wrapped in {where}, but the class builds no DataLoader and this "
        "file runs no `.backward()`: its loaders and training loop are in other files"
    )


def _class_calls_outside(cls: cst.ClassDef, facts: FileFacts, tree: Tree) -> None:
    """Methods run on the instance, once it is built: `Trainer.helper()` called on the
    class itself may run before `__init__` sets the process group up."""
    name = cls.name.value
    for site in facts.calls:
        func = site.node.func
        if (
            isinstance(func, cst.Attribute)
            and isinstance(func.value, cst.Name)
            and func.value.value == name
            and not tree.inside(site.node, cls)
        ):
            raise NoFix(
                f"`{line_of(site.node, tree)}` calls `{name}` itself, maybe before its "
                "`__init__` sets the process group up"
            )


def _methods(cls: cst.ClassDef, facts: FileFacts) -> dict[str, cst.FunctionDef]:
    body = cls.body
    assert isinstance(body, cst.IndentedBlock)
    return {s.name.value: s for s in body.body if isinstance(s, cst.FunctionDef)}


def _built_once(cls: cst.ClassDef, facts: FileFacts, tree: Tree) -> None:
    """The process group is set up in `__init__`: the class must be built once, by name,
    outside any loop, and no class of the file may extend it."""
    name = cls.name.value
    builds = [
        s
        for s in facts.calls
        if isinstance(s.node.func, cst.Name)
        and s.node.func.value == name
        and any(b.node is cls for b in s.scope.lookup(name) or ())
    ]
    if len(builds) != 1 or tree.loops(builds[0].node, tree.module):
        raise NoFix(
            f"`{name}` is not built exactly once (outside loops) in this file; "
            f"{_NOT_A_TRAINER} sets the process group up in its `__init__`"
        )
    for node in tree.nodes():
        if isinstance(node, cst.ClassDef) and any(
            isinstance(b.value, cst.Name) and b.value.value == name for b in node.bases
        ):
            raise NoFix(f"`{node.name.value}` extends the trainer class `{name}`")


def _saves_inside(region: Region, facts: FileFacts, tree: Tree, cls: cst.ClassDef) -> None:
    """Every `torch.save` and every directory made runs in the class, once the process
    group exists (where it is limited to rank 0, or made to tolerate the others)."""
    inside = {s.node for s in region.sites}
    made = set(directory_calls(facts.calls)) - set(directory_calls(region.sites))
    for site in facts.calls:
        if site.node in inside:
            continue
        if resolves_to(site.node.func, site.scope, TORCH_SAVE) or site.node in made:
            raise NoFix(
                f"`{line_of(site.node, tree)}` runs outside the trainer class "
                f"`{cls.name.value}` (or before its process group), on every process"
            )


def _self_attribute(node: cst.BaseExpression) -> str | None:
    if (
        isinstance(node, cst.Attribute)
        and isinstance(node.value, cst.Name)
        and node.value.value == "self"
    ):
        return node.attr.value
    return None


def _loaders(
    cls: cst.ClassDef,
    init: cst.FunctionDef,
    block: cst.IndentedBlock,
    scope: Scope,
    methods: dict[str, cst.FunctionDef],
    facts: FileFacts,
    tree: Tree,
    region: Region,
) -> tuple[tuple[TrainingLoader, ...], tuple[EpochLoop, ...], cst.FunctionDef]:
    """The training loaders `__init__` builds, the epoch loop that trains them, and the
    method that holds it."""
    loaders: list[TrainingLoader] = []
    loops: dict[cst.For | cst.While, list[str]] = {}
    loop_scope: dict[cst.For | cst.While, Scope] = {}
    for site in facts.calls:
        statement = tree.statement(site.node)
        if (
            tree.inside(site.node, cls)
            and resolves_to(site.node.func, site.scope, DATALOADER)
            and (statement is None or tree.block(statement) is not block)
        ):
            # one trained there would miss its sampler
            raise NoFix(
                f"`{line_of(site.node, tree)}` builds a DataLoader elsewhere than in "
                f"`{cls.name.value}.__init__()`"
            )
    for site in region.sites:
        if not region.in_block(site) or not resolves_to(site.node.func, site.scope, DATALOADER):
            continue
        statement = tree.statement(site.node)
        attr = _assigned_attribute(site.node, statement)
        if attr is None or statement is None or tree.block(statement) is not block:
            continue
        places = _training_places(attr, methods, facts, tree)
        if not places:
            continue  # an evaluation loader
        _assigned_once(cls, attr, tree)
        taken = {n for x in loaders for n in (x.sampler, x.dataset_name) if n is not None}
        loader = training_loader(site.node, attr, tree, scope, taken, False, False)
        loader = replace(loader, name=f"self.{attr}", branches=True)
        batch_sizes_nothing_else(loader, facts, tree)
        for place, method in places:
            around = tree.loops(place, method)
            if not around:
                raise NoFix(f"the training loop over `self.{attr}` is not inside an epoch loop")
            loop = around[0]
            receiver = f"self.{attr}.sampler"
            if receiver not in loops.setdefault(loop, []):
                loops[loop].append(receiver)
            method_scope = facts.scope_of.get(method)
            if method_scope is None:
                raise NoFix(f"`{cls.name.value}.{method.name.value}()` could not be followed")
            loop_scope[loop] = method_scope
        loaders.append(loader)
    if not loaders:
        raise NoFix(
            f"`{cls.name.value}.__init__()` builds no training loader (`self.<name> = "
            "DataLoader(...)` trained in an epoch loop of the class)"
        )
    if len(loops) != 1:
        raise NoFix(f"the training loaders of `{cls.name.value}` are trained in several loops")
    ((loop, samplers),) = loops.items()
    method = next(m for m in methods.values() if tree.inside(loop, m))
    if method is init or tree.block(loop) is not method.body:
        raise NoFix(
            f"the epoch loop of `{cls.name.value}` is not a statement of one of its methods"
        )
    _called_once(cls, method, facts, tree)
    epoch = epoch_loop(loop, samplers, loop_scope[loop], tree)
    assert isinstance(method.body, cst.IndentedBlock)
    return tuple(loaders), (epoch,), method


def _assigned_attribute(call: cst.Call, statement: cst.CSTNode | None) -> str | None:
    """`train_loader` for `self.train_loader = DataLoader(...)`."""
    target = sole_target(call, statement)
    return _self_attribute(target) if target is not None else None


def _assigned_once(cls: cst.ClassDef, attr: str, tree: Tree) -> None:
    """`self.<attr>` is bound once in the class (no wrapper or rebuild later)."""
    count = 0
    for node in tree.nodes():
        if isinstance(node, cst.AssignTarget):
            target: cst.BaseExpression = node.target
        elif isinstance(node, (cst.AugAssign, cst.AnnAssign)):
            target = node.target
        else:
            continue
        if _self_attribute(target) == attr and tree.inside(node, cls):
            count += 1
    if count != 1:
        raise NoFix(f"the training loader `self.{attr}` is assigned more than once")


def _training_places(
    attr: str, methods: dict[str, cst.FunctionDef], facts: FileFacts, tree: Tree
) -> list[tuple[cst.CSTNode, cst.FunctionDef]]:
    """Where the class trains on `self.<attr>`: a `for` over it with `.backward()` in its
    body (also in a method it calls); or, when that loop is a whole method's pass,
    each `self.<method>(...)` call of that method from another one."""
    passes: list[cst.FunctionDef] = []
    places: list[tuple[cst.CSTNode, cst.FunctionDef]] = []
    for method in methods.values():
        for node in descendants(method.body):
            if (
                isinstance(node, cst.For)
                and iterates(node.iter, f"self.{attr}")
                and _trains(node.body, methods)
            ):
                if tree.loops(node, method):
                    places.append((node, method))
                elif method not in passes:
                    passes.append(method)
    for method in methods.values():
        for call in calls_in(method.body):
            callee = _self_attribute(call.func)
            if callee is not None and methods.get(callee) in passes:
                places.append((call, method))
    return places


def _trains(body: cst.CSTNode, methods: dict[str, cst.FunctionDef], depth: int = 0) -> bool:
    for call in calls_in(body):
        if method_name(call) == "backward":
            return True
        callee = _self_attribute(call.func)
        if depth == 0 and callee in methods and _trains(methods[callee].body, methods, 1):
            return True
    return False


def _called_once(cls: cst.ClassDef, method: cst.FunctionDef, facts: FileFacts, tree: Tree) -> None:
    """The process group is destroyed after the epoch loop: its method must run once,
    on the one instance (`trainer = Trainer(...)`; `trainer.train()`), outside loops."""
    name = method.name.value
    calls = [
        s
        for s in facts.calls
        if method_name(s.node) == name
        and isinstance(s.node.func, cst.Attribute)
        and _an_instance(s.node.func.value, cls, s.scope)
    ]
    if len(calls) != 1 or tree.loops(calls[0].node, tree.module):
        raise NoFix(
            f"`{cls.name.value}.{name}()`, which holds the epoch loop, is not called exactly "
            "once (outside loops) in this file"
        )
    # the group is destroyed as it returns: nothing of the script may run after it
    statement = tree.statement(calls[0].node)
    block = tree.block(statement) if statement is not None else None
    owner = tree.parent(block) if isinstance(block, cst.IndentedBlock) else block
    script_level = owner is tree.module or (
        isinstance(owner, cst.If) and is_main_test(owner.test) and tree.block(owner) is tree.module
    )
    if block is None or not script_level or block.body[-1] is not statement:
        raise NoFix(
            f"`{line_of(calls[0].node, tree)}` is not the last statement of the script; "
            f"the process group ends with `{cls.name.value}.{name}()`"
        )


def _an_instance(expr: cst.BaseExpression, cls: cst.ClassDef, scope: Scope) -> bool:
    """`Trainer(...)`, or a name bound only to it."""
    if isinstance(expr, cst.Call):
        return isinstance(expr.func, cst.Name) and any(
            b.node is cls for b in scope.lookup(expr.func.value) or ()
        )
    if isinstance(expr, cst.Name):
        bindings = scope.lookup(expr.value) or []
        return bool(bindings) and all(
            b.value is not None and _an_instance(b.value, cls, scope) for b in bindings
        )
    return False
