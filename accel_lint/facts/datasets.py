"""Datasets a DataLoader reads from memory with no per-item work: a `TensorDataset`
built in the file, a tensor, a list or tuple display, and a `Subset` of one. Indexing
them is a slice of memory that is already there; worker processes only add the
copies between processes.

The dataset is followed through names bound to it (every binding must be one) and
through the file's functions that return it (every `return` must be one), a few
steps deep. A parameter, or anything else, is not known to be in memory.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import FileFacts
from accel_lint.facts.syntax import returns
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.torch_api import SUBSET, TENSOR_CREATORS, TENSOR_DATASET

_MAX_DEPTH = 4


def in_memory(facts: FileFacts, expr: cst.BaseExpression, scope: Scope) -> bool:
    """`expr` (read in `scope`) is a dataset already in memory that needs no per-item
    work: `TensorDataset(...)`, a torch tensor, a list or tuple display, a `Subset` of
    one, or a name or a call of the file's own function that is always one of those."""
    return _in_memory(facts, expr, scope, 0)


def _in_memory(facts: FileFacts, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, (cst.List, cst.Tuple)):
        return not any(isinstance(e, cst.StarredElement) for e in expr.elements)
    if isinstance(expr, cst.Name):
        bindings = scope.lookup(expr.value)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.IMPORT or binding.value is None:
                return False
            if binding.scope is None or not isinstance(binding.node, (cst.Assign, cst.AnnAssign)):
                return False
            if not _in_memory(facts, binding.value, binding.scope, depth + 1):
                return False
        return True
    if not isinstance(expr, cst.Call):
        return False
    if resolves_to(expr.func, scope, TENSOR_DATASET | TENSOR_CREATORS):
        return True
    if resolves_to(expr.func, scope, SUBSET):
        first = expr.args[0] if expr.args else None
        return (
            first is not None
            and not first.star
            and first.keyword is None
            and _in_memory(facts, first.value, scope, depth + 1)
        )
    callee = CallGraph.of(facts).local_callee(expr, scope)
    if callee is None or callee[1] != 0:  # a function of the file, not a class or method
        return False
    func = callee[0]
    inner = facts.scope_of.get(func)
    values = list(returns(func))
    return (
        inner is not None
        and bool(values)
        and all(v is not None and _in_memory(facts, v, inner, depth + 1) for v in values)
    )
