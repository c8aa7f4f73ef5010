"""In which precision does the file train: its autocast regions (device, dtype, on or
off) and the other signs of a precision other than float32 (a GradScaler, apex's
amp, `.half()`, a float16 dtype, a default dtype). Built once per file
(`Precision.of(facts)`)."""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from accel_lint.facts.file import CallSite, FileFacts
from accel_lint.facts.literals import string_value
from accel_lint.facts.syntax import argument_for
from accel_lint.names import LOCAL, BindingKind, Scope, import_bindings, qualified_names
from accel_lint.torch_api import (
    AUTOCAST,
    CPU_AUTOCAST,
    CUDA_AUTOCAST,
    FLOAT32_DTYPES,
    GRAD_SCALER,
    HALF_DTYPES,
    NON_FLOAT32_CASTS,
    NON_FLOAT32_DTYPES,
    SET_DEFAULT_DTYPE,
)

# Libraries that run the model in a precision their configuration chooses.
_MIXED_PRECISION_LIBRARIES = ("apex", "deepspeed", "accelerate")
# A name that switches the precision: `fp16`, `args.use_amp`, `hp.fp16_run`, `bf16`,
# `half_precision`, `mixed_precision`.
_PRECISION_SWITCH = re.compile(
    r"(?:^|_)(?:fp16|bf16|amp|half|mixed_precision|autocast)(?:$|_)", re.IGNORECASE
)


@dataclass(frozen=True)
class Autocast:
    """An autocast call (context manager or decorator)."""

    site: CallSite
    device: str | None  # "cuda", "cpu", ...; None when computed (`device.type`)
    dtype: frozenset[str] | None  # qualified names of `dtype=`; None when absent
    enabled: bool | None  # None when a flag decides


class Precision:
    def __init__(self, facts: FileFacts) -> None:
        self.facts = facts
        self.autocasts = [_autocast(site, facts) for site in facts.calls_resolving_to(AUTOCAST)]

    @classmethod
    def of(cls, facts: FileFacts) -> Precision:
        return facts.shared(cls)

    def cuda_autocasts(self) -> list[Autocast]:
        """Autocasts that may be on for CUDA: on or decided by a flag, for `"cuda"` or
        for a device computed in a file that uses CUDA."""
        return [
            a
            for a in self.autocasts
            if a.enabled is not False
            and (a.device == "cuda" or (a.device is None and self.facts.touches_cuda))
        ]

    def half_cuda_autocasts(self) -> list[Autocast]:
        """CUDA autocasts in float16 (the default on CUDA) or bfloat16, or in a dtype
        chosen at run time that is not float32."""
        return [
            a
            for a in self.cuda_autocasts()
            if a.dtype is None or not a.dtype or not (a.dtype <= FLOAT32_DTYPES)
        ]

    def mentions_autocast(self) -> bool:
        """The file calls, passes or imports autocast (any device, on or off)."""
        if self.autocasts:
            return True
        for node, scope in self.facts.attributes_named("autocast"):
            if qualified_names(node, scope) & AUTOCAST:
                return True
        return any(t in AUTOCAST for t in import_bindings(self.facts.module_scope).values())

    def other_than_float32(self) -> bool:
        """Anything that says the model may not train in float32 alone: autocast, a
        GradScaler, apex/DeepSpeed/Accelerate (imported anywhere), `.half()` /
        `.bfloat16()` / `.double()`, a float16/bfloat16/float64 dtype, a changed
        default dtype, or a switch named for it (`args.fp16`, `use_amp`, `--bf16`)."""
        facts = self.facts
        if self.mentions_autocast():
            return True
        if facts.calls_resolving_to(GRAD_SCALER) or facts.calls_resolving_to(SET_DEFAULT_DTYPE):
            return True
        if any(facts.method_calls(m) for m in NON_FLOAT32_CASTS):
            return True
        for attr in ("float16", "half", "bfloat16", "float64", "double"):
            for node, scope in facts.attributes_named(attr):
                if qualified_names(node, scope) & NON_FLOAT32_DTYPES:
                    return True
        for binding in facts.all_bindings():
            if _PRECISION_SWITCH.search(binding.name):
                return True
            target = binding.target
            if binding.kind is BindingKind.IMPORT and target is not None:
                if target.split(".")[0] in _MIXED_PRECISION_LIBRARIES:
                    return True
                if target in NON_FLOAT32_DTYPES:
                    return True
        if any(_PRECISION_SWITCH.search(name) for name in facts.attribute_names()):
            return True
        return any(_PRECISION_SWITCH.search(option) for option in facts.argparse_options)


def _autocast(site: CallSite, facts: FileFacts) -> Autocast:
    call, scope = site.node, site.scope
    names = qualified_names(call.func, scope)
    if names <= CUDA_AUTOCAST or names <= CPU_AUTOCAST:
        # torch.cuda.amp.autocast(enabled=True, dtype=torch.float16, cache_enabled=True)
        device: str | None = "cuda" if names <= CUDA_AUTOCAST else "cpu"
        enabled_arg = argument_for(call, "enabled", 0, 0)
        dtype_arg = argument_for(call, "dtype", 1, 0)
    else:
        # torch.autocast(device_type, dtype=None, enabled=True, cache_enabled=None)
        device_arg = argument_for(call, "device_type", 0, 0)
        device = None
        if device_arg is not None:
            text = string_value(facts.literal_value(device_arg, scope))
            device = text.split(":")[0] if text is not None else None
        enabled_arg = argument_for(call, "enabled", 2, 0)
        dtype_arg = argument_for(call, "dtype", 1, 0)
    return Autocast(site, device, _dtype(dtype_arg, scope), _enabled(enabled_arg, facts, scope))


def _dtype(expr: cst.BaseExpression | None, scope: Scope) -> frozenset[str] | None:
    if expr is None or (isinstance(expr, cst.Name) and expr.value == "None"):
        return None
    names = qualified_names(expr, scope)
    if not names or LOCAL in names:
        return frozenset()  # chosen at run time
    return names if names <= NON_FLOAT32_DTYPES | FLOAT32_DTYPES | HALF_DTYPES else frozenset()


def _enabled(expr: cst.BaseExpression | None, facts: FileFacts, scope: Scope) -> bool | None:
    if expr is None:
        return True
    value = facts.literal_value(expr, scope)
    if isinstance(value, cst.Name) and value.value in ("True", "False"):
        return value.value == "True"
    return None
