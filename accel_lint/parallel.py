"""Run a function over many items in worker processes, results in input order.

libcst is CPU-bound Python, so threads would not help: processes it is, as in
TorchFix and Fixit. Workers are forked where the platform allows it, so they
start with libcst and the rules already imported (a spawned worker pays
~0.3 s for `import libcst`). Items are handed out heaviest first, in chunks of
similar total weight, so one huge file at the end of the list cannot leave
the other cores idle while it finishes.

On Linux the workers are plain forks that read chunks from a pipe and write
results to another (`_forked`): `concurrent.futures` and
`multiprocessing.connection` cost 83 M instructions to import, a third of what
`--jobs 2` executed beyond `--jobs 1` on a 300-file tree, and their pool adds
two threads to the parent. Elsewhere (spawn) `ProcessPoolExecutor` runs them.
"""

from __future__ import annotations

import contextlib
import functools
import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:  # imported where used: a forked run never loads them
    from concurrent.futures import ProcessPoolExecutor
    from multiprocessing.connection import Connection
    from multiprocessing.process import BaseProcess

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
    # A worker is born with SIGINT blocked (`_sigint_blocked`), so a Ctrl-C between
    # its fork and this line cannot raise KeyboardInterrupt in it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    # the parent's SIGTERM handler (`_terminate_on_sigterm`) is not the worker's:
    # terminate() must end a worker, not raise inside the file it checks
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    _die_with_parent()
    if hasattr(signal, "pthread_sigmask"):
        signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    if initializer is not None:
        initializer(*initargs)


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """On Linux, the kernel kills this worker when its parent dies, however it dies
    (SIGKILL, the out-of-memory killer): a worker never checks on at full CPU for
    nobody."""
    if not sys.platform.startswith("linux"):
        return
    parent = os.getppid()
    prctl = _prctl()
    if prctl is None:  # pragma: no cover - no prctl
        return
    prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:  # the parent died before prctl took effect
        os._exit(1)


@functools.cache
def _prctl() -> Callable[..., int] | None:
    """libc's `prctl`, looked up once: `_forked` asks before forking, so its workers
    inherit it instead of each importing ctypes (8 M instructions)."""
    try:
        import ctypes

        prctl: Callable[..., int] = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # pragma: no cover - no prctl
        return None
    return prctl


@contextlib.contextmanager
def _terminate_on_sigterm() -> Iterator[None]:
    """SIGTERM (systemd, `docker stop`, CI runners) raises SystemExit(143) in the
    main thread while workers run, so the way out ends them (`_stop`) as Ctrl-C does;
    the default action would end this process alone and leave them running."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.getsignal(signal.SIGTERM)
    if previous not in (signal.SIG_DFL, None):
        yield  # someone else's handler (an embedding program): theirs to decide
        return

    def terminated(signum: int, frame: object) -> None:
        raise SystemExit(128 + signal.SIGTERM)

    signal.signal(signal.SIGTERM, terminated)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


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


def _forks() -> bool:
    # fork keeps the parent's imports; macOS and Windows only offer spawn safely
    return sys.platform.startswith("linux") and hasattr(os, "fork")


def _context() -> Any:
    import multiprocessing

    return multiprocessing.get_context("fork" if _forks() else None)


def map_ordered(
    func: Callable[[T], R],
    items: Sequence[T],
    weights: Sequence[int],
    *,
    jobs: int,
    initializer: Callable[..., None] | None = None,
    initargs: tuple[Any, ...] = (),
    on_crash: Callable[[T, str], R] | None = None,
) -> list[R]:
    """`[func(item) for item in items]`, computed by `jobs` worker processes.

    `func` must be a module-level function; `initializer(*initargs)` runs once in
    each worker (use it to hand over large shared state such as the settings).
    If a worker dies (a crash in native code, the out-of-memory killer), the items
    it did not finish run again, each in a process of its own, so the others
    still finish and the culprit is known: an item whose process dies again gets
    `on_crash(item, how it died)` (without `on_crash`, it is computed in this
    process). A result is never silently missing.
    """
    with _terminate_on_sigterm():
        return _map_ordered(func, items, weights, jobs, initializer, initargs, on_crash)


def _map_ordered(
    func: Callable[[T], R],
    items: Sequence[T],
    weights: Sequence[int],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    on_crash: Callable[[T, str], R] | None,
) -> list[R]:
    chunks = chunked(weights, jobs)
    if _forks():
        results = _forked(func, items, chunks, jobs, initializer, initargs)
    else:
        results = _pooled(func, items, chunks, jobs, initializer, initargs)
    unfinished = [index for index in range(len(items)) if index not in results]
    if unfinished:
        crashed = _one_per_process(func, items, unfinished, jobs, initializer, initargs, results)
        if crashed and on_crash is None and initializer is not None:
            initializer(*initargs)
        for index, how in crashed.items():
            item = items[index]
            results[index] = func(item) if on_crash is None else on_crash(item, how)
    return [results[index] for index in range(len(items))]


class _Worker:
    """A forked worker: its pid, the pipe its chunks go down, the pipe its results
    come up, and the chunk it is on."""

    __slots__ = ("chunk", "pid", "results", "tasks")

    def __init__(self, pid: int, tasks: int, results: int) -> None:
        self.pid = pid
        self.tasks = tasks
        self.results = results
        self.chunk: list[int] | None = None


def _forked(
    func: Callable[[T], R],
    items: Sequence[T],
    chunks: list[list[int]],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> dict[int, R]:
    """The results of the chunks' items that came back (by index), from `jobs`
    forked workers, each handed its next chunk when it returns one. A worker that
    dies loses its chunk (the caller runs those items again, one per process); the
    chunks it would have had go to the others."""
    import select

    results: dict[int, R] = {}
    queue = list(reversed(chunks))
    busy: dict[int, _Worker] = {}  # by the descriptor its results come up
    forked: list[_Worker] = []
    poller = select.poll()
    _prctl()
    try:
        with _sigint_blocked():
            _flush_std_streams()  # or a worker's exit would write them again
            for _ in range(min(jobs, len(queue))):
                worker = _fork_worker(func, initializer, initargs, forked)
                forked.append(worker)
                busy[worker.results] = worker
                poller.register(worker.results, select.POLLIN)
        for worker in forked:
            _hand_out(worker, items, queue, busy, poller)
        while busy:
            for fd, _ in poller.poll():
                worker = busy[fd]
                try:
                    done, value = _receive(fd)
                except EOFError:  # it died: its chunk runs again, an item per process
                    _retire(worker, busy, poller)
                    continue
                if not done:
                    exc, trace = value
                    raise exc from RemoteTraceback(trace)
                results.update(value)
                _hand_out(worker, items, queue, busy, poller)
    except BaseException:
        for worker in forked:
            with contextlib.suppress(OSError):
                os.kill(worker.pid, signal.SIGTERM)
        raise
    finally:
        for worker in forked:
            for fd in (worker.tasks, worker.results):
                with contextlib.suppress(OSError):
                    os.close(fd)
            with contextlib.suppress(ChildProcessError):
                os.waitpid(worker.pid, 0)
    return results


class RemoteTraceback(Exception):
    """The traceback, in the worker, of an exception a worker's function raised."""

    def __str__(self) -> str:
        return f"in the worker process:\n{self.args[0]}"


def _hand_out(
    worker: _Worker,
    items: Sequence[T],
    queue: list[list[int]],
    busy: dict[int, _Worker],
    poller: Any,
) -> None:
    """The next chunk to `worker`, or word to stop when none is left."""
    worker.chunk = queue.pop() if queue else None
    task = None if worker.chunk is None else [(i, items[i]) for i in worker.chunk]
    try:
        _send(worker.tasks, pickle.dumps(task, pickle.HIGHEST_PROTOCOL))
    except OSError:  # it died before it could take the chunk: another will
        if worker.chunk is not None:
            queue.append(worker.chunk)
        worker.chunk = None
    if worker.chunk is None:
        _retire(worker, busy, poller)


def _retire(worker: _Worker, busy: dict[int, _Worker], poller: Any) -> None:
    busy.pop(worker.results, None)
    with contextlib.suppress(KeyError, ValueError):
        poller.unregister(worker.results)


def _fork_worker(
    func: Callable[[T], R],
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    earlier: list[_Worker],
) -> _Worker:
    tasks_read, tasks_write = os.pipe()
    results_read, results_write = os.pipe()
    pid = os.fork()
    if pid == 0:  # the worker: it never returns to the caller's code
        code = 1
        try:
            for fd in (tasks_write, results_read):
                os.close(fd)
            for other in earlier:  # the parent's ends of the other workers' pipes
                os.close(other.tasks)
                os.close(other.results)
            _ignore_sigint(initializer, initargs)
            _serve(func, tasks_read, results_write)
            code = 0
        except EOFError:  # the parent is gone
            pass
        except BaseException:
            with contextlib.suppress(BaseException):
                import traceback

                traceback.print_exc()
        finally:
            _flush_std_streams()
            os._exit(code)
    os.close(tasks_read)
    os.close(results_write)
    return _Worker(pid, tasks_write, results_read)


def _serve(func: Callable[[T], R], tasks: int, results: int) -> None:
    """A worker's loop: a chunk in, its results (or the exception) out, until the
    parent sends None."""
    while True:
        chunk = _receive(tasks)
        if chunk is None:
            return
        try:
            outcome: tuple[bool, Any] = (True, _run_chunk(func, chunk))
        except BaseException as exc:  # handed to the parent, which raises it
            outcome = (False, (exc, _format_exc()))
        try:
            data = pickle.dumps(outcome, pickle.HIGHEST_PROTOCOL)
        except Exception as exc:  # an exception or a result pickle cannot carry
            message = f"a worker's result could not be sent back: {exc!r}"
            if not outcome[0]:
                message += f"\n{outcome[1][1]}"
            data = pickle.dumps((False, (RuntimeError(message), "")), pickle.HIGHEST_PROTOCOL)
        _send(results, data)


def _format_exc() -> str:
    import traceback

    return traceback.format_exc()


def _send(fd: int, data: bytes) -> None:
    """`data` down a pipe, after its length (8 bytes)."""
    for part in (len(data).to_bytes(8, "little"), data):
        view = memoryview(part)
        while view:
            view = view[os.write(fd, view) :]


def _receive(fd: int) -> Any:
    """What `_send` sent, unpickled; EOFError when the other end closed first."""
    size = int.from_bytes(_read_exactly(fd, 8), "little")
    return pickle.loads(_read_exactly(fd, size))


def _read_exactly(fd: int, size: int) -> bytearray:
    buffer = bytearray(size)
    view = memoryview(buffer)
    got = 0
    while got < size:
        count = os.readv(fd, [view[got:]])
        if count == 0:
            raise EOFError
        got += count
    return buffer


def _flush_std_streams() -> None:
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()


def _pooled(
    func: Callable[[T], R],
    items: Sequence[T],
    chunks: list[list[int]],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> dict[int, R]:
    """`_forked`'s results from a `ProcessPoolExecutor` (where workers are spawned);
    a worker that dies breaks the pool and every chunk not returned yet is left
    to the caller."""
    from concurrent.futures import FIRST_COMPLETED, Future, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    results: dict[int, R] = {}
    executor = ProcessPoolExecutor(
        max_workers=min(jobs, len(chunks)) or 1,
        mp_context=_context(),
        initializer=_ignore_sigint,
        initargs=(initializer, initargs),
    )
    pending: dict[Future[list[tuple[int, R]]], list[int]] = {}
    try:
        with _sigint_blocked():  # the workers are forked here, on the first submit
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
        _stop(executor)
        raise
    executor.shutdown(wait=True, cancel_futures=True)
    return results


@contextlib.contextmanager
def _sigint_blocked() -> Iterator[None]:
    """SIGINT held back while workers are forked: they inherit the mask and unblock it
    only once they ignore it; a Ctrl-C meanwhile reaches this process when the block
    ends, as a KeyboardInterrupt that stops the workers."""
    if not hasattr(signal, "pthread_sigmask") or threading.current_thread() is not (
        threading.main_thread()
    ):
        yield
        return
    previous = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
    try:
        yield
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, previous)


# Set once a pool's workers were ended mid-run (Ctrl-C, SIGTERM). The pool's manager
# thread may then wait for good on a result a killed worker was writing (the pipe
# stays open: this process holds its other end), and the interpreter joins that
# thread at exit: the command leaves with `exit_if_abandoned` instead.
abandoned = False


def exit_if_abandoned(code: int) -> None:
    """After a pool was abandoned: flush what is written and exit at once, without
    the interpreter's shutdown (it would join the pool's manager thread)."""
    if not abandoned:
        return
    _flush_std_streams()
    os._exit(code)


def _stop(executor: ProcessPoolExecutor) -> None:
    """Cancel what has not started and end the workers now (Ctrl-C): waiting for
    a worker to finish a large file would keep the user waiting."""
    global abandoned
    abandoned = True
    # taken before shutdown(), which forgets them (`_processes = None`)
    processes = list((getattr(executor, "_processes", None) or {}).values())
    for process in processes:
        with contextlib.suppress(Exception):
            process.terminate()
    executor.shutdown(wait=False, cancel_futures=True)


def _isolated(
    conn: Connection,
    func: Callable[[T], R],
    item: T,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
) -> None:
    _ignore_sigint(initializer, initargs)
    try:
        outcome: tuple[bool, Any] = (True, func(item))
    except BaseException as exc:  # handed to the parent, which raises it
        outcome = (False, exc)
    conn.send(outcome)
    conn.close()


def _one_per_process(
    func: Callable[[T], R],
    items: Sequence[T],
    indices: list[int],
    jobs: int,
    initializer: Callable[..., None] | None,
    initargs: tuple[Any, ...],
    results: dict[int, R],
) -> dict[int, str]:
    """Run each of `indices` in a process of its own, `jobs` at a time; results go
    into `results`. Returns how the process died for each item whose process did."""
    import multiprocessing.connection

    context = _context()
    queue = list(reversed(indices))
    running: dict[int, tuple[BaseProcess, Connection]] = {}
    crashed: dict[int, str] = {}
    try:
        while queue or running:
            while queue and len(running) < jobs:
                index = queue.pop()
                receiver, sender = context.Pipe(duplex=False)
                process = context.Process(
                    target=_isolated,
                    args=(sender, func, items[index], initializer, initargs),
                    daemon=True,
                )
                process.start()
                sender.close()
                running[index] = (process, receiver)
            multiprocessing.connection.wait(
                [p.sentinel for p, _ in running.values()] + [c for _, c in running.values()]
            )
            for index, (process, receiver) in list(running.items()):
                outcome: tuple[bool, Any] | None = None
                if receiver.poll():
                    try:
                        outcome = receiver.recv()
                    except (EOFError, OSError):
                        outcome = None  # died while sending
                elif process.is_alive():
                    continue
                process.join()
                receiver.close()
                del running[index]
                if outcome is None:
                    crashed[index] = _how_it_died(process.exitcode)
                elif outcome[0]:
                    results[index] = outcome[1]
                else:
                    raise outcome[1]
    finally:
        for process, receiver in running.values():
            process.terminate()
            receiver.close()
    return crashed


def _how_it_died(exitcode: int | None) -> str:
    if exitcode is not None and exitcode < 0:
        try:
            name = signal.Signals(-exitcode).name
        except ValueError:
            name = f"signal {-exitcode}"
        return f"the worker process was killed by {name}"
    return f"the worker process exited with status {exitcode}"
