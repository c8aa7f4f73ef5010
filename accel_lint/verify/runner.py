"""The instrumenting runner: runs inside every Python process of a verification run.

`hook/sitecustomize.py` loads this file (by path, not as part of the package) when
the `ACCEL_LINT_VERIFY` environment variable holds a run configuration. It then
waits for the user's script to `import torch` and, in that process, seeds the
generators, pins the thread count, installs PyTorch's global optimizer step hooks
and a loss recorder, and stops the process after N optimizer steps by writing a
JSON record and calling `os._exit(0)`: nothing of the script runs after the stop,
so a bare `except:` or a `finally:` cannot swallow it. Because the hook rides on
PYTHONPATH it reaches every process that imports torch (torchrun ranks,
`mp.spawn` children); processes that never build an optimizer (the torchrun
launcher, DataLoader workers) write nothing unless they crash.

This module imports torch (through the script's own import) and nothing else of
accel_lint: the parent process never imports torch, and this file never imports
the linter. Measured design: research/verifier_probe.md.
"""

from __future__ import annotations

import atexit
import contextlib
import ctypes
import gc
import hashlib
import importlib.abc
import importlib.machinery
import json
import os
import random
import sys
import threading
import time
import traceback
import warnings
from collections.abc import Callable, Iterator, Sequence
from types import ModuleType, TracebackType
from typing import Any

CONFIG_ENV = "ACCEL_LINT_VERIFY"
RECORD_VERSION = 1
EXIT_INTERNAL = 70  # the runner itself failed (a bug of ours), never the script
# Approximately process start: sitecustomize loads this module before anything else.
PROCESS_START = time.perf_counter()

# Messages torch gives when a script needs CUDA and the machine has none
# (CPU wheel, CUDA wheel without a driver, without a device).
NEEDS_CUDA_MESSAGES = (
    "Torch not compiled with CUDA enabled",
    "Found no NVIDIA driver",
    "No CUDA GPUs are available",
    "no CUDA-capable device is detected",
    "CUDA driver initialization failed",
    "Cannot access accelerator device when none is available",
    "Attempting to deserialize object on a CUDA device but torch.cuda.is_available() is False",
)


def needs_cuda(text: str) -> bool:
    return any(message in text for message in NEEDS_CUDA_MESSAGES)


class Config:
    """One run's settings, passed as JSON in the environment."""

    def __init__(self, data: dict[str, Any]) -> None:
        self.out: str = data["out"]
        self.mode: str = data.get("mode", "equiv")  # "equiv" | "time"
        self.steps: int = int(data["steps"])
        self.warmup: int = int(data.get("warmup", 0))
        self.seed: int = int(data.get("seed", 0))
        self.seed_offset: int = int(data.get("seed_offset", 0))
        self.threads: int = int(data.get("threads", 1))
        self.save_state: bool = bool(data.get("save_state", False))
        self.reference: str | None = data.get("reference")  # state file of the reference run
        self.dump_init: str | None = data.get("dump_init")  # directory for initial weights
        self.align_init: str | None = data.get("align_init")  # directory to align with
        self.perturb: bool = bool(data.get("perturb", False))

    @property
    def equiv(self) -> bool:
        return self.mode == "equiv"


# -- loading torch ------------------------------------------------------------------


class _AfterExec(importlib.abc.Loader):
    """Wraps a module's loader to run `then(module)` as soon as its import completes."""

    def __init__(self, loader: Any, then: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._then = then

    def __getattr__(self, name: str) -> Any:  # resource readers etc. of the real loader
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then(sys.modules.get(module.__name__, module))


class _PostImport(importlib.abc.MetaPathFinder):
    """Runs a callback after each watched module is imported, in whatever process
    and whenever the script imports it; leaves `sys.meta_path` once all have been."""

    def __init__(self, watch: dict[str, Callable[[ModuleType], None]]) -> None:
        self.watch = watch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        then = self.watch.pop(fullname, None)
        if then is None:
            return None
        if not self.watch:
            sys.meta_path.remove(self)  # safe: a spec is returned, importlib stops here
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterExec(spec.loader, then)
        return spec


def activate() -> None:
    """Called by sitecustomize: wait for torch, or install now if it is already there."""
    raw = os.environ.get(CONFIG_ENV)
    if not raw:
        return
    runner = Runner(Config(json.loads(raw)))
    sys.excepthook = runner.excepthook_wrapper(sys.excepthook)
    atexit.register(runner.at_exit)
    if "torch" in sys.modules:
        runner.install(sys.modules["torch"])
        return
    watch: dict[str, Callable[[ModuleType], None]] = {"torch": runner.install}
    if runner.cfg.equiv:
        # torch.use_deterministic_algorithms() imports torch._inductor (and with it
        # torch._dynamo: 2.7 s a process here) only to set this flag; set it when
        # the script itself imports inductor, i.e. when it uses torch.compile.
        watch["torch._inductor.config"] = _deterministic_inductor
    sys.meta_path.insert(0, _PostImport(watch))


def _deterministic_inductor(config: ModuleType) -> None:
    config.deterministic = True  # type: ignore[attr-defined]


# -- the runner ---------------------------------------------------------------------


_local = threading.local()


class Runner:
    def __init__(self, config: Config) -> None:
        self.cfg = config
        self.pid = os.getpid()
        self.torch: Any = None
        self.active = False  # built an optimizer or ran a backward pass
        self.finishing = False
        self.error: dict[str, Any] | None = None
        self.losses: list[float] = []
        self.primary: Any = None  # the first optimizer that steps
        self.optimizers: list[Any] = []  # in first-step order (kept alive)
        self.counts: dict[int, int] = {}
        self.step_times: list[float] = []
        self.backwards_at_step: list[int] = []
        # Root modules, kept alive from the first step of each optimizer: models
        # built inside main() would otherwise be collected before the snapshot.
        self.roots: list[Any] = []
        self.param_keys: dict[int, tuple[int, str]] = {}  # id(param) -> (root, local name)
        self.grad_none: dict[tuple[int, str], int] = {}
        self.grad_zero: dict[tuple[int, str], int] = {}
        self.grad_first_zero: dict[tuple[int, str], int] = {}
        self.grad_steps = 0
        self.constructed = 0
        self.init_events: list[dict[str, Any]] = []
        self.samplers: list[dict[str, Any]] = []
        self._sampler_ids: dict[int, int] = {}
        self.saves: list[dict[str, Any]] = []
        self._save: Any = None  # torch.save before we wrapped it

    # -- installation --------------------------------------------------------------

    def install(self, torch: Any) -> None:
        if self.torch is not None:
            return
        self.torch = torch
        cfg = self.cfg
        with contextlib.suppress(RuntimeError):
            torch.set_num_threads(cfg.threads)
        self._seed_all(cfg.seed + cfg.seed_offset)
        if cfg.seed_offset:
            self._offset_seeds(cfg.seed_offset)
        if cfg.equiv:
            # warn_only: an op without a deterministic kernel must not crash the script;
            # two identical runs still tell whether the script is deterministic.
            # The C++ switch is what use_deterministic_algorithms() sets; its inductor
            # flag is set when inductor loads (see activate()).
            torch._C._set_deterministic_algorithms(True, warn_only=True)
            if "torch._inductor.config" in sys.modules:
                _deterministic_inductor(sys.modules["torch._inductor.config"])
            torch.backends.cudnn.benchmark = False
            torch.backends.cudnn.deterministic = True
        from torch.optim import optimizer as optim_module

        optim_module.register_optimizer_step_pre_hook(self._pre_step)
        optim_module.register_optimizer_step_post_hook(self._post_step)
        self._wrap_optimizer_init(torch)
        self._save = torch.save
        if cfg.equiv:
            self._wrap_backward(torch)
            self._wrap_grad_scaler(torch)
            self._wrap_sampler(torch)
            self._wrap_save(torch)

    def _seed_all(self, seed: int) -> None:
        random.seed(seed)
        try:
            import numpy

            numpy.random.seed(seed % 2**32)
        except ImportError:
            pass
        self.torch.manual_seed(seed)

    def _offset_seeds(self, offset: int) -> None:
        """Shift every global seed the script sets by `offset`, in this process only:
        forked DataLoader workers inherit the patch and must seed as usual."""
        main_pid = self.pid

        def shifted(original: Any, modulo: int | None = None) -> Any:
            def seed(value: Any = None, *args: Any, **kwargs: Any) -> Any:
                if (
                    os.getpid() == main_pid
                    and isinstance(value, int)
                    and not isinstance(value, bool)
                ):
                    value = value + offset
                    if modulo is not None:
                        value %= modulo
                return original(value, *args, **kwargs)

            return seed

        torch = self.torch
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

    def _wrap_optimizer_init(self, torch: Any) -> None:
        original = torch.optim.Optimizer.__init__
        runner = self

        def __init__(optimizer: Any, *args: Any, **kwargs: Any) -> None:
            original(optimizer, *args, **kwargs)
            runner.on_optimizer_init(optimizer)

        torch.optim.Optimizer.__init__ = __init__

    def _wrap_backward(self, torch: Any) -> None:
        runner = self

        def recording(original: Any) -> Any:
            def backward(*args: Any, **kwargs: Any) -> Any:
                # Tensor.backward calls autograd.backward: record the outer call only.
                if getattr(_local, "inside", False):
                    return original(*args, **kwargs)
                _local.inside = True
                try:
                    tensors = args[0] if args else kwargs.get("tensors")
                    runner.on_backward(tensors)
                    return original(*args, **kwargs)
                finally:
                    _local.inside = False

            backward.__doc__ = original.__doc__
            backward.__name__ = original.__name__
            return backward

        torch.Tensor.backward = recording(torch.Tensor.backward)
        torch.autograd.backward = recording(torch.autograd.backward)

    def _wrap_grad_scaler(self, torch: Any) -> None:
        """Tag `scaler.scale(loss)` with the loss so that its backward records the
        unscaled value the script computed."""
        # torch.amp.GradScaler (2.3+) is the base of torch.cuda.amp.GradScaler
        scaler_class = getattr(torch.amp, "GradScaler", None) or torch.cuda.amp.GradScaler
        original = scaler_class.scale

        def scale(scaler: Any, outputs: Any) -> Any:
            result = original(scaler, outputs)
            if result is not outputs and isinstance(outputs, torch.Tensor):
                with contextlib.suppress(AttributeError, RuntimeError):
                    result._accel_lint_unscaled = outputs
            return result

        scaler_class.scale = scale

    def _wrap_sampler(self, torch: Any) -> None:
        """Record the order each DistributedSampler hands out (ACL404's invariant)."""
        sampler_class = torch.utils.data.distributed.DistributedSampler
        original = sampler_class.__iter__
        runner = self

        def __iter__(sampler: Any) -> Iterator[Any]:
            indices = list(original(sampler))
            ordinal = runner._sampler_ids.setdefault(id(sampler), len(runner._sampler_ids))
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

    def _wrap_save(self, torch: Any) -> None:
        """Record who saved what (ACL403's invariant): path, rank, and a hash of the
        content (not of the bytes: the zip carries a per-save serialization id)."""
        original = torch.save
        runner = self

        def save(obj: Any, f: Any, *args: Any, **kwargs: Any) -> Any:
            result = original(obj, f, *args, **kwargs)
            if not runner.finishing:
                runner.saves.append(
                    {
                        "step": runner.primary_steps(),
                        "path": _path_label(f),
                        "content": runner.content_hash(obj),
                    }
                )
            return result

        torch.save = save
        torch.serialization.save = save

    # -- events ---------------------------------------------------------------------

    def primary_steps(self) -> int:
        return self.counts.get(id(self.primary), 0) if self.primary is not None else 0

    def on_backward(self, tensors: Any) -> None:
        self.active = True
        torch = self.torch
        items = [tensors] if isinstance(tensors, torch.Tensor) else list(tensors or ())
        total = 0.0
        with torch.no_grad():
            for tensor in items:
                if not isinstance(tensor, torch.Tensor):
                    continue
                unscaled = getattr(tensor, "_accel_lint_unscaled", None)
                source = unscaled if isinstance(unscaled, torch.Tensor) else tensor
                # double: exact for float32/bfloat16 losses, so equal losses compare equal
                total += float(source.detach().double().sum().item())
        self.losses.append(total)

    def on_optimizer_init(self, optimizer: Any) -> None:
        self.active = True
        index = self.constructed
        self.constructed += 1
        if not self.cfg.equiv:
            return
        params = _optimizer_params(optimizer)
        named_params, named_buffers = self._named_tensors(self._roots_of(params), params)
        rank = self.rank()[0]
        if self.cfg.dump_init and rank in (None, 0):
            state: dict[str, Any] = {
                "params": {n: t.detach().cpu().clone() for n, t in named_params.items()},
                "buffers": {n: t.detach().cpu().clone() for n, t in named_buffers.items()},
            }
            if index == 0:
                state["rng"] = self._rng_state()
            os.makedirs(self.cfg.dump_init, exist_ok=True)
            self._save(state, os.path.join(self.cfg.dump_init, f"init_{index}.pt"))
        if self.cfg.align_init:
            self._align(index, named_params, named_buffers)
        if self.cfg.perturb and index == 0:
            self._perturb(params)

    def _align(self, index: int, params: dict[str, Any], buffers: dict[str, Any]) -> None:
        """Start from the reference run's initial weights and RNG state when the fix
        changed the set of parameters (ACL201): a removed bias no longer consumes
        random numbers, which shifts every later initialisation and shuffle."""
        path = os.path.join(self.cfg.align_init or "", f"init_{index}.pt")
        if not os.path.exists(path):
            return
        torch = self.torch
        ref = torch.load(path, weights_only=False)
        ref_params: dict[str, Any] = ref["params"]
        ref_buffers: dict[str, Any] = ref["buffers"]
        ours = {n: tuple(t.shape) for n, t in params.items()}
        theirs = {n: tuple(t.shape) for n, t in ref_params.items()}
        event: dict[str, Any] = {"optimizer": index}
        if ours == theirs:
            event["aligned"] = False
            event["differs"] = sorted(
                n for n, t in params.items() if not torch.equal(t.detach().cpu(), ref_params[n])
            )
            self.init_events.append(event)
            return
        copied = 0
        with torch.no_grad():
            for mine, reference in ((params, ref_params), (buffers, ref_buffers)):
                for name, tensor in mine.items():
                    source = reference.get(name)
                    if source is not None and tuple(source.shape) == tuple(tensor.shape):
                        tensor.copy_(source.to(tensor.device))
                        copied += 1
        if index == 0 and "rng" in ref:
            self._set_rng_state(ref["rng"])
        event.update(
            aligned=True,
            copied=copied,
            removed=sorted(set(theirs) - set(ours)),
            added=sorted(set(ours) - set(theirs)),
        )
        self.init_events.append(event)

    def _perturb(self, params: list[Any]) -> None:
        """Move every nonzero float weight by one unit in the last place: a relative
        perturbation the size of a reordered floating-point sum, to measure how the
        script amplifies it (a zero would move to a denormal: no relative size)."""
        torch = self.torch
        with torch.no_grad():
            for p in params:
                if p.is_floating_point():
                    moved = torch.nextafter(p, torch.full_like(p, float("inf")))
                    p.copy_(torch.where(p != 0, moved, p))

    def _pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.finishing:
            return
        key = id(optimizer)
        if key not in self.counts:
            self.counts[key] = 0
            self.optimizers.append(optimizer)
            if self.primary is None:
                self.primary = optimizer
            self._adopt_roots(optimizer)
        elif optimizer is self.primary and self.counts[key] >= self.cfg.steps:
            # several optimizers (GAN): stop before the primary's step N+1, so that
            # every optimizer has made its step N
            self.finish("steps")
        if self.cfg.equiv:
            self._scan_grads(optimizer)

    def _post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.finishing:
            return
        key = id(optimizer)
        self.counts[key] = self.counts.get(key, 0) + 1
        if optimizer is not self.primary:
            return
        n = self.counts[key]
        if not self.cfg.equiv and n in (self.cfg.warmup, self.cfg.steps) and self._cuda_used():
            # CUDA runs asynchronously: the clock means something only after a sync,
            # so timing runs sync at the warm-up boundary and at the last step only.
            self.torch.cuda.synchronize()
        self.step_times.append(time.perf_counter())
        self.backwards_at_step.append(len(self.losses))
        if n >= self.cfg.steps and len(self.counts) == 1:
            self.finish("steps")

    def _scan_grads(self, optimizer: Any) -> None:
        """Which parameters reach this step with no gradient (None) or an all-zero one:
        what set_to_none=True (ACL301/ACL302) changes for the optimizer."""
        torch = self.torch
        step = self.primary_steps()
        self.grad_steps = max(self.grad_steps, step + 1)
        params = _optimizer_params(optimizer)
        present = [p for p in params if p.grad is not None]
        zero: list[bool] = []
        if present:
            grads = [p.grad for p in present]
            with torch.no_grad():
                try:
                    norms = torch._foreach_norm(grads)
                    zero = torch.stack([n.detach().double().cpu() for n in norms]).eq(0).tolist()
                except (RuntimeError, TypeError, NotImplementedError):  # sparse, mixed devices
                    zero = [not bool(g.detach().ne(0).any()) for g in grads]
        for p in params:
            if p.grad is None:
                key = self._key(p)
                self.grad_none[key] = self.grad_none.get(key, 0) + 1
        for p, is_zero in zip(present, zero):
            if is_zero:
                key = self._key(p)
                self.grad_zero[key] = self.grad_zero.get(key, 0) + 1
                self.grad_first_zero.setdefault(key, step)

    def _key(self, param: Any) -> tuple[int, str]:
        return self.param_keys.setdefault(id(param), (-1, f"optimizer.param{len(self.param_keys)}"))

    # -- roots and names ------------------------------------------------------------

    def _roots_of(self, params: list[Any]) -> list[Any]:
        """Top-level modules (unwrapped from DataParallel/DDP/torch.compile) that own
        one of `params`, ordered by where their first parameter sits in the list, so
        both sides of a comparison name them the same way."""
        torch = self.torch
        module_class = torch.nn.Module
        with warnings.catch_warnings():  # isinstance() on deprecated torch objects warns
            warnings.simplefilter("ignore")
            modules = [o for o in gc.get_objects() if isinstance(o, module_class)]
        children = {id(c) for m in modules for c in m._modules.values() if c is not None}
        position = {id(p): i for i, p in enumerate(params)}
        ranked: list[tuple[int, Any]] = []
        seen: set[int] = set()
        for module in modules:
            if id(module) in children:
                continue
            root = self._unwrap(module)
            if id(root) in seen:
                continue
            seen.add(id(root))
            first = min(
                (position[id(p)] for p in root.parameters() if id(p) in position), default=None
            )
            if first is not None:
                ranked.append((first, root))
        ranked.sort(key=lambda item: item[0])
        return [root for _, root in ranked]

    def _unwrap(self, module: Any) -> Any:
        torch = self.torch
        wrappers = (torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel)
        while True:
            if isinstance(module, wrappers) and isinstance(
                getattr(module, "module", None), torch.nn.Module
            ):
                module = module.module
            elif isinstance(getattr(module, "_orig_mod", None), torch.nn.Module):  # torch.compile
                module = module._orig_mod
            else:
                return module

    def _adopt_roots(self, optimizer: Any) -> None:
        params = _optimizer_params(optimizer)
        for root in self._roots_of(params):
            if not any(root is r for r in self.roots):
                self.roots.append(root)
                index = len(self.roots) - 1
                for name, p in root.named_parameters():
                    self.param_keys.setdefault(id(p), (index, _strip(name)))

    def _root_names(self, roots: list[Any]) -> list[str]:
        classes = [type(r).__name__ for r in roots]
        seen: dict[str, int] = {}
        names = []
        for cls in classes:
            i = seen.get(cls, 0)
            seen[cls] = i + 1
            names.append(f"{cls}#{i}" if classes.count(cls) > 1 else cls)
        return names

    def _named_tensors(
        self, roots: list[Any], params: list[Any]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        named_params: dict[str, Any] = {}
        named_buffers: dict[str, Any] = {}
        covered: set[int] = set()
        for prefix, root in zip(self._root_names(roots), roots):
            for name, p in root.named_parameters():
                named_params.setdefault(f"{prefix}.{_strip(name)}", p)
                covered.add(id(p))
            for name, b in root.named_buffers():
                named_buffers.setdefault(f"{prefix}.{_strip(name)}", b)
        for i, p in enumerate(params):
            if id(p) not in covered:  # a bare tensor handed to the optimizer
                named_params[f"optimizer.param{i}"] = p
        return named_params, named_buffers

    def _key_name(self, key: tuple[int, str], names: list[str]) -> str:
        root, local = key
        return f"{names[root]}.{local}" if 0 <= root < len(names) else local

    # -- the stop -------------------------------------------------------------------

    def finish(self, reason: str) -> None:
        """Write the record and end the process here (see the module docstring)."""
        if self.finishing:
            return
        self.finishing = True
        code = 0
        try:
            self._write(self._record(reason))
        except BaseException:
            code = EXIT_INTERNAL
            self._write_internal_error()
        with contextlib.suppress(Exception):
            self._stop_loader_workers()
        _flush(sys.stdout, sys.stderr)
        os._exit(code)

    def _stop_loader_workers(self) -> None:
        """End DataLoader workers the way the loader itself does, so that they exit
        on their own and remove multiprocessing's temporary directories; after
        `os._exit` they would linger for seconds and leave those behind."""
        torch = self.torch
        iterator = getattr(torch.utils.data.dataloader, "_MultiProcessingDataLoaderIter", None)
        if iterator is not None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                live = [o for o in gc.get_objects() if isinstance(o, iterator)]
            for loader_iterator in live:
                loader_iterator._shutdown_workers()
        import multiprocessing.process
        import shutil

        config: dict[str, Any] = getattr(multiprocessing.process.current_process(), "_config", {})
        tempdir = config.get("tempdir")
        if tempdir:
            shutil.rmtree(tempdir, ignore_errors=True)

    def at_exit(self) -> None:
        """The script ended on its own (fewer steps than asked, or an error)."""
        if self.finishing or os.getpid() != self.pid:
            return
        if not self.active and self.error is None:
            return
        self.finishing = True
        try:
            self._write(self._record("error" if self.error else "exit"))
        except BaseException:
            self._write_internal_error()

    def excepthook_wrapper(self, previous: Any) -> Any:
        def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
            if os.getpid() == self.pid and self.error is None:
                text = "".join(traceback.format_exception(kind, value, tb))
                self.error = {
                    "type": kind.__name__,
                    "message": str(value)[:2000],
                    "traceback": text[-8000:],
                    "needs_cuda": needs_cuda(text),
                }
            previous(kind, value, tb)

        return hook

    def rank(self) -> tuple[int | None, int]:
        torch = self.torch
        try:
            if (
                torch is not None
                and torch.distributed.is_available()
                and torch.distributed.is_initialized()
            ):
                return int(torch.distributed.get_rank()), int(torch.distributed.get_world_size())
        except (RuntimeError, ValueError):
            pass
        if "RANK" in os.environ:
            return int(os.environ["RANK"]), int(os.environ.get("WORLD_SIZE", "1"))
        return None, 1

    def _cuda_used(self) -> bool:
        torch = self.torch
        return bool(torch is not None and torch.cuda.is_available() and torch.cuda.is_initialized())

    def _record(self, reason: str) -> dict[str, Any]:
        torch = self.torch
        rank, world = self.rank()
        record: dict[str, Any] = {
            "version": RECORD_VERSION,
            "pid": self.pid,
            "rank": rank,
            "world_size": world,
            "argv0": sys.argv[0] if sys.argv else "",
            "mode": self.cfg.mode,
            "active": self.active,
            "stop_reason": reason,
            "steps": self.primary_steps(),
            "optimizer_steps": [self.counts[id(o)] for o in self.optimizers],
            "first_step_s": (self.step_times[0] - PROCESS_START) if self.step_times else None,
            "step_times": self.step_times,
            "backwards_at_step": self.backwards_at_step,
            "losses": self.losses,
            "error": self.error,
            "device": "cpu",
            "device_count": 0,
            "threads": self.cfg.threads,
            "memory": self._memory(),
        }
        if torch is None:
            return record
        if torch.cuda.is_available():
            record["device"] = "cuda"
            record["device_count"] = int(torch.cuda.device_count())
        if self.cfg.equiv and self.optimizers:
            names = self._root_names(self.roots)
            record["grads"] = {
                "steps": self.grad_steps,
                "none": {self._key_name(k, names): v for k, v in self.grad_none.items()},
                "zero": {self._key_name(k, names): v for k, v in self.grad_zero.items()},
                "first_zero": {
                    self._key_name(k, names): v for k, v in self.grad_first_zero.items()
                },
            }
            kinds, tensors = self._snapshot()
            record["hashes"] = {
                kind: _hash_tensors({n: t for n, t in tensors.items() if kinds[n] == kind})
                for kind in ("param", "buffer")
            }
            record["tensor_count"] = {
                kind: sum(1 for k in kinds.values() if k == kind) for kind in ("param", "buffer")
            }
            if self.cfg.save_state and rank in (None, 0):
                self._save(
                    {"kinds": kinds, "tensors": tensors},
                    os.path.join(self.cfg.out, "state.pt"),
                )
            if self.cfg.reference and os.path.exists(self.cfg.reference):
                record["diff"] = self._diff(kinds, tensors, self.cfg.reference)
        record["init"] = self.init_events
        record["samplers"] = self.samplers
        record["saves"] = self.saves
        return record

    def _snapshot(self) -> tuple[dict[str, str], dict[str, Any]]:
        kinds: dict[str, str] = {}
        tensors: dict[str, Any] = {}
        params = [p for o in self.optimizers for p in _optimizer_params(o)]
        named_params, named_buffers = self._named_tensors(self.roots, params)
        for kind, table in (("param", named_params), ("buffer", named_buffers)):
            for name, t in table.items():
                kinds[name] = kind
                tensors[name] = t.detach().cpu().clone()
        return kinds, tensors

    def _diff(
        self, kinds: dict[str, str], tensors: dict[str, Any], reference: str
    ) -> dict[str, Any]:
        """Per-tensor difference to the reference run's final state, computed here
        because the parent process never imports torch."""
        torch = self.torch
        ref = torch.load(reference, weights_only=False)
        ref_tensors: dict[str, Any] = ref["tensors"]
        ref_kinds: dict[str, str] = ref["kinds"]
        rows = []
        for name, ours in tensors.items():
            theirs = ref_tensors.get(name)
            if theirs is None:
                continue
            row: dict[str, Any] = {"name": name, "kind": kinds[name]}
            if tuple(ours.shape) != tuple(theirs.shape):
                row.update(shape=False, equal=False, max_abs=None, rel_norm=None)
            elif torch.equal(ours, theirs):
                row.update(shape=True, equal=True, max_abs=0.0, rel_norm=0.0)
            else:
                a, b = ours.double(), theirs.double()
                d = a - b
                scale = max(float(a.norm()), float(b.norm()), 1e-30)
                row.update(
                    shape=True,
                    equal=False,
                    max_abs=float(d.abs().max()),
                    rel_norm=float(d.norm()) / scale,
                )
            rows.append(row)
        return {
            "tensors": rows,
            "missing": sorted((n, ref_kinds[n]) for n in ref_tensors if n not in tensors),
            "extra": sorted((n, kinds[n]) for n in tensors if n not in ref_tensors),
        }

    def _rng_state(self) -> dict[str, Any]:
        torch = self.torch
        state: dict[str, Any] = {"torch": torch.get_rng_state(), "python": random.getstate()}
        try:
            import numpy

            state["numpy"] = numpy.random.get_state()
        except ImportError:
            pass
        if self._cuda_used():
            state["cuda"] = torch.cuda.get_rng_state_all()
        return state

    def _set_rng_state(self, state: dict[str, Any]) -> None:
        torch = self.torch
        torch.set_rng_state(state["torch"])
        random.setstate(state["python"])
        if "numpy" in state:
            import numpy

            numpy.random.set_state(state["numpy"])
        if "cuda" in state and self._cuda_used():
            torch.cuda.set_rng_state_all(state["cuda"])

    def content_hash(self, obj: Any) -> str:
        digest = hashlib.sha256()
        _feed(digest, obj, self.torch, 0)
        return digest.hexdigest()[:16]

    def _memory(self) -> dict[str, int | None]:
        """Peak resident memory of this process plus its live children (DataLoader
        workers still running at the stop; their shared pages count in each), and
        the CUDA allocator's peak when CUDA was used."""
        try:
            import resource

            unit = 1 if sys.platform == "darwin" else 1024
            own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
            reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit
        except ImportError:  # Windows
            own, reaped = 0, 0
        live = sum(_peak_rss(pid) for pid in _child_pids())
        device: int | None = None
        if self._cuda_used():
            torch = self.torch
            device = sum(
                int(torch.cuda.max_memory_allocated(i)) for i in range(torch.cuda.device_count())
            )
        return {"host_peak_bytes": own + max(live, reaped), "device_peak_bytes": device}

    def _write(self, record: dict[str, Any]) -> None:
        rank = record.get("rank")
        name = f"rank{rank}_pid{self.pid}" if rank is not None else f"proc_pid{self.pid}"
        os.makedirs(self.cfg.out, exist_ok=True)
        path = os.path.join(self.cfg.out, name + ".json")
        tmp = path + ".tmp"
        with open(tmp, "w", encoding="utf-8") as fh:
            json.dump(record, fh)
        os.replace(tmp, path)  # the parent reads complete records only

    def _write_internal_error(self) -> None:
        try:
            os.makedirs(self.cfg.out, exist_ok=True)
            with open(
                os.path.join(self.cfg.out, f"internal_pid{self.pid}.txt"), "w", encoding="utf-8"
            ) as fh:
                fh.write(traceback.format_exc())
        except OSError:
            pass


# -- helpers ------------------------------------------------------------------------


def _flush(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def _optimizer_params(optimizer: Any) -> list[Any]:
    return [p for group in optimizer.param_groups for p in group["params"]]


def _strip(name: str) -> str:
    """Names as the user's model has them: wrappers' prefixes are not part of it."""
    name = name.replace("_orig_mod.", "")
    while name.startswith("module."):
        name = name[len("module.") :]
    return name


def _tensor_bytes(t: Any) -> bytes:
    t = t.detach().cpu().contiguous()
    size = t.numel() * t.element_size()
    return ctypes.string_at(t.data_ptr(), size) if size else b""


def _hash_tensors(tensors: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(_tensor_bytes(t))
    return digest.hexdigest()


def _feed(digest: Any, obj: Any, torch: Any, depth: int) -> None:
    if depth > 20:
        digest.update(b"<deep>")
    elif isinstance(obj, torch.Tensor):
        digest.update(f"T{obj.dtype}{tuple(obj.shape)}".encode())
        digest.update(_tensor_bytes(obj))
    elif isinstance(obj, torch.nn.Module):
        _feed(digest, obj.state_dict(), torch, depth + 1)
    elif isinstance(obj, dict):
        digest.update(b"{")
        for key, value in obj.items():
            digest.update(repr(key).encode())
            _feed(digest, value, torch, depth + 1)
        digest.update(b"}")
    elif isinstance(obj, (list, tuple)):
        digest.update(b"[")
        for value in obj:
            _feed(digest, value, torch, depth + 1)
        digest.update(b"]")
    elif obj is None or isinstance(obj, (bool, int, float, str, bytes)):
        digest.update(repr(obj).encode())
    else:  # an object whose repr may carry its address: its type is what is stable
        digest.update(type(obj).__qualname__.encode())


def _path_label(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(f))
        cwd = os.getcwd()
        return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path
    return "<stream>"


def _child_pids() -> list[int]:
    pids: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as fh:
                pids.extend(int(p) for p in fh.read().split())
    except OSError:
        pass
    return pids


def _peak_rss(pid: int) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0
