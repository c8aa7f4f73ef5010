"""The runtime second opinion: what one short extra run of the original really does.

Installed in probe mode only (its hooks cost more than a timed run may carry).
It records where convolutions are built and whether one with a bias feeds a
norm directly, how gradients are reset (zero-filled tensors or None, by which
call), forwards in eval mode with gradient recording on, autocast and
GradScaler use, the backend flags, the optimizers' foreach/fused settings, and
runs torch's profiler pattern matcher pattern by pattern over the run (patterns
that only mean something on CUDA only when CUDA was used). Observations are
named after the rule that finds the same pattern in the source; the parent
matches them with the static findings.
"""

from __future__ import annotations

import contextlib
import os
import sys
import warnings
from collections.abc import Iterator
from typing import Any

from ..protocol import (
    PROFILER_PATTERNS,
    ObservationRecord,
    PatternHit,
    PatternResult,
    RuntimeRecord,
)
from .base import Host
from .models import optimizer_params
from .records import live_instances, user_frame

HERE = os.path.dirname(os.path.abspath(__file__))


class Observer:
    def __init__(self, runner: Host, torch: Any) -> None:
        self.runner = runner
        self.torch = torch
        self.torch_dir = os.path.dirname(torch.__file__) + os.sep
        self.skip = (self.torch_dir, HERE + os.sep)
        self.observations: list[ObservationRecord] = []
        self._noted: set[tuple[str, str, int]] = set()
        self.configuration: list[str] = []
        self.conv_sites: dict[int, tuple[str, int] | None] = {}
        self.conv_outputs: dict[int, Any] = {}
        self.depth = 0
        self.eval_forwards = 0  # top-level forwards in eval mode
        self.eval_with_grad = 0  # ... with gradient recording on
        self.autocasts: set[tuple[str, str, bool]] = set()
        self.keep_sites: set[tuple[str, int]] = set()  # zero_grad(set_to_none=False) calls
        self.manual_sites: set[tuple[str, int]] = set()  # zero_()/fill_() on gradients
        self.in_zero_grad = False
        self.grad_ptrs: set[int] = set()
        self.zero_filled = 0  # backward passes that found zero-filled gradients
        self.backwards = 0
        self.empty_cache_calls = 0
        self.script_set: dict[str, object] = {}  # backend flags the script itself set
        self.cuda = False
        self.profiler: Any = None
        self.profiled = False  # the profiler ran and was stopped
        self.profile_error: str | None = None
        self._install(torch)

    # -- installation -------------------------------------------------------------------

    def _install(self, torch: Any) -> None:
        nn = torch.nn
        observer = self
        conv_class = nn.modules.conv._ConvNd
        original_conv_init = conv_class.__init__

        def conv_init(module: Any, *args: Any, **kwargs: Any) -> None:
            original_conv_init(module, *args, **kwargs)
            observer.conv_sites[id(module)] = user_frame(observer.skip)

        conv_class.__init__ = conv_init
        self.norm_classes = (nn.modules.batchnorm._BatchNorm, nn.modules.instancenorm._InstanceNorm)
        nn.modules.module.register_module_forward_pre_hook(self._pre_forward)
        nn.modules.module.register_module_forward_hook(self._post_forward)
        self._wrap_zero_grad(torch.optim.Optimizer)
        self._wrap_zero_grad(nn.Module)
        for name in ("zero_", "fill_"):
            self._wrap_grad_reset(torch.Tensor, name)
        autocast_class = torch.amp.autocast_mode.autocast
        original_enter = autocast_class.__enter__

        def __enter__(context: Any) -> Any:
            observer.autocasts.add(
                (
                    str(getattr(context, "device", "")),
                    str(getattr(context, "fast_dtype", "")).replace("torch.", ""),
                    bool(getattr(context, "_enabled", True)),
                )
            )
            return original_enter(context)

        autocast_class.__enter__ = __enter__
        original_dp_init = nn.DataParallel.__init__

        def dp_init(module: Any, *args: Any, **kwargs: Any) -> None:
            original_dp_init(module, *args, **kwargs)
            observer.note(
                "data-parallel",
                user_frame(observer.skip),
                "torch.nn.DataParallel wraps a model: one process drives every device",
            )

        nn.DataParallel.__init__ = dp_init
        if hasattr(torch.cuda, "empty_cache"):
            original_empty = torch.cuda.empty_cache

            def empty_cache() -> None:
                observer.empty_cache_calls += 1
                original_empty()

            torch.cuda.empty_cache = empty_cache
        self._wrap_backward(torch)
        self._watch_flags(torch)

    def _watch_flags(self, torch: Any) -> None:
        """Record the backend flags the script sets (the equivalence runs set some of
        their own before the script runs: those must not be taken for the script's)."""
        observer = self
        cudnn = type(torch.backends.cudnn)
        for attr in ("benchmark", "deterministic", "allow_tf32"):
            original = cudnn.__dict__.get(attr)
            if original is None or not hasattr(original, "__set__"):
                continue
            setattr(cudnn, attr, _Watched(original, f"cudnn.{attr}", self.script_set))
        with contextlib.suppress(AttributeError):
            matmul: Any = type(torch.backends.cuda.matmul)
            original_setattr: Any = matmul.__setattr__

            def __setattr__(obj: Any, name: str, value: Any) -> None:
                observer.script_set[f"cuda.matmul.{name}"] = value
                original_setattr(obj, name, value)

            matmul.__setattr__ = __setattr__
        for function, name in (
            ("set_float32_matmul_precision", "float32 matmul precision"),
            ("use_deterministic_algorithms", "deterministic algorithms"),
        ):
            original_function = getattr(torch, function)

            def recording(
                value: Any,
                *args: Any,
                _name: str = name,
                _f: Any = original_function,
                **kwargs: Any,
            ) -> Any:
                observer.script_set[_name] = value
                return _f(value, *args, **kwargs)

            setattr(torch, function, recording)

    def _wrap_zero_grad(self, owner: Any) -> None:
        original = owner.zero_grad
        observer = self

        def zero_grad(obj: Any, set_to_none: bool = True) -> Any:
            if not set_to_none:
                site = user_frame(observer.skip)
                if site is not None:
                    observer.keep_sites.add(site)
            observer.in_zero_grad = True
            try:
                return original(obj, set_to_none)
            finally:
                observer.in_zero_grad = False

        owner.zero_grad = zero_grad

    def _wrap_grad_reset(self, tensor_class: Any, name: str) -> None:
        original = getattr(tensor_class, name)
        observer = self

        def reset(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            if not observer.in_zero_grad and observer.grad_ptrs:
                with contextlib.suppress(RuntimeError):
                    if tensor.data_ptr() in observer.grad_ptrs:
                        site = user_frame(observer.skip)
                        if site is not None:
                            observer.manual_sites.add(site)
            return original(tensor, *args, **kwargs)

        setattr(tensor_class, name, reset)

    def _wrap_backward(self, torch: Any) -> None:
        observer = self
        original = torch.Tensor.backward

        def backward(tensor: Any, *args: Any, **kwargs: Any) -> Any:
            observer.before_backward()
            return original(tensor, *args, **kwargs)

        torch.Tensor.backward = backward

    # -- events ---------------------------------------------------------------------

    def note(self, kind: str, site: tuple[str, int] | None, detail: str) -> None:
        key = (kind, site[0] if site else "", site[1] if site else 0)
        if key in self._noted:
            return
        self._noted.add(key)
        self.observations.append(
            {
                "kind": kind,
                "file": site[0] if site else None,
                "row": site[1] if site else None,
                "detail": detail,
                "notable": True,
            }
        )

    def start(self) -> None:
        """Profile from the first loader iteration or optimizer on (torch's
        DataLoader pattern needs to see the loader's `__iter__`)."""
        if self.profiler is not None or self.profile_error is not None:
            return
        if self.runner.primary_steps() >= self.runner.cfg["profile_steps"]:
            return
        torch = self.torch
        try:
            from torch.profiler import ProfilerActivity, profile

            activities = [ProfilerActivity.CPU]
            if torch.cuda.is_available():
                activities.append(ProfilerActivity.CUDA)
            with warnings.catch_warnings(), _without_lazy_inductor(torch):
                warnings.simplefilter("ignore")
                self.profiler = profile(activities=activities, record_shapes=True, with_stack=True)
                self.profiler.start()
        except Exception as exc:  # an old or stripped torch: the rest still works
            self.profiler = None
            self.profile_error = f"{type(exc).__name__}: {exc}"

    def _stop_profiler(self) -> None:
        if self.profiler is not None and not self.profiled:
            self.profiled = True
            with contextlib.suppress(Exception):
                self.profiler.stop()

    def _pre_forward(self, module: Any, args: Any) -> None:
        self.depth += 1
        torch = self.torch
        if self.depth == 1 and not module.training:
            self.eval_forwards += 1
            self.eval_with_grad += int(torch.is_grad_enabled())
        if self.depth == 1 and not module.training and torch.is_grad_enabled():
            self.note(
                "eval-without-no-grad",
                user_frame(self.skip),
                f"{type(module).__name__} runs in eval mode with gradient recording on: "
                "its forward builds an autograd graph nobody uses",
            )
        if isinstance(module, self.norm_classes) and args:
            conv = self.conv_outputs.get(id(args[0]))
            if conv is not None:
                self.note(
                    "conv-bias-before-norm",
                    self.conv_sites.get(id(conv)),
                    f"{type(conv).__name__} with a bias feeds {type(module).__name__} directly",
                )

    def _post_forward(self, module: Any, args: Any, output: Any) -> None:
        self.depth = max(0, self.depth - 1)
        if (
            isinstance(module, self.torch.nn.modules.conv._ConvNd)
            and module.bias is not None
            and isinstance(output, self.torch.Tensor)
        ):
            self.conv_outputs[id(output)] = module

    def before_backward(self) -> None:
        """Gradients that exist and are all zero before a backward pass were reset
        by filling them with zeros, not by setting them to None."""
        self.start()
        torch = self.torch
        self.backwards += 1
        grads = [
            p.grad for o in self.runner.built for p in optimizer_params(o) if p.grad is not None
        ]
        if not grads:
            return
        with torch.no_grad(), contextlib.suppress(RuntimeError, TypeError, NotImplementedError):
            if bool(torch.stack(torch._foreach_norm(grads)).eq(0).any()):
                self.zero_filled += 1

    def pre_step(self, optimizer: Any) -> None:
        if self.runner.primary is optimizer and self.runner.primary_steps() == 0:
            self._first_step()

    def post_step(self, steps: int) -> None:
        torch = self.torch
        if steps >= self.runner.cfg["profile_steps"]:
            self._stop_profiler()
        self.conv_outputs.clear()
        self.depth = 0
        self.grad_ptrs = {
            p.grad.data_ptr()
            for o in self.runner.built
            for p in optimizer_params(o)
            if p.grad is not None
        }
        if torch.is_anomaly_enabled():
            self.note(
                "debug-api-left-on",
                None,
                "anomaly detection is on during training: every backward pass checks for NaNs",
            )
        if self.empty_cache_calls >= steps > 1:
            self.note(
                "empty-cache-in-loop",
                None,
                f"torch.cuda.empty_cache() ran {self.empty_cache_calls} times in {steps} steps",
            )

    def flag(self, name: str) -> object:
        """A backend flag as the script has it: its own setting, else torch's default."""
        return self.script_set.get(name, self.runner.defaults.get(name))

    def _first_step(self) -> None:
        torch = self.torch
        self.cuda = bool(torch.cuda.is_available() and torch.cuda.is_initialized())
        names = [
            *self.runner.defaults,
            *(n for n in self.script_set if n not in self.runner.defaults),
        ]
        flags = [
            f"{name}={self.flag(name)!r}"
            + (" (set by the script)" if name in self.script_set else "")
            for name in names
        ]
        self.configuration.append("backends: " + ", ".join(flags))
        for optimizer in self.runner.built:
            group = optimizer.param_groups[0] if optimizer.param_groups else {}
            devices = sorted({p.device.type for p in optimizer_params(optimizer)})
            self.configuration.append(
                f"optimizer {type(optimizer).__name__}: foreach={group.get('foreach')}, "
                f"fused={group.get('fused')}, parameters on {', '.join(devices) or 'nothing'}"
            )
            if group.get("foreach") is False and "cuda" in devices:
                self.note(
                    "foreach-disabled",
                    None,
                    f"{type(optimizer).__name__} steps one tensor at a time (foreach=False) "
                    "on CUDA parameters",
                )
        deliberate = self.flag("cudnn.deterministic") or self.flag("deterministic algorithms")
        if self.cuda and not self.flag("cudnn.benchmark") and not deliberate:
            convs = bool(live_instances(torch.nn.modules.conv._ConvNd))
            if convs:
                self.note(
                    "cudnn-autotuner-off",
                    None,
                    "convolutions on CUDA with torch.backends.cudnn.benchmark off",
                )

    # -- the record ---------------------------------------------------------------------

    def record(self) -> RuntimeRecord:
        self._gradients()
        self._precision()
        patterns = self._patterns()
        self.configuration.append(
            "autocast: "
            + (
                ", ".join(
                    f"{device} {dtype}{'' if enabled else ' (disabled)'}"
                    for device, dtype, enabled in sorted(self.autocasts)
                )
                or "none"
            )
        )
        scalers = [s for s in self.runner.scalers if s.is_enabled()]
        self.configuration.append(
            "GradScaler: " + (", ".join(type(s).__name__ for s in scalers) or "none enabled")
        )
        self.configuration.append(
            f"evaluation: {self.eval_forwards} top-level forward(s) in eval mode before the "
            f"stop, {self.eval_with_grad} with gradient recording on"
        )
        return {
            "observations": self.observations,
            "configuration": self.configuration,
            "patterns": patterns,
            "cuda": self.cuda,
        }

    def _gradients(self) -> None:
        if not self.zero_filled:
            return
        detail = (
            f"{self.zero_filled} of {self.backwards} backward passes found the gradients "
            "zero-filled instead of None"
        )
        for site in sorted(self.keep_sites):
            self.note("zero-grad-keeps-tensors", site, detail + ": zero_grad(set_to_none=False)")
        for site in sorted(self.manual_sites):
            self.note("manual-zero-grad-loop", site, detail + ": zeroed one by one")
        if not self.keep_sites and not self.manual_sites:
            self.note("manual-zero-grad-loop", None, detail)

    def _precision(self) -> None:
        scalers = [s for s in self.runner.scalers if s.is_enabled()]
        enabled = {(d, t) for d, t, on in self.autocasts if on}
        if scalers and enabled and all(t == "bfloat16" for _, t in enabled):
            self.note(
                "grad-scaler-with-bf16",
                None,
                "an enabled GradScaler with bfloat16 autocast only: bfloat16 has float32's range",
            )
        if self.backwards and not scalers and ("cuda", "float16") in enabled:
            self.note(
                "fp16-autocast-without-grad-scaler",
                None,
                "float16 autocast on CUDA with backward passes and no enabled GradScaler",
            )

    def _patterns(self) -> list[PatternResult]:
        results: list[PatternResult] = []
        self._stop_profiler()
        profiler = self.profiler
        matcher: Any = None
        try:
            from torch.profiler import _pattern_matcher

            matcher = _pattern_matcher
        except ImportError as exc:
            self.profile_error = self.profile_error or str(exc)
        for name, shows, cuda_only in PROFILER_PATTERNS:
            result: PatternResult = {
                "name": name,
                "shows": shows,
                "status": "skipped",
                "reason": None,
                "hits": [],
            }
            results.append(result)
            pattern_class = getattr(matcher, name, None) if matcher is not None else None
            if profiler is None or pattern_class is None:
                result["status"] = "error"
                result["reason"] = self.profile_error or "not in this torch"
                continue
            if cuda_only and not self.cuda:
                result["reason"] = "CUDA only, and this run did not use CUDA"
                continue
            try:
                pattern = pattern_class(profiler)
                if pattern.skip:
                    result["reason"] = "the pattern does not apply to this run"
                    continue
                hits: dict[tuple[str, int], PatternHit] = {}
                for event in _matched(pattern):
                    site = self._location(event)
                    if site is not None and site not in hits:
                        hits[site] = {
                            "file": site[0],
                            "row": site[1],
                            "message": pattern.description,
                        }
                result["status"] = "ran"
                result["hits"] = list(hits.values())
            except Exception as exc:  # a private module: one pattern's failure stays its own
                result["status"] = "error"
                result["reason"] = f"{type(exc).__name__}: {exc}"
        return results

    def _location(self, event: Any) -> tuple[str, int] | None:
        """The script's line behind a profiler event: the first Python caller outside
        torch and outside this runner (torch's own helper stops at the runner's
        wrappers, and splits a path on ':')."""
        from torch._C._profiler import _EventType

        while event is not None:
            if event.tag in (_EventType.PyCall, _EventType.PyCCall):
                caller = event.extra_fields.caller
                name = str(caller.file_name)
                if not name.startswith(("torch" + os.sep, "<", *self.skip)):
                    return name, int(caller.line_number)
            event = event.parent
        return None


@contextlib.contextmanager
def _without_lazy_inductor(torch: Any) -> Iterator[None]:
    """`profile.start()` asks `hasattr(torch, "_inductor")` to read inductor's
    cudagraphs flag, and torch's module `__getattr__` answers by importing
    inductor (and dynamo with it): seconds of CPU in a run of seconds. A script
    that uses inductor has imported it already, so while the profiler starts a
    not-yet-imported inductor is answered "absent" (the flag only matters when
    inductor compiled something)."""
    lazy = torch.__dict__.get("__getattr__")
    if lazy is None or "torch._inductor" in sys.modules:
        yield
        return

    def getattr_(name: str) -> Any:
        if name == "_inductor" and "torch._inductor" not in sys.modules:
            raise AttributeError(name)
        return lazy(name)

    torch.__getattr__ = getattr_
    try:
        yield
    finally:
        torch.__getattr__ = lazy


def _matched(pattern: Any) -> list[Any]:
    """`pattern.matched_events()`, one event at a time: the name of a Python-call
    event can point at freed memory (a known torch bug that one pattern guards
    against itself), and such an event must not stop the others."""

    def matches(event: Any) -> bool:
        try:
            return bool(pattern.match(event))
        except UnicodeDecodeError:
            return False

    return [event for event in pattern.eventTreeTraversal() if matches(event)]


class _Watched:
    """A property of torch's backend modules whose writes are recorded."""

    def __init__(self, original: Any, name: str, table: dict[str, object]) -> None:
        self.original = original
        self.name = name
        self.table = table

    def __get__(self, obj: Any, owner: Any = None) -> Any:
        return self.original.__get__(obj, owner)

    def __set__(self, obj: Any, value: Any) -> None:
        self.table[self.name] = value
        self.original.__set__(obj, value)
