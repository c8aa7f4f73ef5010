"""Start one run of a training script and collect what its processes recorded.

Each run gets a fresh copy of the script's directory as its working directory
(a checkpoint or output file one run writes cannot leak into the next, and the
user's files are never touched), a controlled environment (same seeds, same
thread settings on both sides of a comparison), and its own process group, so
that DataLoader workers still alive after the stop (`os._exit` leaves them to a
watchdog for seconds) are killed before the next run starts.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from accel_lint.verify.runner import CONFIG_ENV, EXIT_INTERNAL, needs_cuda

HOOK_DIR = Path(__file__).resolve().parent / "hook"

# Copy policy for the working directory: small files are copied; big files and
# big directories (data sets) are linked, and never-needed directories skipped.
FILE_COPY_LIMIT = 16 * 2**20
DIR_COPY_LIMIT = 256 * 2**20
SKIP_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".venv",
        "venv",
        ".tox",
        ".nox",
        "__pycache__",
        ".mypy_cache",
        ".ruff_cache",
        ".pytest_cache",
        ".accel_lint_cache",
        "node_modules",
        "wandb",
        "mlruns",
    }
)


@dataclass(frozen=True)
class Launch:
    """How the script is started: plain `python`, or torchrun with `nproc` ranks."""

    torchrun: bool = False
    nproc: int = 2


@dataclass(frozen=True)
class RunSpec:
    name: str  # shown in the progress display: "original", "fixed (ACL101)", ...
    text: str  # the script's source for this run
    mode: str = "equiv"  # "equiv" (recorded) or "time" (step clock only)
    launch: Launch = Launch()
    threads: int = 1
    seed_offset: int = 0
    perturb: bool = False
    save_state: bool = False
    dump_init: bool = False
    reference: Path | None = None  # the reference run's final state
    align_init: Path | None = None  # the reference run's initial weights


@dataclass(frozen=True)
class Target:
    """What every run of a session shares: the script and where it lives."""

    workdir: Path  # copied as each run's working directory
    script: Path  # relative to workdir
    args: tuple[str, ...]
    steps: int
    warmup: int
    timeout: float
    encoding: str = "utf-8"


@dataclass
class RunResult:
    spec: RunSpec
    status: str  # ok | crashed | timeout | needs-cuda | no-steps | internal
    returncode: int | None
    seconds: float
    records: list[dict[str, Any]] = field(default_factory=list)  # processes that trained
    message: str | None = None  # what went wrong, for the report
    output: str = ""  # tail of the run's stdout and stderr
    out_dir: Path | None = None
    other_load: float | None = None  # cores other processes kept busy during the run
    machine_device: str = "cpu"  # what torch saw in any process, even one that failed

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def state_file(self) -> Path | None:
        path = self.out_dir / "state.pt" if self.out_dir else None
        return path if path is not None and path.exists() else None

    @property
    def init_dir(self) -> Path | None:
        path = self.out_dir / "init" if self.out_dir else None
        return path if path is not None and path.exists() else None

    @property
    def first(self) -> dict[str, Any]:
        """The record of rank 0 (or the only training process)."""
        return self.records[0]

    @property
    def steps(self) -> int:
        return min((int(r["steps"]) for r in self.records), default=0)

    @property
    def losses(self) -> list[float]:
        """Per backward pass; with several ranks, the mean over ranks (each rank's
        loss is over its shard of the global batch)."""
        return mean_over_ranks([r.get("losses", []) for r in self.records])

    @property
    def device(self) -> str:
        return str(self.records[0].get("device", "cpu")) if self.records else self.machine_device


def mean_over_ranks(series: Sequence[Sequence[float]]) -> list[float]:
    if not series:
        return []
    if len(series) == 1:
        return list(series[0])
    n = min(len(s) for s in series)
    return [sum(s[i] for s in series) / len(series) for i in range(n)]


# -- processes ----------------------------------------------------------------------

_live: set[int] = set()
_live_lock = threading.Lock()


def kill_all() -> None:
    """Kill the process groups of every run still going (Ctrl-C, an error of ours)."""
    with _live_lock:
        groups = list(_live)
    for pgid in groups:
        _killpg(pgid)


def _killpg(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)


def command(target: Target, launch: Launch) -> list[str]:
    script = str(target.script)
    if launch.torchrun:
        # `python -m torch.distributed.run` is torchrun; --standalone picks a free port,
        # so runs may overlap. The fixed script chooses its backend (nccl or gloo).
        return [
            sys.executable,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={launch.nproc}",
            script,
            *target.args,
        ]
    return [sys.executable, script, *target.args]


# multiprocessing puts a DataLoader worker's socket at
# $TMPDIR/pymp-XXXXXXXX/listener-XXXXXXXX (32 bytes after TMPDIR), and a Unix
# socket path holds at most 107: past that the workers hang instead of failing.
SOCKET_PATH_MAX = 107
MULTIPROCESSING_SUFFIX = 32
_short_tmpdirs: list[str] = []


def socket_safe_tmpdir(tmpdir: str) -> str:
    """`tmpdir` when DataLoader workers can open their sockets under it, else a
    short directory under the system's /tmp made once per process and removed at
    its exit (the user's TMPDIR can be long; pytest's tmp_path under xdist is)."""
    if len(os.fsencode(tmpdir)) + MULTIPROCESSING_SUFFIX <= SOCKET_PATH_MAX:
        return tmpdir
    if not _short_tmpdirs:
        for root in ("/tmp", "/var/tmp", "/dev/shm"):
            if os.path.isdir(root) and os.access(root, os.W_OK | os.X_OK):
                made = tempfile.mkdtemp(prefix="acl-", dir=root)
                atexit.register(shutil.rmtree, made, True)
                _short_tmpdirs.append(made)
                break
        else:
            return tmpdir  # nowhere shorter to go; the script's own temporary files stay put
    return _short_tmpdirs[0]


def environment(
    config: dict[str, Any], threads: int, base: dict[str, str] | None = None
) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["TMPDIR"] = socket_safe_tmpdir(env.get("TMPDIR") or tempfile.gettempdir())
    previous = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(HOOK_DIR) + (os.pathsep + previous if previous else "")
    env[CONFIG_ENV] = json.dumps(config)
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    # Spinning OpenMP threads on a shared machine cost 25x on small ops (probe §3.1).
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    # Deterministic cuBLAS (CUDA only; harmless elsewhere).
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    return env


def run(target: Target, spec: RunSpec, scratch: Path) -> RunResult:
    """Run one variant of the script to its stop and read its records."""
    base = scratch / (re.sub(r"[^A-Za-z0-9_.+-]+", "_", spec.name).strip("_") or "run")
    run_dir = base
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = Path(f"{base}-{suffix}")
    work, out = run_dir / "work", run_dir / "out"
    copy_workdir(target.workdir, work)
    script = work / target.script
    script.write_bytes(spec.text.encode(target.encoding))
    out.mkdir(parents=True)
    config = {
        "out": str(out),
        "mode": spec.mode,
        "steps": target.steps,
        "warmup": target.warmup,
        "threads": spec.threads,
        "seed_offset": spec.seed_offset,
        "perturb": spec.perturb,
        "save_state": spec.save_state,
        "dump_init": str(out / "init") if spec.dump_init else None,
        "reference": str(spec.reference) if spec.reference else None,
        "align_init": str(spec.align_init) if spec.align_init else None,
    }
    # TMPDIR stays the user's unless it is too long for the Unix socket paths
    # DataLoader workers pass tensors through (socket_safe_tmpdir); never one inside
    # the scratch copy, which would always be too long.
    env = environment(config, spec.threads)
    busy_before, ours_before = _busy_cpu_seconds(), _children_cpu_seconds()
    started = time.perf_counter()
    timed_out = False
    with open(out / "output.txt", "wb") as output:
        proc = subprocess.Popen(
            command(target, spec.launch),
            cwd=work,
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=output,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        with _live_lock:
            _live.add(proc.pid)
        try:
            returncode: int | None = proc.wait(timeout=target.timeout)
        except subprocess.TimeoutExpired:
            timed_out = True
            _killpg(proc.pid)
            proc.wait()
            returncode = None
        finally:
            # the stop leaves DataLoader workers behind: end the whole group now
            _killpg(proc.pid)
            with _live_lock:
                _live.discard(proc.pid)
    seconds = time.perf_counter() - started
    other_load = None
    busy_after = _busy_cpu_seconds()
    if busy_before is not None and busy_after is not None and seconds > 0:
        ours = _children_cpu_seconds() - ours_before
        other_load = max(0.0, (busy_after - busy_before - ours) / seconds)
    tail = _tail(out / "output.txt")
    result = RunResult(
        spec, "ok", returncode, seconds, out_dir=out, output=tail, other_load=other_load
    )
    _classify(result, _read_records(out), timed_out, target)
    return result


def _classify(
    result: RunResult, records: list[dict[str, Any]], timed_out: bool, target: Target
) -> None:
    trained = sorted(
        (r for r in records if r.get("active")),
        key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r.get("pid", 0)),
    )
    errors = [r["error"] for r in records if r.get("error")]
    # a rank's own error explains more than the launcher's summary of it
    errors.sort(key=lambda e: "ChildFailedError" in str(e.get("type")))
    internal = sorted(result.out_dir.glob("internal_pid*.txt")) if result.out_dir else []
    result.records = trained
    result.machine_device = "cuda" if any(r.get("device") == "cuda" for r in records) else "cpu"
    if internal:
        result.status = "internal"
        result.message = (
            "the verifier's runner failed inside the script's process (a bug in accel-lint):\n"
            + internal[0].read_text(encoding="utf-8", errors="replace")
        )
        return
    if timed_out:
        reached = max((int(r.get("steps", 0)) for r in trained), default=0)
        result.status = "timeout"
        result.message = (
            f"did not finish within {target.timeout:g} s (no stop was reached; the script may hang)"
        )
        if reached:
            result.message += f"; it had made {reached} optimizer steps"
        return
    text = "\n".join(str(e.get("traceback", "")) for e in errors) + "\n" + result.output
    if result.returncode not in (0, None) or errors:
        if needs_cuda(text):
            result.status = "needs-cuda"
            result.message = "the script needs CUDA, and this machine has no CUDA device"
            return
        result.status = "internal" if result.returncode == EXIT_INTERNAL else "crashed"
        if errors:
            error = errors[0]
            result.message = f"{error.get('type')}: {error.get('message')}"
        else:
            result.message = f"exited with status {result.returncode}"
        return
    if not trained or all(int(r.get("steps", 0)) == 0 for r in trained):
        result.status = "no-steps"
        result.message = "the script ran to its end without stepping an optimizer"
        return
    if len({len(r.get("losses", [])) for r in trained}) > 1:
        result.status = "crashed"
        result.message = "the ranks recorded different numbers of backward passes"


def _busy_cpu_seconds() -> float | None:
    """CPU seconds the whole machine has spent busy (Linux), to tell whether other
    processes competed with a timing run."""
    try:
        with open("/proc/stat", encoding="ascii") as fh:
            fields = [int(v) for v in fh.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle + iowait
    busy = sum(fields[:8]) - idle  # guest time is already part of user time
    return busy / os.sysconf("SC_CLK_TCK")


def _children_cpu_seconds() -> float:
    """CPU seconds of this process's waited-for descendants. Only meaningful around
    a run that is the only one under way (timing runs go one at a time)."""
    try:
        import resource
    except ImportError:
        return 0.0
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _read_records(out: Path) -> list[dict[str, Any]]:
    return [r for r in (_read_json(p) for p in sorted(out.glob("*.json"))) if r is not None]


def _read_json(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


# -- working directories --------------------------------------------------------------


def copy_workdir(source: Path, dest: Path) -> None:
    """A fresh copy of `source`: files up to FILE_COPY_LIMIT and directories up to
    DIR_COPY_LIMIT are copied; larger ones are symlinked (data sets are read, not
    written, by a training script); caches and VCS directories are skipped."""
    dest.mkdir(parents=True)
    for entry in sorted(source.iterdir()):
        target = dest / entry.name
        if entry.is_symlink():
            os.symlink(os.readlink(entry), target)
        elif entry.is_dir():
            if entry.name in SKIP_DIRS:
                continue
            if _size_exceeds(entry, DIR_COPY_LIMIT):
                os.symlink(entry.resolve(), target, target_is_directory=True)
            else:
                copy_workdir(entry, target)
        elif entry.is_file():
            if entry.stat().st_size > FILE_COPY_LIMIT:
                os.symlink(entry.resolve(), target)
            else:
                shutil.copy2(entry, target)


def _size_exceeds(directory: Path, limit: int) -> bool:
    total = 0
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d not in SKIP_DIRS]
        for name in files:
            try:
                total += os.lstat(os.path.join(root, name)).st_size
            except OSError:
                continue
            if total > limit:
                return True
    return False


class Progress(Protocol):
    def started(self, spec: RunSpec) -> None: ...

    def finished(self, spec: RunSpec, result: RunResult) -> None: ...


class NoProgress:
    def started(self, spec: RunSpec) -> None:
        pass

    def finished(self, spec: RunSpec, result: RunResult) -> None:
        pass


def run_all(
    target: Target, specs: Iterable[RunSpec], scratch: Path, jobs: int, progress: Progress
) -> list[RunResult]:
    """Run independent runs, `jobs` at a time, results in the order of `specs`.
    Only equivalence runs go in parallel: timing runs go one by one."""

    def one(spec: RunSpec) -> RunResult:
        progress.started(spec)
        result = run(target, spec, scratch)
        progress.finished(spec, result)
        return result

    specs = list(specs)
    if jobs <= 1 or len(specs) <= 1:
        return [one(spec) for spec in specs]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=jobs) as pool:
        try:
            return list(pool.map(one, specs))
        except BaseException:  # Ctrl-C: end the runs, or leaving the pool waits for them
            kill_all()
            raise
