"""The wrap: `model = DataParallel(model)` becomes `model = DistributedDataParallel(
model, device_ids=...)`, out of any `if torch.cuda.device_count() > 1:` (every
process must wrap), and `isinstance(m, DataParallel)` checks follow the new class.

`find_wrap` surveys it (and the anchor block the other steps work in);
`wrap_in_ddp` is the step.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts, int_value, string_value
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.rules.data_parallel.plan import Plan
from accel_lint.rules.data_parallel.shape import NoFix, Reference, Shape, Wrap, is_none, line_of
from accel_lint.rules.data_parallel.source import expression, fits, split_call
from accel_lint.rules.data_parallel.tree import Block, Tree

_PARAMS = ("module", "device_ids", "output_device", "dim")
_DEVICE_COUNT = frozenset({"torch.cuda.device_count"})
_MOVES = frozenset({"to", "cuda"})
_ATOMS = (cst.Name, cst.Attribute, cst.Call, cst.Subscript)


def find_wrap(call: cst.Call, scope: Scope, tree: Tree, facts: FileFacts) -> tuple[Wrap, Block]:
    """The wrap around `call`, and the anchor block: the body of the function (or
    the module, or its `if __name__ == "__main__":` block) that wraps the model."""
    statement = tree.statement(call)
    chained: cst.Call | None = None
    parent = tree.parent(call)
    if isinstance(parent, cst.Attribute) and parent.attr.value in ("to", "cuda"):
        outer = tree.parent(parent)
        if isinstance(outer, cst.Call) and outer.func is parent:
            chained = outer
    if not (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Assign)
        and len(statement.body[0].targets) == 1
        and isinstance(statement.body[0].targets[0].target, cst.Name)
        and statement.body[0].value is (chained or call)
    ):
        raise NoFix("the wrapped model is not assigned to a name (`model = DataParallel(model)`)")
    target = statement.body[0].targets[0].target.value
    module_arg, devices = _arguments(call, scope)
    block, guard = _anchor_block(statement, tree)
    moved = chained is not None or _moved_first(module_arg.value, statement, scope, tree, facts)
    wrap = Wrap(call, statement, target, guard, chained, module_arg, devices, moved)
    _model_built_here(wrap, scope)
    return wrap, block


def _moved_first(
    model: cst.BaseExpression,
    statement: cst.SimpleStatementLine,
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


def _arguments(call: cst.Call, scope: Scope) -> tuple[cst.Arg, int | None]:
    """The module argument, and how many devices a literal `device_ids` lists."""
    module_arg: cst.Arg | None = None
    devices: int | None = None
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
            devices = _device_ids(arg.value, scope)
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
    return module_arg, devices


def _device_ids(expr: cst.BaseExpression, scope: Scope) -> int | None:
    """How many devices `device_ids` lists when it is a literal; every visible device
    (`None`, `range(torch.cuda.device_count())`) is None. Anything else: `NoFix`."""
    if is_none(expr):
        return None
    if isinstance(expr, (cst.List, cst.Tuple)) and all(
        isinstance(e, cst.Element) and int_value(e.value) is not None for e in expr.elements
    ):
        return len(expr.elements)
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
        and isinstance(inner.args[0].value, cst.Call)
        and resolves_to(inner.args[0].value.func, scope, _DEVICE_COUNT)
    ):
        return None
    raise NoFix(
        f"`device_ids={code_for(expr)}` picks devices in a way the migration cannot follow "
        "(under torchrun each process uses the one device `LOCAL_RANK` names)"
    )


def _anchor_block(statement: cst.SimpleStatementLine, tree: Tree) -> tuple[Block, cst.If | None]:
    """The anchor block, and the `if` around the wrap that the wrap leaves."""
    block = tree.block(statement)
    guard: cst.If | None = None
    if isinstance(block, cst.IndentedBlock):
        owner = tree.parent(block)
        if isinstance(owner, cst.If) and not _is_main_guard(owner):
            if owner.orelse is not None:
                raise NoFix("the `if` around the wrap has an `else` branch")
            if block.body[-1] is not statement:
                raise NoFix("statements follow the wrap inside its `if`")
            guard = owner
            block = tree.block(owner)
    if isinstance(block, cst.Module):
        return block, guard
    if isinstance(block, cst.IndentedBlock):
        owner = tree.parent(block)
        if isinstance(owner, cst.FunctionDef) or (
            isinstance(owner, cst.If) and _is_main_guard(owner) and tree.block(owner) is tree.module
        ):
            return block, guard
    raise NoFix("the model is wrapped inside a nested block")


def _is_main_guard(node: cst.If) -> bool:
    test = node.test
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    sides = (test.left, test.comparisons[0].comparator)
    names = {s.value for s in sides if isinstance(s, cst.Name)}
    strings = {string_value(s) for s in sides}
    return (
        isinstance(test.comparisons[0].operator, cst.Equal)
        and names == {"__name__"}
        and "__main__" in strings
    )


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
    for ref in references:
        if ref.node is wrap.call.func:
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
    model = code_for(value)
    if wrap.chained is not None:
        # DataParallel(model).to(device): move the model first, then wrap it
        func = wrap.chained.func
        assert isinstance(func, cst.Attribute)
        model = code_for(wrap.chained.with_changes(func=func.with_changes(value=value)))
    elif not wrap.moved:
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
    guard = wrap.guard
    if guard is None:
        plan.rewrite(wrap.statement, lambda node: node.with_changes(body=new_body))
    else:
        new_line = wrap.statement.with_changes(body=new_body)
        assert isinstance(guard.body, cst.IndentedBlock)
        if len(guard.body.body) == 1:
            plan.remove(guard)
            leading = [*guard.leading_lines, *wrap.statement.leading_lines]
        else:
            plan.remove(wrap.statement)
            leading = list(wrap.statement.leading_lines)
        plan.insert_after(guard, [new_line.with_changes(leading_lines=leading)])
    for reference in shape.references:
        plan.rewrite(reference, lambda _: expression(names.ddp))
    return plan
