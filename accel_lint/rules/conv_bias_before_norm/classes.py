"""The torch classes ACL201 reasons about, by qualified name: the convolutions that
carry a bias, the batch and instance norms whose mean subtraction cancels it, and
the containers (`nn.Sequential`, `OrderedDict`) that put one right after the other.
Names resolve through imports, never by spelling; `SPELLINGS` is only the cheap
pre-filter that skips calls which cannot possibly resolve to one of these."""

from __future__ import annotations

import libcst as cst

from accel_lint.names import Scope, qualified_names
from accel_lint.torch_api import (
    BATCH_NORM,
    BATCH_NORM_CLASSES,
    CONV_CLASSES,
    INSTANCE_NORM,
    INSTANCE_NORM_CLASSES,
    SEQUENTIAL,
)

NORM = BATCH_NORM | INSTANCE_NORM
SEQUENTIAL_INIT = frozenset(f"{name}.__init__" for name in SEQUENTIAL)
ORDERED_DICT = frozenset({"collections.OrderedDict", "typing.OrderedDict"})
ISINSTANCE = frozenset({"builtins.isinstance"})
# The last name a call of a conv, a norm, a Sequential or an OrderedDict spells.
SPELLINGS = frozenset(
    {*CONV_CLASSES, *BATCH_NORM_CLASSES, *INSTANCE_NORM_CLASSES}
    | {"Sequential", "OrderedDict", "__init__"}
)
TYPE = frozenset({"builtins.type"})


def short(names: frozenset[str]) -> str:
    return sorted(names)[0].rsplit(".", 1)[-1]


def resolves(expr: cst.BaseExpression, scope: Scope, targets: frozenset[str]) -> bool:
    names = qualified_names(expr, scope)
    return bool(names) and names <= targets
