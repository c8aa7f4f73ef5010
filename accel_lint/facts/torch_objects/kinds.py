"""Whose object is it: which packages build torch's modules and optimizers, and which
callables build objects that are clearly not torch's (the standard library's, and
other libraries' optimizers and engines whose own `zero_grad` takes no
`set_to_none`). A receiver is only flagged or rewritten when its builder is not in
the second group: calling `zero_grad(set_to_none=True)` on those raises TypeError.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from enum import Enum

from accel_lint.names import LOCAL

# Packages of the PyTorch project whose objects are torch modules and optimizers.
TORCH_FAMILY = ("torch", "torchvision", "torchaudio", "torchtext")

# Callables of other libraries whose objects define their own `zero_grad` without a
# `set_to_none` parameter (passing it raises TypeError), read in their sources:
# apex's fused optimizers (`zero_grad(self)`, driven by their `set_grad_none` option)
# and FP16_Optimizer (`zero_grad(self, set_grads_to_None=...)`), DeepSpeed's engine
# (what `deepspeed.initialize` returns) and fused optimizers, horovod's
# `DistributedOptimizer` and fairseq's optimizers and trainer (`zero_grad(self)`).
# Everything else imported is unknown: `zero_grad(set_to_none=...)` is torch's API,
# and the wrappers that others build around torch (accelerate, Lightning, timm's
# factories, a project's own `utils.smart_optimizer`) forward it.
_OWN_ZERO_GRAD_BY_MODULE = {
    "apex.optimizers": (
        "FusedSGD",
        "FusedAdam",
        "FusedNovoGrad",
        "FusedLAMB",
        "FusedAdagrad",
        "FP16_Optimizer",
    ),
    "apex.optimizers.fused_sgd": ("FusedSGD",),
    "apex.optimizers.fused_adam": ("FusedAdam",),
    "apex.optimizers.fused_novograd": ("FusedNovoGrad",),
    "apex.optimizers.fused_lamb": ("FusedLAMB",),
    "apex.optimizers.fused_adagrad": ("FusedAdagrad",),
    "apex.optimizers.fp16_optimizer": ("FP16_Optimizer",),
    "apex.fp16_utils": ("FP16_Optimizer",),
    "apex.fp16_utils.fp16_optimizer": ("FP16_Optimizer",),
    "apex.contrib.optimizers": ("FusedLAMB", "FP16_Optimizer"),
    "apex.contrib.optimizers.fused_lamb": ("FusedLAMB",),
    "apex.contrib.optimizers.fp16_optimizer": ("FP16_Optimizer",),
    "deepspeed": ("initialize", "DeepSpeedEngine"),
    "deepspeed.runtime.engine": ("DeepSpeedEngine",),
    "deepspeed.ops.adam": ("FusedAdam",),
    "deepspeed.ops.adam.fused_adam": ("FusedAdam",),
    "deepspeed.ops.lion": ("FusedLion",),
    "deepspeed.ops.lion.fused_lion": ("FusedLion",),
    "horovod.torch": ("DistributedOptimizer",),
    "horovod.torch.optimizer": ("DistributedOptimizer",),
    "fairseq.trainer": ("Trainer",),
}
_OWN_ZERO_GRAD = frozenset(
    f"{module}.{name}" for module, names in _OWN_ZERO_GRAD_BY_MODULE.items() for name in names
)
_OWN_ZERO_GRAD_PACKAGES = ("fairseq.optim",)


class Kind(Enum):
    TORCH = "torch"  # built by torch, or by a class of this file that subclasses torch's
    OTHER = "other"  # clearly not torch's: see `kind_of_names` and `class_kind`
    UNKNOWN = "unknown"  # a parameter, an attribute, another library's object or factory


def in_family(name: str, packages: Sequence[str]) -> bool:
    return any(name == p or name.startswith(p + ".") for p in packages)


_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ("abc", "builtins", "typing")))


def _in_stdlib(name: str) -> bool:
    return name.split(".")[0] in _STDLIB


def not_torchs(name: str) -> bool:
    """Built by the standard library, or by a callable whose objects have a
    `zero_grad` of their own that takes no `set_to_none`."""
    return _in_stdlib(name) or name in _OWN_ZERO_GRAD or in_family(name, _OWN_ZERO_GRAD_PACKAGES)


def kind_of_names(names: frozenset[str]) -> Kind:
    if not names or LOCAL in names:
        return Kind.UNKNOWN
    if all(in_family(n, TORCH_FAMILY) for n in names):
        return Kind.TORCH
    if all(not_torchs(n) for n in names):
        return Kind.OTHER
    return Kind.UNKNOWN
