"""Writing what a process recorded, and the measurements the record carries that
need no model: memory, hashes of saved objects, paths."""

from __future__ import annotations

import contextlib
import ctypes
import gc
import hashlib
import itertools
import json
import os
import sys
import traceback
import warnings
from typing import Any

from ..protocol import MemoryRecord, Record


def write(out: str, record: Record) -> None:
    rank = record.get("rank")
    name = f"rank{rank}_pid{record['pid']}" if rank is not None else f"proc_pid{record['pid']}"
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, name + ".json")
    tmp = path + ".tmp"
    with open(tmp, "w", encoding="utf-8") as fh:
        json.dump(record, fh)
    os.replace(tmp, path)  # the parent reads complete records only


def write_internal_error(out: str) -> None:
    """The runner failed (a bug of ours): the parent reports it as such."""
    try:
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, f"internal_pid{os.getpid()}.txt"), "w", encoding="utf-8") as fh:
            fh.write(traceback.format_exc())
    except OSError:
        pass


def flush(*streams: Any) -> None:
    for stream in streams:
        with contextlib.suppress(OSError, ValueError):
            stream.flush()


def memory(torch: Any, cuda_used: bool) -> MemoryRecord:
    """Peak resident memory of this process plus its children (DataLoader workers
    still running at the stop count by their own peak; their shared pages count
    in each), and the CUDA allocator's peak when CUDA was used."""
    try:
        import resource

        unit = 1 if sys.platform == "darwin" else 1024
        own = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * unit
        reaped = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * unit
    except ImportError:  # Windows
        own, reaped = 0, 0
    own = max(own, _peak_rss("self"))
    live = sum(_peak_rss(str(pid)) for pid in _child_pids())
    device: int | None = None
    if cuda_used:
        device = sum(
            int(torch.cuda.max_memory_allocated(i)) for i in range(torch.cuda.device_count())
        )
    return {"host_peak_bytes": own + max(live, reaped), "device_peak_bytes": device}


def _child_pids() -> list[int]:
    pids: list[int] = []
    try:
        for task in os.listdir("/proc/self/task"):
            with open(f"/proc/self/task/{task}/children", encoding="ascii") as fh:
                pids.extend(int(p) for p in fh.read().split())
    except OSError:
        pass
    return pids


def _peak_rss(pid: str) -> int:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError):
        pass
    return 0


def tensor_bytes(t: Any) -> bytes:
    t = t.detach().cpu().contiguous()
    size = t.numel() * t.element_size()
    return ctypes.string_at(t.data_ptr(), size) if size else b""


def hash_tensors(tensors: dict[str, Any]) -> str:
    digest = hashlib.sha256()
    for name in sorted(tensors):
        t = tensors[name]
        digest.update(f"{name}|{t.dtype}|{tuple(t.shape)}|".encode())
        digest.update(tensor_bytes(t))
    return digest.hexdigest()


def content_hash(obj: Any, torch: Any) -> str:
    """A hash of a saved object's content, not of the file's bytes: torch's zip
    format carries a per-save serialization id."""
    digest = hashlib.sha256()
    _feed(digest, obj, torch, 0)
    return digest.hexdigest()[:16]


def _feed(digest: Any, obj: Any, torch: Any, depth: int) -> None:
    if depth > 20:
        digest.update(b"<deep>")
    elif isinstance(obj, torch.Tensor):
        digest.update(f"T{obj.dtype}{tuple(obj.shape)}".encode())
        digest.update(tensor_bytes(obj))
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


def path_label(f: Any) -> str:
    if isinstance(f, (str, os.PathLike)):
        path = os.path.abspath(os.fspath(f))
        cwd = os.getcwd()
        return os.path.relpath(path, cwd) if path.startswith(cwd + os.sep) else path
    return "<stream>"


def strip_wrappers(name: str) -> str:
    """Names as the user's model has them: wrappers' prefixes are not part of it."""
    name = name.replace("_orig_mod.", "")
    while name.startswith("module."):
        name = name[len("module.") :]
    return name


def user_frame(skip: tuple[str, ...]) -> tuple[str, int] | None:
    """The innermost frame whose file is under none of the `skip` prefixes (torch's
    package, this runner): where the script called what is being recorded."""
    frame: Any = sys._getframe(1)
    while frame is not None:
        filename = frame.f_code.co_filename
        if not filename.startswith(skip) and not filename.startswith("<"):
            return filename, frame.f_lineno
        frame = frame.f_back
    return None


def live_instances(cls: type) -> list[Any]:
    """Every live object that is an instance of `cls`, from the garbage collector's
    list. The test runs inside `filter` (C calling C): a comprehension's
    `isinstance` is a Python-level call that the probe's profiler, when on, records
    as one event per object (570,000 events on a script that imported
    `torch._dynamo`, seconds to stop the profiler and to match its patterns).
    The test is on each object's type: `isinstance` on a dead weak proxy (dynamo
    keeps some) raises ReferenceError."""
    with warnings.catch_warnings():  # isinstance() on deprecated torch objects warns
        warnings.simplefilter("ignore")
        objects = gc.get_objects()
        return list(itertools.compress(objects, map(cls.__subclasscheck__, map(type, objects))))
