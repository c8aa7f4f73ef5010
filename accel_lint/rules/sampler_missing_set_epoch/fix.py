"""The fix: `<sampler>.set_epoch(<epoch>)` as the first statement of each epoch loop
(guarded by `if <sampler> is not None:` when the variable may hold None), or the
reason there is none. It needs a `for` whose loop variable counts epochs and a name
for the sampler that the loop can read (see `spelling`); a `while` loop, a loop
variable that may count steps, or a sampler created inside the loop leaves the
placement to the author, who is told where the call belongs."""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.loops import Loops
from accel_lint.facts.syntax import last_name
from accel_lint.names import Scope, root_is_module_import, spelling_for
from accel_lint.rule import Fix
from accel_lint.rules.sampler_missing_set_epoch.flow import Flow
from accel_lint.rules.sampler_missing_set_epoch.record import Loop
from accel_lint.rules.sampler_missing_set_epoch.script import Script
from accel_lint.rules.sampler_missing_set_epoch.spelling import (
    MAYBE_NONE,
    MAYBE_OTHER,
    sampler_at,
)
from accel_lint.torch_api import DISTRIBUTED_SAMPLER
from accel_lint.walk import all_children


def set_epoch_fix(script: Script, flow: Flow, epochs: list[Loop]) -> tuple[Fix | None, str]:
    replacements: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]] = {}
    shown: list[str] = []
    imports: list[str] = []
    renamed: list[str] = []
    for epoch in epochs:
        if isinstance(epoch, cst.While):
            return (
                None,
                "the loader is read again on each pass of a `while` loop, which "
                "has no loop variable to pass to `set_epoch()`",
            )
        if not isinstance(epoch.target, cst.Name):
            return None, "the epoch loop has no loop variable to pass to `set_epoch()`"
        variable = epoch.target.value
        if variable == "_":
            # `for _ in train_iterator:` counts epochs without naming them: name it
            named = _free_epoch_name(script, epoch)
            if named is None:
                return None, "the epoch loop has no loop variable to pass to `set_epoch()`"
            variable = named
            replacements[epoch.target] = cst.Name(named)
            renamed.append(named)
        if not Loops.of(script.facts).names_epochs(epoch):
            return None, (
                f"`{variable}` may count steps rather than epochs; call "
                "`set_epoch()` wherever a new pass over the loader starts"
            )
        if _created_in(script, flow.sampler, epoch):
            return (
                None,
                "the sampler is created inside the epoch loop; call `set_epoch()` there",
            )
        info = script.record.loops[epoch]
        spelled = sampler_at(script, flow, info)
        if spelled is None:
            return None, "the sampler cannot be named from the epoch loop"
        receiver, sureness = spelled
        check: str | None = None
        if sureness == MAYBE_NONE:
            check = f"{receiver} is not None"
        elif sureness == MAYBE_OTHER:
            spelled_class = _distributed_sampler(info.scope)
            if spelled_class is None:
                return None, (
                    f"`{receiver}` holds another sampler on some runs; call "
                    f"`{receiver}.set_epoch({variable})` where it is distributed"
                )
            check = f"isinstance({receiver}, {spelled_class[0]})"
            imports.extend(spelled_class[1])
        call = f"{receiver}.set_epoch({variable})"
        key, value = _prepend(epoch.body, _set_epoch_statement(call, check))
        replacements[key] = value
        described = f"{call}` (when `{check}`)" if check else f"{call}`"
        if described not in shown:
            shown.append(described)
    named_loop = f" (the loop variable `_` becomes `{renamed[0]}`)" if renamed else ""
    fix = Fix(
        f"Call `{', `'.join(shown)} at the start of each epoch{named_loop}",
        replacements,
        tuple(dict.fromkeys(imports)),
    )
    return fix, ""


def _free_epoch_name(script: Script, loop: cst.For) -> str | None:
    """`epoch`, when the loop's function neither uses that name nor reads the `_` the
    loop binds (renaming it would change what that read sees)."""
    scope = script.record.loops[loop].scope.function_scope()
    for _name, where in script.record.names.get("epoch", ()):
        inner: Scope | None = where
        while inner is not None and inner is not scope:
            inner = inner.parent
        if inner is scope:  # read or bound in the function, or in a def inside it
            return None
    if _reads_underscore(loop.body):
        return None
    return "epoch"


def _reads_underscore(body: cst.CSTNode) -> bool:
    """A `_` in the loop body other than as an assignment target."""
    stack: list[cst.CSTNode] = [body]
    while stack:
        node = stack.pop()
        if isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Lambda)):
            continue
        if isinstance(node, cst.Name) and node.value == "_":
            return True
        if isinstance(node, cst.Assign):
            stack.append(node.value)
            continue
        if isinstance(node, (cst.For, cst.CompFor)):
            stack.extend(c for c in all_children(node) if c is not node.target)
            continue
        if isinstance(node, (cst.AnnAssign, cst.AugAssign)):
            stack.extend(c for c in all_children(node) if c is not node.target)
            continue
        stack.extend(all_children(node))
    return False


def _distributed_sampler(scope: Scope) -> tuple[str, tuple[str, ...]] | None:
    """How the loop's scope spells `DistributedSampler`, and the import that needs."""
    options = [spelling_for(name, scope) for name in sorted(DISTRIBUTED_SAMPLER)]
    for spelled, needed in sorted(options, key=lambda o: (o[1] is not None, len(o[0]))):
        if root_is_module_import(spelled, scope):
            return spelled, (needed,) if needed else ()
    return None


def _created_in(script: Script, sampler: cst.Call, loop: Loop) -> bool:
    return any(site.node is sampler and loop in site.loops for site in script.facts.calls)


def _set_epoch_statement(call: str, check: str | None) -> cst.BaseStatement:
    line = cst.SimpleStatementLine(body=[cst.Expr(cst.parse_expression(call))])
    if check is None:
        return line
    return cst.If(test=cst.parse_expression(check), body=cst.IndentedBlock(body=[line]))


def _is_set_epoch_line(statement: cst.BaseStatement) -> bool:
    if isinstance(statement, cst.If) and isinstance(statement.body, cst.IndentedBlock):
        inner = statement.body.body
        return len(inner) == 1 and statement.orelse is None and _is_set_epoch_line(inner[0])
    return (
        isinstance(statement, cst.SimpleStatementLine)
        and len(statement.body) == 1
        and isinstance(statement.body[0], cst.Expr)
        and isinstance(statement.body[0].value, cst.Call)
        and last_name(statement.body[0].value.func) == "set_epoch"
    )


def _prepend(
    body: cst.BaseSuite, statement: cst.BaseStatement
) -> tuple[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]]:
    """The replacement that makes `statement` the first of the loop body."""
    if isinstance(body, cst.IndentedBlock):
        # after the set_epoch calls already inserted there, so they keep source order
        leading = 0
        while leading < len(body.body) - 1 and _is_set_epoch_line(body.body[leading]):
            leading += 1
        if leading:
            anchor = body.body[leading - 1]
            return anchor, cst.FlattenSentinel([anchor, statement])
        first = body.body[0]
        return first, cst.FlattenSentinel([statement, first])
    assert isinstance(body, cst.SimpleStatementSuite)
    # `for epoch in range(n): train(loader)` becomes a block
    rest = [s.with_changes(semicolon=cst.MaybeSentinel.DEFAULT) for s in body.body]
    lines = [
        cst.SimpleStatementLine(body=[small], trailing_whitespace=body.trailing_whitespace)
        if i == len(rest) - 1
        else cst.SimpleStatementLine(body=[small])
        for i, small in enumerate(rest)
    ]
    return body, cst.IndentedBlock(body=[statement, *lines])
