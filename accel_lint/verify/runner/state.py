"""The runner of one process: what it counts, when it stops, what it writes.

The stop after N optimizer steps writes the record and ends the process with
`os._exit`: nothing of the script runs after it, so a bare `except:` or a
`finally:` cannot swallow it, and no checkpoint or evaluation code runs.
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from types import TracebackType
from typing import TYPE_CHECKING, Any

from ..protocol import (
    EQUIV,
    EXIT_INTERNAL,
    PROBE,
    RECORD_VERSION,
    ClipEvent,
    ErrorRecord,
    GradWindow,
    InitEvent,
    LogitsLoss,
    MicroBatch,
    Record,
    RunConfig,
    SamplerEvent,
    SaveEvent,
    ScaleEvent,
    needs_cuda,
)
from . import records
from .base import Watcher
from .models import Models, optimizer_params

if TYPE_CHECKING:
    from .loaders import Loaders

# Approximately the process's start: sitecustomize loads the runner before anything
# else (a process forked by the warm interpreter resets it, see `server`).
PROCESS_START = time.perf_counter()
PROGRESS_EVERY_S = 0.2
# gradients are projected (for the accumulation window record) up to this many
# parameter elements, and that many windows, scales and logits losses are kept
PROJECT_LIMIT = 5_000_000
EVENT_LIMIT = 256
PROJECTIONS = 2


class Runner:
    def __init__(self, config: RunConfig, started: float = PROCESS_START) -> None:
        self.cfg = config
        # a probe is an equivalence run that also watches what the script does
        self.equiv = config["mode"] in (EQUIV, PROBE)
        self.probe = config["mode"] == PROBE
        self.started = started
        self.pid = os.getpid()
        self.torch: Any = None
        self.models: Models | None = None
        self.loaders: Loaders | None = None
        self.observer: Watcher | None = None  # probe mode
        self.defaults: dict[str, object] = {}  # backend flags before the runner set any
        self.active = False  # built an optimizer or ran a backward pass
        self.finishing = False
        self.error: ErrorRecord | None = None
        self.losses: list[float] = []
        self.primary: Any = None  # the first optimizer that steps
        self.optimizers: list[Any] = []  # in first-step order (kept alive)
        self.built: list[Any] = []  # every optimizer constructed, in order
        self.counts: dict[int, int] = {}
        self.step_times: list[float] = []
        self.backwards_at_step: list[int] = []
        self.grad_none: dict[tuple[int, str], int] = {}
        self.grad_zero: dict[tuple[int, str], int] = {}
        self.grad_first_zero: dict[tuple[int, str], int] = {}
        self.grad_steps = 0
        self.init_events: list[InitEvent] = []
        self.samplers: list[SamplerEvent] = []
        self.sampler_ids: dict[int, int] = {}
        self.saves: list[SaveEvent] = []
        self.clips: list[ClipEvent] = []
        self.grad_windows: list[GradWindow] = []
        self.micro: list[MicroBatch] = []  # backward passes since the last step
        self.scales: list[ScaleEvent] = []
        self.logits_losses: list[LogitsLoss] = []
        self.probability_losses: dict[str, int] = {}  # dtype -> binary_cross_entropy calls
        # the first optimizer's parameters, each with its fixed random directions
        self._directions: list[tuple[Any, list[Any]]] | None = None
        self.ddp_syncs = 0
        self.scalers: list[Any] = []  # GradScalers that scaled a loss
        self._progress_fd: int | None = None
        self._progress_at = 0.0

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
                source = (unscaled if isinstance(unscaled, torch.Tensor) else tensor).detach()
                # a float32/bfloat16 value is exact as a Python float: equal losses
                # compare equal
                total += float(source.item() if source.numel() == 1 else source.double().sum())
        self.losses.append(total)

    # -- accumulation windows, scales, logits losses (equivalence mode) -----------------

    def project(self) -> list[float] | None:
        """The first optimizer's gradients projected on fixed random directions (drawn
        from a generator of their own: the script's random streams are untouched);
        None before it exists or when its parameters are too many to project."""
        if not self.built or self.finishing:
            return None
        torch = self.torch
        if self._directions is None:
            params = optimizer_params(self.built[0])
            if sum(int(p.numel()) for p in params) > PROJECT_LIMIT:
                self._directions = []
            else:
                generator = torch.Generator().manual_seed(20240611)
                self._directions = [
                    (
                        p,
                        [
                            torch.randn(p.shape, generator=generator, dtype=torch.float64).to(
                                p.device
                            )
                            for _ in range(PROJECTIONS)
                        ],
                    )
                    for p in params
                ]
        if not self._directions:
            return None
        # summed on each parameter's device: one transfer per device, not per tensor
        totals: dict[Any, Any] = {}
        with torch.no_grad():
            for p, directions in self._directions:
                grad = p.grad
                if grad is None or grad.is_sparse:
                    continue
                values = grad.detach().double()
                part = torch.stack([(values * d).sum() for d in directions])
                device = part.device
                totals[device] = part if device not in totals else totals[device] + part
            out = [0.0] * PROJECTIONS
            for total in totals.values():
                for j, value in enumerate(total.cpu().tolist()):
                    out[j] += value
        return out

    def after_backward(self, before: list[float] | None) -> None:
        """The first optimizer's gradients before and after a backward pass."""
        after = self.project() if before is not None else None
        if before is not None and after is not None and len(self.micro) < EVENT_LIMIT:
            self.micro.append({"before": before, "after": after})

    def on_scale(self, scaler: Any) -> None:
        if len(self.scales) < EVENT_LIMIT and not self.finishing:
            self.scales.append({"step": self.primary_steps(), "scale": float(scaler.get_scale())})

    def on_logits_loss(self, value: float, reference: float | None) -> None:
        if len(self.logits_losses) < EVENT_LIMIT and not self.finishing:
            self.logits_losses.append({"value": value, "reference": reference})

    def on_probability_loss(self, dtype: str) -> None:
        if not self.finishing:
            self.probability_losses[dtype] = self.probability_losses.get(dtype, 0) + 1

    def _window(self, optimizer: Any) -> None:
        """At a step of the first optimizer: its gradients, and the window's passes."""
        if optimizer is not self.primary or not self.built or optimizer is not self.built[0]:
            return
        at = self.project()
        if at is not None and len(self.grad_windows) < EVENT_LIMIT:
            self.grad_windows.append(
                {"step": self.primary_steps(), "at_step": at, "micro": self.micro}
            )
        self.micro = []

    def on_optimizer_init(self, optimizer: Any) -> None:
        self.active = True
        index = len(self.built)
        self.built.append(optimizer)
        if self.observer is not None:
            self.observer.start()
        if not self.equiv:
            return
        assert self.models is not None
        models = self.models
        params = optimizer_params(optimizer)
        named_params, named_buffers = models.named_tensors(models.roots_of(params), params)
        rank = self.rank()[0]
        dump, align = self.cfg["dump_init"], self.cfg["align_init"]
        if dump and rank in (None, 0):
            models.dump_init(
                os.path.join(dump, f"init_{index}.pt"), named_params, named_buffers, index == 0
            )
        if align:
            event = models.align(
                os.path.join(align, f"init_{index}.pt"), index, named_params, named_buffers
            )
            if event is not None:
                self.init_events.append(event)
        if self.cfg["perturb"] and index == 0:
            models.perturb(params)

    def pre_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.finishing:
            return
        key = id(optimizer)
        if key not in self.counts:
            self.counts[key] = 0
            self.optimizers.append(optimizer)
            if self.primary is None:
                self.primary = optimizer
                if self.loaders is not None:
                    self.loaders.first_step()
            if self.equiv:
                assert self.models is not None
                self.models.adopt(optimizer)
        elif optimizer is self.primary and self.counts[key] >= self.cfg["steps"]:
            # several optimizers (GAN): stop before the primary's step N+1, so that
            # every optimizer has made its step N
            self.finish("steps")
        if self.observer is not None:
            self.observer.pre_step(optimizer)
        if self.equiv:
            self.scan_grads(optimizer)
            self._window(optimizer)

    def post_step(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        if self.finishing:
            return
        key = id(optimizer)
        self.counts[key] = self.counts.get(key, 0) + 1
        if optimizer is not self.primary:
            return
        n = self.counts[key]
        cfg = self.cfg
        edge = n in (cfg["warmup"], cfg["steps"])
        if edge and not self.equiv and self.models is not None and self.models.cuda_used():
            # CUDA runs asynchronously: the clock means something only after a sync,
            # so timing runs sync at the edges of the timed window only
            self.torch.cuda.synchronize()
        now = time.perf_counter()
        self.step_times.append(now)
        self.backwards_at_step.append(len(self.losses))
        if self.observer is not None:
            self.observer.post_step(n)
        if self.cfg["progress"] is not None and (
            now - self._progress_at >= PROGRESS_EVERY_S or n >= cfg["steps"]
        ):
            self._progress(n, now)
        if n >= cfg["steps"] and len(self.counts) == 1:
            self.finish("steps")

    def _progress(self, steps: int, now: float) -> None:
        """Steps done, for the parent's progress display (overwritten in place)."""
        self._progress_at = now
        with contextlib.suppress(OSError):
            if self._progress_fd is None:
                path = self.cfg["progress"]
                assert path is not None
                self._progress_fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o644)
            os.pwrite(self._progress_fd, b"%10d\n" % steps, 0)

    def scan_grads(self, optimizer: Any) -> None:
        """Which parameters reach this step with no gradient (None) or an all-zero
        one: what setting gradients to None instead of zero changes for the optimizer
        (it skips parameters whose gradient is None)."""
        torch = self.torch
        models = self.models
        assert models is not None
        step = self.primary_steps()
        self.grad_steps = max(self.grad_steps, step + 1)
        params = optimizer_params(optimizer)
        present = [p for p in params if p.grad is not None]
        zero: list[bool] = []
        if present:
            grads = [p.grad for p in present]
            with torch.no_grad():
                try:
                    # one reduction and one sync per step, whatever the model's size
                    mask = torch.stack(torch._foreach_norm(grads)).eq(0)
                    zero = mask.tolist() if bool(mask.any()) else []
                except (RuntimeError, TypeError, NotImplementedError):  # sparse, mixed devices
                    zero = [not bool(g.detach().ne(0).any()) for g in grads]
        if len(present) < len(params):
            for p in params:
                if p.grad is None:
                    key = models.key(p)
                    self.grad_none[key] = self.grad_none.get(key, 0) + 1
        for p, is_zero in zip(present, zero):
            if is_zero:
                key = models.key(p)
                self.grad_zero[key] = self.grad_zero.get(key, 0) + 1
                self.grad_first_zero.setdefault(key, step)

    def on_clip(self, function: str, params: list[Any]) -> None:
        """What a clipping call was given: the gradients' total norm, and whether a
        GradScaler had scaled them (and not unscaled them yet)."""
        torch = self.torch
        grads = [p.grad for p in params if p.grad is not None]
        if not grads or self.finishing:
            return
        with torch.no_grad():
            norms = torch.stack([torch.linalg.vector_norm(g.detach().double()) for g in grads])
            norm = float(torch.linalg.vector_norm(norms))
        scaler = next((s for s in self.scalers if s.is_enabled()), None)
        scale: float | None = None
        unscaled: bool | None = None
        if scaler is not None:
            scale = float(scaler.get_scale())
            ids = {id(p) for p in params}
            owners = [o for o in self.built if any(id(p) in ids for p in optimizer_params(o))]
            stages = [scaler._per_optimizer_states.get(id(o), {}).get("stage") for o in owners]
            unscaled = any(getattr(s, "name", None) == "UNSCALED" for s in stages)
        self.clips.append(
            {
                "step": self.primary_steps(),
                "function": function,
                "norm": norm,
                "scale": scale,
                "unscaled": unscaled,
            }
        )

    def on_save(self, obj: Any, f: Any) -> None:
        if self.finishing or self.models is None:
            return
        self.saves.append(
            {
                "step": self.primary_steps(),
                "path": records.path_label(f),
                "content": records.content_hash(obj, self.torch),
                "state_dicts": self.models.state_dicts(obj),
            }
        )

    # -- the stop -------------------------------------------------------------------

    def finish(self, reason: str) -> None:
        """Write the record and end the process here (see the module docstring)."""
        if self.finishing:
            return
        self.finishing = True
        code = 0
        try:
            records.write(self.cfg["out"], self.record(reason))
        except BaseException:
            code = EXIT_INTERNAL
            records.write_internal_error(self.cfg["out"])
        with contextlib.suppress(Exception):
            self._stop_loader_workers()
        records.flush(sys.stdout, sys.stderr)
        os._exit(code)

    def _stop_loader_workers(self) -> None:
        """End DataLoader workers the way the loader itself does, so that they exit
        on their own and remove multiprocessing's temporary directories; after
        `os._exit` they would linger for seconds and leave those behind."""
        torch = self.torch
        iterator = getattr(torch.utils.data.dataloader, "_MultiProcessingDataLoaderIter", None)
        if iterator is not None:
            for loader_iterator in records.live_instances(iterator):
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
            records.write(self.cfg["out"], self.record("error" if self.error else "exit"))
        except BaseException:
            records.write_internal_error(self.cfg["out"])

    def excepthook_wrapper(self, previous: Any) -> Any:
        def hook(kind: type[BaseException], value: BaseException, tb: TracebackType | None) -> None:
            self.record_error(kind, value, tb)
            previous(kind, value, tb)

        return hook

    def record_error(
        self, kind: type[BaseException], value: BaseException, tb: TracebackType | None
    ) -> None:
        if os.getpid() == self.pid and self.error is None:
            text = "".join(traceback.format_exception(kind, value, tb))
            self.error = {
                "type": kind.__name__,
                "message": str(value)[:2000],
                "traceback": text[-8000:],
                "needs_cuda": needs_cuda(text),
            }

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

    def record(self, reason: str) -> Record:
        torch = self.torch
        rank, world = self.rank()
        cuda_used = self.models is not None and self.models.cuda_used()
        record: Record = {
            "version": RECORD_VERSION,
            "pid": self.pid,
            "rank": rank,
            "world_size": world,
            "argv0": sys.argv[0] if sys.argv else "",
            "mode": self.cfg["mode"],
            "active": self.active,
            "stop_reason": reason,
            "steps": self.primary_steps(),
            "optimizer_steps": [self.counts[id(o)] for o in self.optimizers],
            "first_step_s": (self.step_times[0] - self.started) if self.step_times else None,
            "step_times": self.step_times,
            "backwards_at_step": self.backwards_at_step,
            "losses": self.losses,
            "error": self.error,
            "device": "cpu",
            "device_count": 0,
            "torch_version": str(getattr(torch, "__version__", "")),
            "threads": self.cfg["threads"],
            "memory": records.memory(torch, cuda_used),
            "batch_size": self.loaders.batch_size() if self.loaders else None,
            "loaders": self.loaders.records() if self.loaders else [],
        }
        if torch is None:
            return record
        if torch.cuda.is_available():
            record["device"] = "cuda"
            record["device_count"] = int(torch.cuda.device_count())
        if self.observer is not None:
            record["runtime"] = self.observer.record()
        if self.equiv and self.optimizers and self.models is not None:
            self._equivalence(record, rank)
        if self.equiv:
            record["init"] = self.init_events
            record["samplers"] = self.samplers
            record["saves"] = self.saves
            record["clips"] = self.clips
            record["grad_windows"] = self.grad_windows
            record["scales"] = self.scales
            record["logits_losses"] = self.logits_losses
            record["probability_losses"] = self.probability_losses
            record["ddp_syncs"] = self.ddp_syncs
        return record

    def _equivalence(self, record: Record, rank: int | None) -> None:
        models = self.models
        assert models is not None
        names = models.names(models.roots)
        record["grads"] = {
            "steps": self.grad_steps,
            "none": {models.key_name(k, names): v for k, v in self.grad_none.items()},
            "zero": {models.key_name(k, names): v for k, v in self.grad_zero.items()},
            "first_zero": {models.key_name(k, names): v for k, v in self.grad_first_zero.items()},
        }
        kinds, tensors = models.snapshot(self.optimizers)
        record["hashes"] = {
            kind: records.hash_tensors({n: t for n, t in tensors.items() if kinds[n] == kind})
            for kind in ("param", "buffer")
        }
        record["tensor_count"] = {
            kind: sum(1 for k in kinds.values() if k == kind) for kind in ("param", "buffer")
        }
        if self.cfg["save_state"] and rank in (None, 0):
            models.save(
                {"kinds": kinds, "tensors": tensors}, os.path.join(self.cfg["out"], "state.pt")
            )
        reference = self.cfg["reference"]
        if reference and os.path.exists(reference):
            record["diff"] = models.diff(kinds, tensors, reference)
