"""What the ACL403 walk records, as plain data: every `save(...)` call with the guards
around it and the statement that holds it, where each def statement runs, the places
that run or hand on a function (`register(save)`, `mp.spawn(main)`), the order and
guards of each assignment, the `with` statement of each `with` item, and the
`destroy_process_group()` calls. `finish()` decides from these, once every binding
of the file is known."""

from __future__ import annotations

from dataclasses import dataclass, field

import libcst as cst

from accel_lint.facts import Guard
from accel_lint.names import Scope


@dataclass(frozen=True)
class Save:
    call: cst.Call
    scope: Scope
    guards: tuple[Guard, ...]  # enclosing ifs of its own function, and short-circuits
    function: cst.FunctionDef | None
    statement: cst.SimpleStatementLine | cst.SimpleStatementSuite | None
    order: int


@dataclass(frozen=True)
class Def:
    """Where a def statement runs: its body can only run in processes that ran it."""

    order: int
    guards: tuple[Guard, ...]  # inside the enclosing function (or module)
    scope: Scope
    enclosing: cst.FunctionDef | None


@dataclass(frozen=True)
class Entry:
    """A place that runs a function, or hands it on (`register(save)`), and its context."""

    guards: tuple[Guard, ...]
    scope: Scope
    function: cst.FunctionDef | None
    class_def: cst.ClassDef | None = None


@dataclass
class Record:
    saves: list[Save] = field(default_factory=list)
    defs: dict[cst.FunctionDef, Def] = field(default_factory=dict)
    # uses of a name (or `self.<name>`) other than calling it or assigning to it
    refs: dict[str, list[tuple[cst.CSTNode, Entry]]] = field(default_factory=dict)
    # the call each argument value is passed to, with its scope
    arg_call: dict[int, tuple[cst.Call, Scope]] = field(default_factory=dict)
    with_of: dict[cst.WithItem, cst.With] = field(default_factory=dict)
    # each assignment's order and guards
    assigned: dict[cst.CSTNode, tuple[int, tuple[Guard, ...]]] = field(default_factory=dict)
    # `destroy_process_group()` calls by the function that makes them, with their order
    destroys: dict[cst.FunctionDef | None, list[tuple[cst.Call, Scope, int]]] = field(
        default_factory=dict
    )
    # the statement lists (blocks) of the file, by each statement they hold
    block_of: dict[cst.CSTNode, tuple[cst.BaseStatement, ...]] = field(default_factory=dict)
