"""What the runner changes in torch when the script imports it: seeds and threads,
PyTorch's global optimizer step hooks, and thin wrappers that record what the
judges need (losses, sampler orders, saves, clipping), none of which changes
what the script computes."""

from __future__ import annotations

import contextlib
import hashlib
import os
import random
import sys
from collections.abc import Iterator
from typing import Any

from .base import local
from .imports import deterministic_inductor
from .loaders import Loaders
from .models import Models
from .observe import Observer
from .state import Runner


def install(runner: Runner, torch: Any) -> None:
    """When the script has imported torch: set up this process's runner in it."""
    if runner.torch is not None:
        return
    runner.torch = torch
    runner.models = Models(torch)
    runner.loaders = Loaders(runner)
    cfg = runner.cfg
    runner.defaults = _backend_flags(torch)
    with contextlib.suppress(RuntimeError):
        torch.set_num_threads(cfg["threads"])
    _seed_all(torch, cfg["seed"] + cfg["seed_offset"])
    if cfg["seed_offset"]:
        _offset_seeds(torch, cfg["seed_offset"], runner.pid)
    if runner.equiv:
        # warn_only: an op without a deterministic kernel must not crash the script;
        # two identical runs still tell whether the script is deterministic. The C++
        # switch is what use_deterministic_algorithms() sets; its inductor flag is
        # set when inductor loads (see `imports.deterministic_inductor`).
        torch._C._set_deterministic_algorithms(True, warn_only=True)
        if "torch._inductor.config" in sys.modules:
            deterministic_inductor(sys.modules["torch._inductor.config"])
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
    from torch.optim import optimizer as optim_module

    optim_module.register_optimizer_step_pre_hook(runner.pre_step)
    optim_module.register_optimizer_step_post_hook(runner.post_step)
    _wrap_optimizer_init(runner, torch)
    assert runner.loaders is not None
    runner.loaders.install(torch)
    if runner.equiv:
        _wrap_grad_scaler(runner, torch)
        _wrap_backward(runner, torch)
        _wrap_sampler(runner, torch)
        _wrap_save(runner, torch)
        _wrap_clip(runner, torch)
        _wrap_logits_loss(runner, torch)
        _wrap_probability_loss(runner, torch)
        _count_ddp_syncs(runner, torch)
    if runner.probe:
        runner.observer = Observer(runner, torch)


def _backend_flags(torch: Any) -> dict[str, object]:
    """The flags a script may set, before the equivalence runs set theirs."""
    flags: dict[str, object] = {
        "cudnn.benchmark": torch.backends.cudnn.benchmark,
        "cudnn.deterministic": torch.backends.cudnn.deterministic,
        "deterministic algorithms": torch.are_deterministic_algorithms_enabled(),
        "float32 matmul precision": torch.get_float32_matmul_precision(),
    }
    with contextlib.suppress(Exception):
        flags["cudnn.allow_tf32"] = torch.backends.cudnn.allow_tf32
        flags["cuda.matmul.allow_tf32"] = torch.backends.cuda.matmul.allow_tf32
    return flags


def _seed_all(torch: Any, seed: int) -> None:
    random.seed(seed)
    try:
        import numpy

        numpy.random.seed(seed % 2**32)
    except ImportError:
        pass
    torch.manual_seed(seed)


def _offset_seeds(torch: Any, offset: int, main_pid: int) -> None:
    """Shift every global seed the script sets by `offset`, in this process only:
    forked DataLoader workers inherit the patch and must seed as usual."""

    def shifted(original: Any, modulo: int | None = None) -> Any:
        def seed(value: Any = None, *args: Any, **kwargs: Any) -> Any:
            if os.getpid() == main_pid and isinstance(value, int) and not isinstance(value, bool):
                value = value + offset
                if modulo is not None:
                    value %= modulo
            return original(value, *args, **kwargs)

        return seed

    torch.manual_seed = shifted(torch.manual_seed)
    torch.random.manual_seed = shifted(torch.random.manual_seed)
    torch.cuda.manual_seed = shifted(torch.cuda.manual_seed)
    torch.cuda.manual_seed_all = shifted(torch.cuda.manual_seed_all)
    random.seed = shifted(random.seed)
    try:
        import numpy

        numpy.random.seed = shifted(numpy.random.seed, 2**32)
    except ImportError:
        pass


def _wrap_optimizer_init(runner: Runner, torch: Any) -> None:
    original = torch.optim.Optimizer.__init__

    def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
        original(optimizer, *args, **kwargs)
        runner.on_optimizer_init(optimizer)

    torch.optim.Optimizer.__init__ = __init__


def _wrap_backward(runner: Runner, torch: Any) -> None:
    def recording(original: Any) -> Any:
        def backward(*args: Any, **kwargs: Any) -> Any:
            # Tensor.backward calls autograd.backward: record the outer call only
            if getattr(local, "inside", False):
                return original(*args, **kwargs)
            local.inside = True
            try:
                tensors = args[0] if args else kwargs.get("tensors")
                runner.on_backward(tensors)
                before = runner.project()
                result = original(*args, **kwargs)
                runner.after_backward(before)
                return result
            finally:
                local.inside = False

        backward.__doc__ = original.__doc__
        backward.__name__ = original.__name__
        return backward

    torch.Tensor.backward = recording(torch.Tensor.backward)
    torch.autograd.backward = recording(torch.autograd.backward)


def _wrap_grad_scaler(runner: Runner, torch: Any) -> None:
    """Tag `scaler.scale(loss)` with the loss so that its backward records the
    unscaled value the script computed, and keep the scaler (for clipping)."""
    # torch.amp.GradScaler (2.3+) is the base of torch.cuda.amp.GradScaler
    scaler_class = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
    original = scaler_class.scale

    def scale(scaler: Any, outputs: Any) -> Any:
        if not any(scaler is s for s in runner.scalers):
            runner.scalers.append(scaler)
        if scaler.is_enabled():
            runner.on_scale(scaler)
        result = original(scaler, outputs)
        if result is not outputs and isinstance(outputs, torch.Tensor):
            with contextlib.suppress(AttributeError, RuntimeError):
                result._accel_lint_unscaled = outputs
        return result

    scaler_class.scale = scale


def _wrap_sampler(runner: Runner, torch: Any) -> None:
    """Record the order each DistributedSampler hands out (for the invariant that
    later epochs are reshuffled)."""
    sampler_class = torch.utils.data.distributed.DistributedSampler
    original = sampler_class.__iter__

    def __iter__(sampler: Any) -> Iterator[Any]:
        indices = list(original(sampler))
        ordinal = runner.sampler_ids.setdefault(id(sampler), len(runner.sampler_ids))
        runner.samplers.append(
            {
                "sampler": ordinal,
                "epoch": getattr(sampler, "epoch", None),
                "step": runner.primary_steps(),
                "backward": len(runner.losses),
                "n": len(indices),
                "order": hashlib.sha256(repr(indices).encode()).hexdigest()[:16],
            }
        )
        return iter(indices)

    sampler_class.__iter__ = __iter__


def _count_ddp_syncs(runner: Runner, torch: Any) -> None:
    """Count DDP forward passes that arm the gradient all-reduce: DDP prepares the
    reducer when gradients are recorded and `require_backward_grad_sync` is on (off
    inside `no_sync()`), and the backward pass that follows all-reduces every bucket.
    Counted at the forward, which DDP runs in Python: its all-reduce runs in C++."""
    ddp_class = torch.nn.parallel.DistributedDataParallel
    original = ddp_class.forward

    def forward(ddp: Any, *args: Any, **kwargs: Any) -> Any:
        if torch.is_grad_enabled() and getattr(ddp, "require_backward_grad_sync", False):
            runner.ddp_syncs += 1
        return original(ddp, *args, **kwargs)

    forward.__doc__ = original.__doc__
    ddp_class.forward = forward


def _wrap_save(runner: Runner, torch: Any) -> None:
    """Record who saved what: path, rank, a hash of the content, and the state dicts
    in it held against the bare models."""
    original = torch.save

    def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(obj, f, *args, **kwargs)
        runner.on_save(obj, f)
        return result

    torch.save = save
    torch.serialization.save = save


def _wrap_clip(runner: Runner, torch: Any) -> None:
    """Record what each gradient clipping call sees (scaled or true gradients)."""
    utils = torch.nn.utils
    module = getattr(utils, "clip_grad", None)
    for name in ("clip_grad_norm_", "clip_grad_value_"):
        original = getattr(utils, name, None)
        if original is None:
            continue

        def clip(
            parameters: Any, *args: Any, _name: str = name, _original: Any = original, **kwargs: Any
        ) -> Any:
            params = [parameters] if isinstance(parameters, torch.Tensor) else list(parameters)
            runner.on_clip(_name, params)
            return _original(params, *args, **kwargs)

        clip.__doc__ = original.__doc__
        clip.__name__ = name
        setattr(utils, name, clip)
        if module is not None and getattr(module, name, None) is original:
            setattr(module, name, clip)


def _wrap_probability_loss(runner: Runner, torch: Any) -> None:
    """Record the dtype of the probabilities each `binary_cross_entropy` (and so each
    `nn.BCELoss`) sees: CPU autocast runs it on bfloat16 or float16 ones, where CUDA
    autocast refuses it."""
    functional = torch.nn.functional
    original = functional.binary_cross_entropy

    def binary_cross_entropy(input: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(input, torch.Tensor):
            runner.on_probability_loss(str(input.dtype).removeprefix("torch."))
        return original(input, *args, **kwargs)

    binary_cross_entropy.__doc__ = original.__doc__
    functional.binary_cross_entropy = binary_cross_entropy


def _wrap_logits_loss(runner: Runner, torch: Any) -> None:
    """Record each `binary_cross_entropy_with_logits` with binary cross-entropy on the
    sigmoid of the same logits, in float64 outside autocast: the loss the fix of a
    `binary_cross_entropy` on probabilities stands for."""
    functional = torch.nn.functional
    original = functional.binary_cross_entropy_with_logits
    on_probabilities = functional.binary_cross_entropy  # before it is wrapped

    def binary_cross_entropy_with_logits(input: Any, target: Any, *args: Any, **kwargs: Any) -> Any:
        result = original(input, target, *args, **kwargs)
        reference: float | None = None
        weight = kwargs.get("weight", args[0] if args else None)
        reduction = kwargs.get("reduction", "mean")
        plain = len(args) <= 1 and not (set(kwargs) - {"weight", "reduction"})
        if plain and isinstance(reduction, str):
            with (
                contextlib.suppress(RuntimeError, TypeError, ValueError),
                torch.no_grad(),
                torch.autocast(input.device.type, enabled=False),
            ):
                probs = torch.sigmoid(input.detach().double())
                w = weight.detach().double() if weight is not None else None
                ref = on_probabilities(
                    probs, target.detach().double(), weight=w, reduction=reduction
                )
                reference = float(ref.sum())
        runner.on_logits_loss(float(result.detach().double().sum()), reference)
        return result

    binary_cross_entropy_with_logits.__doc__ = original.__doc__
    functional.binary_cross_entropy_with_logits = binary_cross_entropy_with_logits
