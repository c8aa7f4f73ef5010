"""Directories the script creates: every process now runs the `if not
os.path.isdir(d): os.mkdir(d)` the one process ran, and in step (DDP keeps them
so), so two of them may both find the directory missing and the second
`mkdir` fails with `FileExistsError`. They become `os.makedirs(d,
exist_ok=True)`, which only tolerates what another process created.

`directory_calls` surveys; `tolerate_existing` is the step.
"""

from __future__ import annotations

from collections.abc import Sequence

import libcst as cst

from accel_lint.edits import add_keyword, code_for
from accel_lint.facts import CallSite
from accel_lint.names import resolves_to
from accel_lint.rules.data_parallel.plan import Plan
from accel_lint.rules.data_parallel.shape import NoFix, Shape

_MKDIR = frozenset({"os.mkdir"})
_MAKEDIRS = frozenset({"os.makedirs"})


def directory_calls(sites: Sequence[CallSite]) -> tuple[cst.Call, ...]:
    """`os.mkdir(...)` and `os.makedirs(...)` calls among `sites` (those that run once
    the process group exists) that may fail when the directory exists."""
    found: list[cst.Call] = []
    for site in sites:
        call = site.node
        mkdir = resolves_to(call.func, site.scope, _MKDIR)
        if not mkdir and not resolves_to(call.func, site.scope, _MAKEDIRS):
            continue
        if any(a.star for a in call.args):
            raise NoFix(f"`{code_for(call)}` may race with the other processes")
        if any(a.keyword is not None and a.keyword.value == "exist_ok" for a in call.args):
            continue
        if mkdir and not isinstance(call.func, cst.Attribute):
            raise NoFix(f"`{code_for(call)}` may race with the other processes")
        if len(call.args) > 2:
            continue  # `makedirs(d, mode, exist_ok)` already says what it tolerates
        found.append(call)
    return tuple(found)


def tolerate_existing(shape: Shape) -> Plan:
    plan = Plan()
    for call in shape.directories:
        plan.rewrite(call, _makedirs)
    return plan


def _makedirs(call: cst.Call) -> cst.Call:
    func = call.func
    if isinstance(func, cst.Attribute) and func.attr.value == "mkdir":
        # `os.makedirs` takes `os.mkdir`'s `(path, mode)` in the same places
        call = call.with_changes(func=func.with_changes(attr=cst.Name("makedirs")))
    return add_keyword(call, "exist_ok", "True")
