"""Datasets a DataLoader reads from memory with no per-item work: a `TensorDataset`
built in the file, a tensor, a list or tuple display, and a `Subset` of one. Indexing
them is a slice of memory that is already there; worker processes only add the
copies between processes.

The dataset is followed through names bound to it (every binding must be one) and
through the file's functions that return it (every `return` must be one), a few
steps deep. A parameter, or anything else, is not known to be in memory.

`tensors_in_memory` is the narrower question ACL106 asks: tensors or arrays only (a
list display may hold paths that a `collate_fn` opens), and also an instance of a
`Dataset` class of the file whose `__getitem__` only indexes tensors or arrays held as
attributes: no call at all (no file read, no decoding, no transform).
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.calls import CallGraph
from accel_lint.facts.file import FileFacts
from accel_lint.facts.syntax import argument_for, descendants, returns
from accel_lint.names import BindingKind, Scope, resolves_to
from accel_lint.torch_api import DATASET_BASE, NUMPY_ARRAYS, SUBSET, TENSOR_CREATORS, TENSOR_DATASET

_MAX_DEPTH = 4
# tensor methods that return a tensor of the same memory or a copy of it in memory
_TENSOR_METHODS = frozenset(
    {
        "float",
        "half",
        "double",
        "long",
        "int",
        "bool",
        "to",
        "view",
        "reshape",
        "unsqueeze",
        "squeeze",
        "permute",
        "transpose",
        "contiguous",
        "clone",
        "detach",
        "cpu",
        "numpy",
        "astype",
        "type",
        "flatten",
    }
)
# tensors built in memory besides the creators (ACL106's narrower question only)
_MORE_TENSORS = frozenset(
    f"torch.{n}" for n in ("randint", "randperm", "from_numpy", "as_tensor", "stack", "cat")
)
# calls a pure `__getitem__` may make: they read nothing
_PURE_CALLS = frozenset({"int", "len", "slice"})


def tensors_in_memory(facts: FileFacts, expr: cst.BaseExpression, scope: Scope) -> bool:
    """`expr` is a dataset of tensors or arrays already in memory, indexed with no
    per-item work: `TensorDataset(...)`, a tensor, an array, a `Subset` of one, an
    instance of a pure `Dataset` class of the file, or a name or function of the file
    that is always one of those."""
    return _in_memory(facts, expr, scope, 0, displays=False)


def in_memory(facts: FileFacts, expr: cst.BaseExpression, scope: Scope) -> bool:
    """`expr` (read in `scope`) is a dataset already in memory that needs no per-item
    work: `TensorDataset(...)`, a torch tensor, a list or tuple display, a `Subset` of
    one, or a name or a call of the file's own function that is always one of those."""
    return _in_memory(facts, expr, scope, 0)


def _in_memory(
    facts: FileFacts,
    expr: cst.BaseExpression,
    scope: Scope,
    depth: int,
    *,
    displays: bool = True,
) -> bool:
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, (cst.List, cst.Tuple)):
        return displays and not any(isinstance(e, cst.StarredElement) for e in expr.elements)
    if isinstance(expr, cst.Name):
        bindings = scope.lookup(expr.value)
        if not bindings:
            return False
        for binding in bindings:
            if binding.kind is BindingKind.IMPORT or binding.value is None:
                return False
            if binding.scope is None or not isinstance(binding.node, (cst.Assign, cst.AnnAssign)):
                return False
            if not _in_memory(facts, binding.value, binding.scope, depth + 1, displays=displays):
                return False
        return True
    if not isinstance(expr, cst.Call):
        return False
    if resolves_to(expr.func, scope, TENSOR_DATASET | TENSOR_CREATORS):
        return True
    if not displays:
        if resolves_to(expr.func, scope, _MORE_TENSORS):
            return True
        if resolves_to(expr.func, scope, NUMPY_ARRAYS) and not _memory_mapped(expr):
            return True
        if _pure_dataset(facts, expr, scope, depth):
            return True
    if resolves_to(expr.func, scope, SUBSET):
        first = expr.args[0] if expr.args else None
        return (
            first is not None
            and not first.star
            and first.keyword is None
            and _in_memory(facts, first.value, scope, depth + 1, displays=displays)
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
        and all(
            v is not None and _in_memory(facts, v, inner, depth + 1, displays=displays)
            for v in values
        )
    )


def _memory_mapped(call: cst.Call) -> bool:
    """`np.load(path, mmap_mode="r")`: indexing it reads the file."""
    return any(
        a.keyword is not None and a.keyword.value == "mmap_mode" and code_for(a.value) != "None"
        for a in call.args
    )


def _pure_dataset(facts: FileFacts, call: cst.Call, scope: Scope, depth: int) -> bool:
    """`call` builds an instance of a `Dataset` subclass of the file whose `__getitem__`
    calls nothing (but `int`, `len`, `slice`) and reads only attributes of `self` that
    every assignment of the class binds to a tensor or an array in memory."""
    if not isinstance(call.func, cst.Name):
        return False
    bindings = scope.lookup(call.func.value)
    if not bindings or len(bindings) != 1 or not isinstance(bindings[0].node, cst.ClassDef):
        return False
    cls = bindings[0].node
    class_scope = bindings[0].scope
    if class_scope is None or not any(
        resolves_to(base.value, class_scope, DATASET_BASE) for base in cls.bases
    ):
        return False
    getitem = next(
        (
            s
            for s in cls.body.body
            if isinstance(s, cst.FunctionDef) and s.name.value == "__getitem__"
        ),
        None,
    )
    if getitem is None:
        return False
    attributes: set[str] = set()
    for node in descendants(getitem.body):
        if isinstance(node, cst.Call):
            if not (isinstance(node.func, cst.Name) and node.func.value in _PURE_CALLS):
                return False
        elif isinstance(node, (cst.FunctionDef, cst.Lambda, cst.Yield, cst.Await)):
            return False
        elif isinstance(node, cst.Attribute):
            if not (isinstance(node.value, cst.Name) and node.value.value == "self"):
                return False
            attributes.add(node.attr.value)
    if not attributes:
        return False
    for attr in attributes:
        assignments = [a for a in facts.attribute_assignments.get(attr, ()) if a.class_def is cls]
        if not assignments or not all(
            _tensor_value(facts, a.value, a.scope, depth + 1, (call, scope)) for a in assignments
        ):
            return False
    return True


def _tensor_value(
    facts: FileFacts,
    expr: cst.BaseExpression,
    scope: Scope,
    depth: int,
    instance: tuple[cst.Call, Scope],
) -> bool:
    """`expr` (an attribute's value in the class) is a tensor or an array in memory:
    created, converted, indexed, or a parameter of `__init__` that `instance` fills
    with one."""
    if depth > _MAX_DEPTH:
        return False
    if isinstance(expr, cst.Subscript):
        return _tensor_value(facts, expr.value, scope, depth + 1, instance)
    if isinstance(expr, cst.Call):
        if resolves_to(expr.func, scope, TENSOR_CREATORS | _MORE_TENSORS) or (
            resolves_to(expr.func, scope, NUMPY_ARRAYS) and not _memory_mapped(expr)
        ):
            return True
        func = expr.func
        if isinstance(func, cst.Attribute) and func.attr.value in _TENSOR_METHODS:
            return _tensor_value(facts, func.value, scope, depth + 1, instance)
        return False
    if not isinstance(expr, cst.Name):
        return False
    bindings = scope.lookup(expr.value)
    if not bindings:
        return False
    for binding in bindings:
        if binding.kind is BindingKind.IMPORT or binding.scope is None:
            return False
        node = binding.node
        if isinstance(node, cst.Param):
            owner = binding.scope.node
            if not isinstance(owner, cst.FunctionDef) or owner.name.value != "__init__":
                return False
            positional = [*owner.params.posonly_params, *owner.params.params]
            index = next((i for i, p in enumerate(positional) if p is node), None)
            call, at = instance
            value = argument_for(call, node.name.value, index, 1)
            if value is None or not _in_memory(facts, value, at, depth + 1, displays=False):
                return False
        elif binding.value is None or not _tensor_value(
            facts, binding.value, binding.scope, depth + 1, instance
        ):
            return False
    return True
