"""Run a function over many items in worker processes, results in input order.

libcst is CPU-bound Python, so threads would not help: processes it is, as in
TorchFix and Fixit. Workers are forked where the platform allows it, so they
start with libcst and the rules already imported (a spawned worker pays
~0.3 s for `import libcst`). Items are handed out heaviest first, in chunks of
similar total weight, so one huge file at the end of the list cannot leave
the other cores idle while it finishes.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
import sys
from collections.abc import Callable, Sequence
from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Any, TypeVar

T = TypeVar("T")
R = TypeVar("R")

CHUNKS_PER_WORKER = 8  # enough slices to balance uneven files, few enough to keep IPC cheap


def available_cpus() -> int:
    """CPUs this process may use: its affinity mask, capped by a cgroup v2 CPU quota
    (a CI container limited to 2 CPUs on a 64-core host must not start 64 workers)."""
    if hasattr(os, "sched_getaffinity"):
        count = len(os.sched_getaffinity(0))
    else:
        count = os.cpu_count() or 1
    try:
        with open("/sys/fs/cgroup/cpu.max", encoding="ascii") as fh:
            quota, period = fh.read().split()[:2]
        if quota != "max":
            count = min(count, -(-int(quota) // int(period)))
    except (OSError, ValueError):
        pass
    return max(1, count)


def _ignore_sigint(initializer: Callable[..., None] | None, initargs: tuple[Any, ...]) -> None:
    # Ctrl-C reaches the whole process group: the parent alone decides what to do.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    if initializer is not None:
        initializer(*initargs)


def _run_chunk(func: Callable[[T], R], chunk: list[tuple[int, T]]) -> list[tuple[int, R]]:
    return [(index, func(item)) for index, item in chunk]


def chunked(weights: Sequence[int], jobs: int) -> list[list[int]]:
    """Indices grouped into chunks of similar total weight, heaviest chunk first."""
    order = sorted(range(len(weights)), key=lambda i: -weights[i])
    target = max(1, sum(weights) // max(1, jobs * CHUNKS_PER_WORKER))
    chunks: list[list[int]] = []
    current: list[int] = []
    load = 0
    for index in order:
        current.append(index)
        load += weights[index]
        if load >= target:
            chunks.append(current)
            current, load = [], 0
    if current:
        chunks.append(current)
    return chunks


def _context() -> Any:
    # fork keeps the parent's imports; macOS and Windows only offer spawn safely
    if sys.platform.startswith("linux") and "fork" in multiprocessing.get_all_start_methods():
        return multiprocessing.get_context("fork")
    return multiprocessing.get_context()


def map_ordered(
    func: Callable[[T], R],
    items: Sequence[T],
    weights: Sequence[int],
    *,
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
) -> list[R]:
    """`[func(item) for item in items]`, computed by `jobs` worker processes.

    `func` must be a module-level function; `initializer(*initargs)` runs once in
    each worker (use it to hand over large shared state such as the settings).
    If a worker dies (killed, out of memory), the items it did not finish are
    computed in this process, so a result is never silently missing.
    """
    results: dict[int, R] = {}
    chunks = chunked(weights, jobs)
    workers = min(jobs, len(chunks))
    executor = ProcessPoolExecutor(
        max_workers=workers,
        mp_context=_context(),
        initializer=_ignore_sigint,
        initargs=(initializer, initargs),
    )
    pending: dict[Future[list[tuple[int, R]]], list[int]] = {}
    try:
        for chunk in chunks:
            future = executor.submit(_run_chunk, func, [(i, items[i]) for i in chunk])
            pending[future] = chunk
        while pending:
            done, _ = wait(pending, return_when=FIRST_COMPLETED)
            for future in done:
                del pending[future]
                results.update(future.result())
    except BrokenProcessPool:
        pass
    except BaseException:
        executor.shutdown(wait=False, cancel_futures=True)
        raise
    executor.shutdown(wait=True, cancel_futures=True)
    if initializer is not None and len(results) < len(items):
        initializer(*initargs)
    for index, item in enumerate(items):
        if index not in results:
            results[index] = func(item)
    return [results[index] for index in range(len(items))]
