"""Reads of `.bias` that `bias=False` would break. After the fix a conv's bias is
None, so an unguarded `m.bias.data.fill_(0)` would raise. A read is harmless when
it is checked against None, reads a module's own bias or a command-line option,
or its receiver is known not to be a conv (another torch module, or inside an
`isinstance`/`type`/class-name test that no conv passes, as in the DCGAN tutorial's
`weights_init`). A read whose receiver is a known conv blocks that conv's fix; any
other unexplained read blocks every fix in the file."""

from __future__ import annotations

from collections.abc import Iterator

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts import FileFacts, Guard
from accel_lint.names import LOCAL, Scope, assigned_value, qualified_names
from accel_lint.rules.conv_bias_before_norm.classes import ISINSTANCE, TYPE, resolves
from accel_lint.rules.conv_bias_before_norm.collected import Collected
from accel_lint.rules.conv_bias_before_norm.syntax import is_none, is_self, string
from accel_lint.torch_api import CONV_CLASSES


def bias_read_blockers(
    seen: Collected, facts: FileFacts
) -> tuple[dict[cst.Call, cst.Attribute], cst.Attribute | None]:
    """Reads of a bias that would get None after the fix and are not checked for it:
    per conv when the receiver is known, else (first such read) for every conv."""
    per_conv: dict[cst.Call, cst.Attribute] = {}
    anywhere: cst.Attribute | None = None
    for read, scope, guards, cls in seen.bias_reads:
        receiver = read.value
        if read in seen.none_compared or _checked_not_none(receiver, guards):
            continue
        if is_self(receiver) or (
            isinstance(receiver, cst.Name) and receiver.value in facts.args_names
        ):
            continue  # a module's own bias parameter; a command-line option
        built = seen.built_by(receiver, scope, cls)
        if built is not None:
            ctor = seen.ctors.get(built[0])
            if ctor is not None and ctor.conv:
                per_conv.setdefault(ctor.call, read)
                continue
            names = qualified_names(built[0].func, scope)
            if names and LOCAL not in names and all(n.startswith("torch.") for n in names):
                continue  # another torch module: not a conv
        if _known_not_conv(receiver, guards, scope):
            continue
        if anywhere is None:
            anywhere = read
    return per_conv, anywhere


def _conjuncts(test: cst.BaseExpression) -> Iterator[cst.BaseExpression]:
    if isinstance(test, cst.BooleanOperation) and isinstance(test.operator, cst.And):
        yield from _conjuncts(test.left)
        yield from _conjuncts(test.right)
    else:
        yield test


def _bias_compared(test: cst.BaseExpression, receiver: str, operator: type[cst.CSTNode]) -> bool:
    """`<receiver>.bias <operator> None` (or `getattr(<receiver>, "bias", None)`)."""
    if not (isinstance(test, cst.Comparison) and len(test.comparisons) == 1):
        return False
    target = test.comparisons[0]
    if not (isinstance(target.operator, operator) and is_none(target.comparator)):
        return False
    left = test.left
    if isinstance(left, cst.Attribute):
        return left.attr.value == "bias" and code_for(left.value) == receiver
    return (
        isinstance(left, cst.Call)
        and isinstance(left.func, cst.Name)
        and left.func.value == "getattr"
        and len(left.args) >= 2
        and code_for(left.args[0].value) == receiver
        and string(left.args[1].value) == "bias"
    )


def _checked_not_none(receiver: cst.BaseExpression, guards: tuple[Guard, ...]) -> bool:
    """Inside `if <receiver>.bias is not None:` (or after `if ... is None: continue`)."""
    text = code_for(receiver)
    for test, positive in guards:
        if positive and any(_bias_compared(c, text, cst.IsNot) for c in _conjuncts(test)):
            return True
        if not positive and _bias_compared(test, text, cst.Is):
            return True
    return False


def _known_not_conv(receiver: cst.BaseExpression, guards: tuple[Guard, ...], scope: Scope) -> bool:
    """Inside `if isinstance(m, <torch classes that are not convs>):` or `type(m) == X`."""
    text = code_for(receiver)
    for test, positive in guards:
        if not positive:
            continue
        for conjunct in _conjuncts(test):
            classes: cst.BaseExpression | None = None
            if (
                isinstance(conjunct, cst.Call)
                and len(conjunct.args) == 2
                and resolves(conjunct.func, scope, ISINSTANCE)
                and code_for(conjunct.args[0].value) == text
            ):
                classes = conjunct.args[1].value
            elif (
                isinstance(conjunct, cst.Comparison)
                and len(conjunct.comparisons) == 1
                and isinstance(conjunct.comparisons[0].operator, (cst.Equal, cst.Is))
                and isinstance(conjunct.left, cst.Call)
                and resolves(conjunct.left.func, scope, TYPE)
                and len(conjunct.left.args) == 1
                and code_for(conjunct.left.args[0].value) == text
            ):
                classes = conjunct.comparisons[0].comparator
            if classes is not None and _torch_classes_without_convs(classes, scope):
                return True
            if _tests_class_name_without_convs(conjunct, text, scope):
                return True
    return False


def _tests_class_name_without_convs(test: cst.BaseExpression, receiver: str, scope: Scope) -> bool:
    """`classname.find("BatchNorm") != -1`, `"Norm" in classname`, `classname == "Linear"`
    or `.startswith(...)` on the receiver's class name, with a text no conv's name holds
    (the DCGAN tutorial's `weights_init`)."""
    subject: cst.BaseExpression | None = None
    text: str | None = None
    if isinstance(test, cst.Comparison) and len(test.comparisons) == 1:
        operator = test.comparisons[0].operator
        other = test.comparisons[0].comparator
        left = test.left
        if (
            isinstance(left, cst.Call)
            and isinstance(left.func, cst.Attribute)
            and left.func.attr.value == "find"
            and len(left.args) == 1
            and (
                (isinstance(operator, cst.NotEqual) and code_for(other) == "-1")
                or (isinstance(operator, cst.GreaterThanEqual) and code_for(other) == "0")
            )
        ):
            subject, text = left.func.value, string(left.args[0].value)
        elif isinstance(operator, cst.In):
            subject, text = other, string(left)
        elif isinstance(operator, cst.Equal):
            subject, text = left, string(other)
    elif (
        isinstance(test, cst.Call)
        and isinstance(test.func, cst.Attribute)
        and test.func.attr.value == "startswith"
        and len(test.args) == 1
    ):
        subject, text = test.func.value, string(test.args[0].value)
    if subject is None or not text or any(text in name for name in CONV_CLASSES):
        return False
    if isinstance(subject, cst.Name):
        value = assigned_value(subject, scope)
        if value is None:
            return False
        subject = value
    return _class_name_of(subject, scope) == receiver


def _class_name_of(expr: cst.BaseExpression, scope: Scope) -> str | None:
    """The receiver whose class name `expr` is: `m.__class__.__name__`, `type(m).__name__`."""
    if not (isinstance(expr, cst.Attribute) and expr.attr.value == "__name__"):
        return None
    owner = expr.value
    if isinstance(owner, cst.Attribute) and owner.attr.value == "__class__":
        return code_for(owner.value)
    if isinstance(owner, cst.Call) and resolves(owner.func, scope, TYPE) and len(owner.args) == 1:
        return code_for(owner.args[0].value)
    return None


def _torch_classes_without_convs(expr: cst.BaseExpression, scope: Scope) -> bool:
    items = [e.value for e in expr.elements] if isinstance(expr, cst.Tuple) else [expr]
    for item in items:
        names = qualified_names(item, scope)
        if not names or LOCAL in names:
            return False
        for name in names:
            short = name.rsplit(".", 1)[-1]
            # nn.Module and the conv bases (_ConvNd) include convs
            if not name.startswith("torch.") or "Conv" in short or short == "Module":
                return False
    return True
