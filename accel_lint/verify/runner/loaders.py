"""The DataLoaders a script builds: their settings, where they were built, how
long the training loop waits for their batches, and which one feeds training.

Recorded in every mode: a wrapper per loader, per epoch and per batch (two
clock reads, well under a microsecond). The wait is counted from the first
optimizer step on, so worker start-up and the first batch stay out of it.
"""

from __future__ import annotations

import os
import time
from typing import Any

from ..protocol import LoaderRecord
from .base import Host
from .records import user_frame

HERE = os.path.dirname(os.path.abspath(__file__))


class Loaders:
    def __init__(self, runner: Host) -> None:
        self.runner = runner
        self.loaders: list[LoaderRecord] = []
        self.current: int | None = None  # the loader that handed out the last batch
        self.training: int | None = None  # the one current at the first step

    def install(self, torch: Any) -> None:
        data = torch.utils.data
        loader_class = data.DataLoader
        iterator_class = data.dataloader._BaseDataLoaderIter
        skip = (os.path.dirname(torch.__file__) + os.sep, HERE + os.sep)
        loaders = self
        original_init = loader_class.__init__
        original_iter = loader_class.__iter__
        original_next = iterator_class.__next__

        def __init__(loader: Any, *args: Any, **kwargs: Any) -> None:
            original_init(loader, *args, **kwargs)
            where = user_frame(skip)
            loader._accel_lint_ordinal = loaders.built(loader, torch, where)

        def __iter__(loader: Any) -> Any:
            observer = loaders.runner.observer
            if observer is not None:  # the profiler must see the loader's __iter__
                observer.start()
            iterator = original_iter(loader)
            ordinal = getattr(loader, "_accel_lint_ordinal", None)
            if ordinal is not None:
                iterator._accel_lint_ordinal = ordinal
                loaders.loaders[ordinal]["passes"] += 1
            return iterator

        def __next__(iterator: Any) -> Any:
            ordinal = getattr(iterator, "_accel_lint_ordinal", None)
            loaders.current = ordinal
            if ordinal is None or loaders.runner.primary is None:
                return original_next(iterator)
            started = time.perf_counter()
            try:
                return original_next(iterator)
            finally:
                record = loaders.loaders[ordinal]
                record["wait_s"] += time.perf_counter() - started
                record["batches"] += 1

        loader_class.__init__ = __init__
        loader_class.__iter__ = __iter__
        iterator_class.__next__ = __next__

    def built(self, loader: Any, torch: Any, where: tuple[str, int] | None) -> int:
        dataset = loader.dataset
        in_memory = isinstance(dataset, (torch.utils.data.TensorDataset, torch.Tensor, list, tuple))
        self.loaders.append(
            {
                "ordinal": len(self.loaders),
                "file": where[0] if where else "",
                "row": where[1] if where else 0,
                "num_workers": int(loader.num_workers),
                "pin_memory": bool(loader.pin_memory),
                "persistent_workers": bool(loader.persistent_workers),
                "prefetch_factor": loader.prefetch_factor,
                "batch_size": loader.batch_size,
                "dataset": type(dataset).__name__,
                "in_memory": in_memory,
                "passes": 0,
                "batches": 0,
                "wait_s": 0.0,
                "trains": False,
            }
        )
        return len(self.loaders) - 1

    def first_step(self) -> None:
        self.training = self.current
        self.step()

    def step(self) -> None:
        if self.current is not None:
            self.loaders[self.current]["trains"] = True

    def wait_s(self) -> float:
        return sum(r["wait_s"] for r in self.loaders)

    def batch_size(self) -> int | None:
        if self.training is None:
            return None
        return self.loaders[self.training]["batch_size"]

    def records(self) -> list[LoaderRecord]:
        return self.loaders
