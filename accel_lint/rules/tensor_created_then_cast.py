"""ACL212 tensor-created-then-cast: `torch.zeros(n).half()`, `torch.arange(t).to(
torch.float16)`: a tensor built in one dtype, then copied into another. Page:
rules/ACL212.md

The fix passes `dtype=` to the creator. It is offered only where the values built
directly in the new dtype are bitwise the ones the cast produced: zeros, ones and
`eye` (0 and 1 exist in every dtype), `empty` (no values), `full` with an integer or
boolean fill, `arange` over integers (no float literal, no step unless every argument
is an integer literal), and `tensor` of a display of integers (or bools), or of any
data cast with `.float()`. Random draws, `linspace` and float data are computed in the
new dtype, not rounded from float32, and get no fix.
"""

from __future__ import annotations

import libcst as cst

from accel_lint.edits import add_keyword, code_for, expression
from accel_lint.names import Scope, qualified_names, spelling_for
from accel_lint.rule import Equivalence, Fix, FixSafety, Rule, Verification
from accel_lint.torch_api import CAST_CREATORS, CAST_METHODS, DTYPES, SET_DEFAULT_DTYPE
from accel_lint.walk import all_children

_CREATORS = CAST_CREATORS
# creators whose result is float32 (the default dtype) whatever their arguments:
# `.float()` of it returns the tensor itself, with no copy to save
_FLOAT_BY_DEFAULT = frozenset(
    f"torch.{n}" for n in ("zeros", "ones", "rand", "randn", "empty", "eye", "linspace")
)
_ZERO_ONE = frozenset(f"torch.{n}" for n in ("zeros", "ones", "empty", "eye"))
_FLOAT32 = "torch.float32"
_INT64 = "torch.int64"
_BLOCKERS = {
    "out": "`out=` writes into an existing tensor",
    "requires_grad": (
        "with `requires_grad=True` the created tensor is the leaf and the cast one is not: "
        "creating it in the new dtype changes which tensor gets gradients"
    ),
}


class TensorCreatedThenCast(Rule):
    code = "ACL212"
    name = "tensor-created-then-cast"
    summary = "Tensor created and then cast to another dtype (pass dtype= instead)"
    fix_safety = FixSafety.SAFE
    verification = Verification(Equivalence.EXACT)

    def finish(self) -> None:
        self._default_dtype_set: bool | None = None
        for method in (*CAST_METHODS, "to"):
            for site in self.facts.method_calls(method):
                func = site.node.func
                assert isinstance(func, cst.Attribute)
                creator = func.value
                if not isinstance(creator, cst.Call):
                    continue
                names = qualified_names(creator.func, site.scope)
                if not names or not names <= _CREATORS:
                    continue
                self._check(site.node, creator, min(names), method, site.scope)

    def _check(
        self, cast: cst.Call, creator: cst.Call, qualified: str, method: str, scope: Scope
    ) -> None:
        if any(a.keyword is not None and a.keyword.value == "dtype" for a in creator.args):
            return  # built in a dtype chosen on purpose, then converted
        if any(a.star for a in creator.args):
            return  # a `**kwargs` may pass `dtype=`
        target = self._target(cast, method, scope)
        if target is None:
            return
        dtype_expr, dtype, needed = target
        if dtype is None:
            return  # `.to(x.dtype)`: may be the dtype the tensor already has
        built = self._built_dtype(creator, qualified, scope)
        if built is None or built == dtype:
            return  # the dtype it already has, as far as the file shows: no copy to save
        short = qualified.rsplit(".", 1)[1]
        message = (
            f"`torch.{short}(...)` builds the tensor in its default dtype, then "
            f"`.{method}({code_for(dtype_expr) if method == 'to' else ''})` copies it into "
            f"another: create it with `dtype={code_for(dtype_expr)}`"
        )
        reason = _blocker(creator) or _inexact(creator, qualified, dtype)
        if reason is not None:
            self.report(creator, message, no_fix_reason=reason)
            return
        fix = Fix(
            f"Create the tensor with `dtype={code_for(dtype_expr)}`",
            {cast: add_keyword(creator, "dtype", dtype_expr)},
            (needed,) if needed else (),
        )
        self.report(creator, message, fix)

    def _target(
        self, cast: cst.Call, method: str, scope: Scope
    ) -> tuple[cst.BaseExpression, str | None, str | None] | None:
        """The dtype the cast converts to (its expression, its canonical name when known,
        and an import the expression needs), or None when the call is not a plain dtype
        conversion."""
        if method != "to":
            if cast.args:
                return None  # `.float(memory_format=...)`
            name = CAST_METHODS[method]
            spelled, needed = spelling_for(name, scope)
            return expression(spelled), name, needed
        if len(cast.args) != 1:
            return None  # a device too (ACL203's), or `non_blocking=`, `copy=`
        arg = cast.args[0]
        if arg.star or (arg.keyword is not None and arg.keyword.value != "dtype"):
            return None
        names = qualified_names(arg.value, scope)
        known = {DTYPES[n] for n in names if n in DTYPES} if names else set()
        if known and len(known) == 1 and names is not None and len(names) == len(known):
            return arg.value, known.pop(), None
        if isinstance(arg.value, cst.Attribute) and arg.value.attr.value == "dtype":
            return arg.value, None, None  # `.to(x.dtype)`: a dtype, unknown here
        return None

    def _built_dtype(self, creator: cst.Call, qualified: str, scope: Scope) -> str | None:
        """The dtype the creator builds without `dtype=`, or None when the file does not
        show it (data of unknown type, a changed default dtype)."""
        positional = [a.value for a in creator.args if a.keyword is None]
        floating = None if self._sets_default_dtype() else _FLOAT32
        if qualified in _FLOAT_BY_DEFAULT:
            return floating
        if qualified == "torch.arange":
            values = [*positional, *(a.value for a in creator.args if a.keyword is not None)]
            numbers = [v for v in values if not isinstance(v, cst.Name) or v.value != "None"]
            return floating if any(_has_float(v) for v in numbers) else _INT64
        if qualified == "torch.full":
            fill = _keyword(creator, "fill_value") or (
                positional[1] if len(positional) > 1 else None
            )
            if fill is None:
                return None
            if _boolean(fill):
                return "torch.bool"
            if _integer(fill):
                return _INT64
            return floating if isinstance(_unsigned(fill), cst.Float) else None
        if qualified == "torch.tensor":
            data = positional[0] if positional else _keyword(creator, "data")
            if data is None:
                return None
            if _integer_display(data):
                return _INT64 if not _boolean_display(data) else "torch.bool"
            if _float_display(data):
                return floating
            if self._numpy_value(data, scope, 0):
                return "numpy"  # its own dtype, kept: any cast copies
        return None

    def _numpy_value(self, expr: cst.BaseExpression, scope: Scope, depth: int) -> bool:
        """`expr` is a numpy array the file built: a numpy call (also subscripted:
        `np.load(path)["mu"]`), or a name bound only to one."""
        if depth > 3:
            return False
        if isinstance(expr, cst.Subscript):
            return self._numpy_value(expr.value, scope, depth + 1)
        if isinstance(expr, cst.Call):
            names = qualified_names(expr.func, scope)
            return bool(names) and all(n.startswith("numpy.") for n in names)
        if isinstance(expr, cst.Name):
            bindings = scope.lookup(expr.value) or []
            return bool(bindings) and all(
                b.value is not None
                and b.scope is not None
                and isinstance(b.node, (cst.Assign, cst.AnnAssign))
                and self._numpy_value(b.value, b.scope, depth + 1)
                for b in bindings
            )
        return False

    def _sets_default_dtype(self) -> bool:
        if self._default_dtype_set is None:
            self._default_dtype_set = bool(self.facts.calls_resolving_to(SET_DEFAULT_DTYPE))
        return self._default_dtype_set


def _blocker(creator: cst.Call) -> str | None:
    for arg in creator.args:
        if arg.keyword is not None and arg.keyword.value in _BLOCKERS:
            value = arg.value
            if isinstance(value, cst.Name) and value.value in ("False", "None"):
                continue
            return _BLOCKERS[arg.keyword.value]
    return None


def _inexact(creator: cst.Call, qualified: str, dtype: str | None) -> str | None:
    """Why values created in the new dtype may differ from the cast ones, or None."""
    positional = [a.value for a in creator.args if a.keyword is None]
    if qualified in _ZERO_ONE:
        return None
    if qualified == "torch.full":
        fill = _keyword(creator, "fill_value") or (positional[1] if len(positional) > 1 else None)
        if fill is not None and (_integer(fill) or _boolean(fill)):
            return None
        return "a fill value that is not an integer literal may round differently in the new dtype"
    if qualified == "torch.arange":
        values = [*positional, *(a.value for a in creator.args if a.keyword is not None)]
        if all(_integer(v) for v in values):
            return None
        if (
            len(positional) <= 2
            and _keyword(creator, "step") is None
            and not any(isinstance(v, cst.Float) for v in values)
        ):
            return None  # integer steps from an integer start: integers in any dtype
        return "with a step that may be fractional the values are computed in the new dtype"
    if qualified == "torch.tensor":
        data = positional[0] if positional else _keyword(creator, "data")
        if data is not None and _integer_display(data):
            return None
        if dtype == _FLOAT32:
            return None  # any data rounded once to float32, as the cast did
        return "data converted straight to the new dtype may round differently than through float32"
    return "drawn or computed in the new dtype, the values differ from the cast ones"


def _keyword(call: cst.Call, name: str) -> cst.BaseExpression | None:
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return arg.value
    return None


def _integer(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        expr = expr.expression
    return isinstance(expr, cst.Integer)


def _boolean(expr: cst.BaseExpression) -> bool:
    return isinstance(expr, cst.Name) and expr.value in ("True", "False")


def _unsigned(expr: cst.BaseExpression) -> cst.BaseExpression:
    if isinstance(expr, cst.UnaryOperation) and isinstance(expr.operator, cst.Minus):
        return expr.expression
    return expr


def _has_float(expr: cst.BaseExpression) -> bool:
    """A float literal anywhere in `expr` (`0.5`, `n * 1.0`)."""
    stack: list[cst.CSTNode] = [expr]
    while stack:
        node = stack.pop()
        if isinstance(node, cst.Float):
            return True
        stack.extend(all_children(node))
    return False


def _boolean_display(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _boolean_display(e.value) for e in expr.elements)
    return _boolean(expr)


def _float_display(expr: cst.BaseExpression) -> bool:
    """A display of numbers with at least one float literal (torch builds float32)."""
    if isinstance(expr, (cst.List, cst.Tuple)):
        return (
            bool(expr.elements)
            and all(isinstance(e, cst.Element) and _number_display(e.value) for e in expr.elements)
            and _has_float(expr)
        )
    return isinstance(_unsigned(expr), cst.Float)


def _number_display(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return all(isinstance(e, cst.Element) and _number_display(e.value) for e in expr.elements)
    return isinstance(_unsigned(expr), (cst.Integer, cst.Float))


def _integer_display(expr: cst.BaseExpression) -> bool:
    if isinstance(expr, (cst.List, cst.Tuple)):
        return bool(expr.elements) and all(
            isinstance(e, cst.Element) and _integer_display(e.value) for e in expr.elements
        )
    return _integer(expr) or _boolean(expr)
