"""What a `DataLoader(...)` call passes for one parameter, through literals, names and
`**kwargs` dicts the file builds."""

from __future__ import annotations

from dataclasses import dataclass

import libcst as cst

from accel_lint.facts.file import FileFacts
from accel_lint.names import Scope

# DataLoader(dataset, batch_size, shuffle, sampler, batch_sampler, num_workers,
#            collate_fn, pin_memory, drop_last, timeout, worker_init_fn,
#            multiprocessing_context, generator, *, prefetch_factor, persistent_workers, ...)
POSITION = {
    "dataset": 0,
    "batch_size": 1,
    "shuffle": 2,
    "sampler": 3,
    "batch_sampler": 4,
    "num_workers": 5,
    "collate_fn": 6,
    "pin_memory": 7,
    "drop_last": 8,
    "timeout": 9,
    "worker_init_fn": 10,
    "multiprocessing_context": 11,
    "generator": 12,
}  # the others are keyword-only


@dataclass(frozen=True)
class Passed:
    """How a call passes a parameter.

    `absent`: not passed at all (the default applies). Otherwise `value` is the
    expression, `arg` the argument carrying it (None when it comes from a
    `**dict`), and `conditional` says the dict only gets it on some paths.
    `known` is False when a `**kwargs` we cannot read may carry it.
    """

    absent: bool
    value: cst.BaseExpression | None = None
    arg: cst.Arg | None = None
    known: bool = True
    conditional: bool = False


UNKNOWN = Passed(absent=False, known=False)


def passed(call: cst.Call, param: str, facts: FileFacts, scope: Scope) -> Passed:
    positional = 0
    splats: list[cst.Arg] = []
    for arg in call.args:
        if arg.star == "*":
            return UNKNOWN  # positional splat: cannot tell which slot is which
        if arg.star == "**":
            splats.append(arg)
        elif arg.keyword is None:
            if positional == POSITION.get(param):
                return Passed(False, arg.value, arg)
            positional += 1
        elif arg.keyword.value == param:
            return Passed(False, arg.value, arg)
    for splat in splats:
        if not isinstance(splat.value, cst.Name):
            return UNKNOWN
        kwargs = facts.kwargs_dict(splat.value, scope)
        if kwargs is None or not kwargs.resolvable:
            return UNKNOWN
        if param in kwargs.values:
            return Passed(False, kwargs.values[param], None, True, param in kwargs.conditional_keys)
    return Passed(True)
