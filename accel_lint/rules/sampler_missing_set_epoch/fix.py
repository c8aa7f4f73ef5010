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
from accel_lint.rule import Fix
from accel_lint.rules.sampler_missing_set_epoch.flow import Flow
from accel_lint.rules.sampler_missing_set_epoch.record import Loop
from accel_lint.rules.sampler_missing_set_epoch.script import Script
from accel_lint.rules.sampler_missing_set_epoch.spelling import sampler_at, shared_variable


def set_epoch_fix(script: Script, flow: Flow, epochs: list[Loop]) -> tuple[Fix | None, str]:
    replacements: dict[cst.CSTNode, cst.CSTNode | cst.FlattenSentinel[cst.BaseStatement]] = {}
    shown: list[str] = []
    for epoch in epochs:
        if isinstance(epoch, cst.While):
            return (
                None,
                "the loader is read again on each pass of a `while` loop, which "
                "has no loop variable to pass to `set_epoch()`",
            )
        if not isinstance(epoch.target, cst.Name) or epoch.target.value == "_":
            return None, "the epoch loop has no loop variable to pass to `set_epoch()`"
        if not Loops.of(script.facts).names_epochs(epoch):
            return None, (
                f"`{epoch.target.value}` may count steps rather than epochs; call "
                "`set_epoch()` wherever a new pass over the loader starts"
            )
        if _created_in(script, flow.sampler, epoch):
            return (
                None,
                "the sampler is created inside the epoch loop; call `set_epoch()` there",
            )
        spelled = sampler_at(script, flow, script.record.loops[epoch])
        if spelled is None:
            shared = shared_variable(script, flow, script.record.loops[epoch])
            if shared is not None:
                return None, (
                    f"`{shared}` holds another sampler on some runs; call "
                    f"`{shared}.set_epoch({epoch.target.value})` where it is distributed"
                )
            return None, "the sampler cannot be named from the epoch loop"
        receiver, maybe_none = spelled
        call = f"{receiver}.set_epoch({epoch.target.value})"
        statement = _set_epoch_statement(call, receiver if maybe_none else None)
        key, value = _prepend(epoch.body, statement)
        replacements[key] = value
        described = f"{call}` (when `{receiver}` is not None)" if maybe_none else f"{call}`"
        if described not in shown:
            shown.append(described)
    fix = Fix(
        f"Call `{', `'.join(shown)} at the start of each epoch",
        replacements,
        (),
    )
    return fix, ""


def _created_in(script: Script, sampler: cst.Call, loop: Loop) -> bool:
    return any(site.node is sampler and loop in site.loops for site in script.facts.calls)


def _set_epoch_statement(call: str, none_check: str | None) -> cst.BaseStatement:
    line = cst.SimpleStatementLine(body=[cst.Expr(cst.parse_expression(call))])
    if none_check is None:
        return line
    return cst.If(
        test=cst.parse_expression(f"{none_check} is not None"),
        body=cst.IndentedBlock(body=[line]),
    )


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
