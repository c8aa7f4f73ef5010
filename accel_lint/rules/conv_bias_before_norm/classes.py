"""The torch classes ACL201 reasons about, by qualified name: the convolutions that
carry a bias, the batch and instance norms whose mean subtraction cancels it, and
the containers (`nn.Sequential`, `OrderedDict`) that put one right after the other.
Names resolve through imports, never by spelling; `SPELLINGS` is only the cheap
pre-filter that skips calls which cannot possibly resolve to one of these."""

from __future__ import annotations

import libcst as cst

from accel_lint.names import Scope, qualified_names

CONV_CLASSES = (
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "ConvTranspose3d",
)
_NORM_CLASSES = {
    "batchnorm": ("BatchNorm1d", "BatchNorm2d", "BatchNorm3d", "SyncBatchNorm"),
    "instancenorm": ("InstanceNorm1d", "InstanceNorm2d", "InstanceNorm3d"),
}
CONV = frozenset(
    f"{module}.{cls}"
    for module in ("torch.nn", "torch.nn.modules", "torch.nn.modules.conv")
    for cls in CONV_CLASSES
)
NORM = frozenset(
    f"{module}.{cls}"
    for file, classes in _NORM_CLASSES.items()
    for module in ("torch.nn", "torch.nn.modules", f"torch.nn.modules.{file}")
    for cls in classes
)
SEQUENTIAL = frozenset(
    {"torch.nn.Sequential", "torch.nn.modules.Sequential", "torch.nn.modules.container.Sequential"}
)
SEQUENTIAL_INIT = frozenset(f"{name}.__init__" for name in SEQUENTIAL)
ORDERED_DICT = frozenset({"collections.OrderedDict", "typing.OrderedDict"})
ISINSTANCE = frozenset({"builtins.isinstance"})
# The last name a call of a conv, a norm, a Sequential or an OrderedDict spells.
SPELLINGS = frozenset(
    {*CONV_CLASSES, *(c for cs in _NORM_CLASSES.values() for c in cs)}
    | {"Sequential", "OrderedDict", "__init__"}
)
TYPE = frozenset({"builtins.type"})


def short(names: frozenset[str]) -> str:
    return sorted(names)[0].rsplit(".", 1)[-1]


def resolves(expr: cst.BaseExpression, scope: Scope, targets: frozenset[str]) -> bool:
    names = qualified_names(expr, scope)
    return bool(names) and names <= targets
