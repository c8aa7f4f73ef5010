"""Start one run of a training script and collect what its processes recorded.

Each run gets a fresh copy of the script's directory as its working directory
(`workdir`), a controlled environment (the same seeds and thread settings on
both sides of a comparison), and its own session, so that everything it started
is ended when it stops (`processes`): DataLoader workers that `os._exit` leaves
to a watchdog for seconds, and anything that detached.
"""

from __future__ import annotations

import atexit
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from accel_lint.verify import processes
from accel_lint.verify.protocol import (
    CONFIG_ENV,
    EQUIV,
    EXIT_INTERNAL,
    RUN_MARKER_ENV,
    Record,
    RefusedWrite,
    RunConfig,
    needs_cuda,
    read_refused_writes,
)
from accel_lint.verify.warm import ServerGone, WarmInterpreter
from accel_lint.verify.workdir import copy_workdir

HOOK_DIR = Path(__file__).resolve().parent / "hook"
# steps the probe's profiler watches, from the first loader pass on: enough for
# every pattern (a gradient reset needs gradients from an earlier step), and
# cheap to post-process and match
PROFILED_STEPS = 3


@dataclass(frozen=True)
class Launch:
    """How the script is started: plain `python`, or torchrun with `nproc` ranks."""

    torchrun: bool = False
    nproc: int = 2


@dataclass(frozen=True)
class RunSpec:
    name: str  # shown in the progress display: "original", "fixed (ACL101 only)", ...
    text: str  # the script's source for this run
    mode: str = EQUIV
    launch: Launch = Launch()
    threads: int = 1
    seed_offset: int = 0
    perturb: bool = False
    save_state: bool = False
    dump_init: bool = False
    reference: Path | None = None  # the reference run's final state
    align_init: Path | None = None  # the reference run's initial weights
    steps: int | None = None  # None: the target's
    role: str = "equivalence"  # what the run is for: equivalence | noise | timing | probe
    variant: str = "original"  # which script: "original", "fixed", "ACL101"...


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
    python: str = sys.executable  # the interpreter that runs the script


@dataclass
class RunResult:
    spec: RunSpec
    status: str  # ok | crashed | timeout | needs-cuda | no-steps | internal
    returncode: int | None
    seconds: float
    records: list[Record] = field(default_factory=list)  # processes that trained
    message: str | None = None  # what went wrong, for the report
    output: str = ""  # tail of the run's stdout and stderr
    out_dir: Path | None = None
    other_load: float | None = None  # cores other processes kept busy during the run
    machine_device: str = "cpu"  # what torch saw in any process, even one that failed
    copied_bytes: int = 0
    cpu_seconds: float | None = None  # the run's processes (None: not measurable)
    error: dict[str, Any] | None = None  # the error record of the failing process
    hint: str | None = None  # what the user can do about a failure of this kind
    # writes the runner refused: they resolved outside the run's copy (runner.confine)
    refused_writes: list[RefusedWrite] = field(default_factory=list)

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
    def first(self) -> Record:
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


def command(target: Target, launch: Launch) -> list[str]:
    script = str(target.script)
    if launch.torchrun:
        # `python -m torch.distributed.run` is torchrun; --standalone picks a free port,
        # so runs may overlap. The fixed script chooses its backend (nccl or gloo).
        return [
            target.python,
            "-m",
            "torch.distributed.run",
            "--standalone",
            f"--nproc_per_node={launch.nproc}",
            script,
            *target.args,
        ]
    return [target.python, script, *target.args]


# multiprocessing puts a DataLoader worker's socket at $TMPDIR/pymp-<8 random
# characters>/listener-<8 random characters> (32 bytes after TMPDIR), and a Unix
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


_inductor_dirs: list[str] = []


def inductor_cache_dir(tmpdir: str) -> str:
    """Where the runs' torch keeps its compile cache: one directory per verify
    process, removed at its exit (torch's default, $TMPDIR/torchinductor_<user>, was
    left behind, empty, by every verification)."""
    if not _inductor_dirs:
        made = tempfile.mkdtemp(prefix="accel-lint-inductor-", dir=tmpdir)
        atexit.register(shutil.rmtree, made, True)
        _inductor_dirs.append(made)
    return _inductor_dirs[0]


def environment(
    config: RunConfig | None, threads: int, marker: str, base: dict[str, str] | None = None
) -> dict[str, str]:
    env = dict(os.environ if base is None else base)
    env["TMPDIR"] = socket_safe_tmpdir(env.get("TMPDIR") or tempfile.gettempdir())
    if "TORCHINDUCTOR_CACHE_DIR" not in env:  # a user's own choice is kept
        env["TORCHINDUCTOR_CACHE_DIR"] = inductor_cache_dir(env["TMPDIR"])
    previous = env.get("PYTHONPATH")
    env["PYTHONPATH"] = str(HOOK_DIR) + (os.pathsep + previous if previous else "")
    if config is not None:
        env[CONFIG_ENV] = json.dumps(config)
    env[RUN_MARKER_ENV] = marker
    env["PYTHONHASHSEED"] = "0"
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    for name in ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS"):
        env[name] = str(threads)
    # Spinning OpenMP threads on a shared machine cost 25x on small ops
    # (docs/verifier.md, "Threads").
    env["OMP_WAIT_POLICY"] = "PASSIVE"
    # Deterministic cuBLAS (CUDA only; harmless elsewhere).
    env["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    return env


def run_dir(scratch: Path, name: str) -> Path:
    base = scratch / (re.sub(r"[^A-Za-z0-9_.+-]+", "_", name).strip("_") or "run")
    path, suffix = base, 1
    while path.exists():
        suffix += 1
        path = Path(f"{base}-{suffix}")
    return path


def prepare(target: Target, spec: RunSpec, scratch: Path) -> tuple[Path, Path, int]:
    """The run's working copy with its version of the script, and its output folder."""
    directory = run_dir(scratch, spec.name)
    work, out = directory / "work", directory / "out"
    copied = copy_workdir(target.workdir, work)
    (work / target.script).write_bytes(spec.text.encode(target.encoding))
    out.mkdir(parents=True)
    return work, out, copied


def config_for(target: Target, spec: RunSpec, out: Path) -> RunConfig:
    return {
        "out": str(out),
        "mode": spec.mode,
        "steps": spec.steps or target.steps,
        "warmup": target.warmup,
        "seed": 0,
        "seed_offset": spec.seed_offset,
        "threads": spec.threads,
        "perturb": spec.perturb,
        "save_state": spec.save_state,
        "reference": str(spec.reference) if spec.reference else None,
        "dump_init": str(out / "init") if spec.dump_init else None,
        "align_init": str(spec.align_init) if spec.align_init else None,
        "progress": str(out / "progress"),
        "profile_steps": PROFILED_STEPS,
    }


def run(
    target: Target,
    spec: RunSpec,
    scratch: Path,
    server: WarmInterpreter | None = None,
    progress: Progress | None = None,
) -> RunResult:
    """Run one variant of the script to its stop and read its records: forked by
    the warm interpreter when there is one (torchrun runs start their own ranks),
    else as a new process."""
    work, out, copied = prepare(target, spec, scratch)
    if progress is not None:
        progress.started(spec, out / "progress")
    marker = processes.new_marker()
    # TMPDIR stays the user's unless it is too long for the Unix socket paths
    # DataLoader workers pass tensors through (socket_safe_tmpdir); never one inside
    # the scratch copy, which would always be too long (docs/verifier.md, "Socket paths").
    env = environment(config_for(target, spec, out), spec.threads, marker)
    busy_before = _busy_cpu_seconds()
    started = time.perf_counter()
    outcome: tuple[int | None, bool, float | None] | None = None
    if server is not None and server.usable and not spec.launch.torchrun:
        try:
            outcome = _forked(server, target, work, out, env, marker)
        except ServerGone:
            outcome = None  # started the ordinary way below
    if outcome is None:
        outcome = _started(target, spec, work, out, env, marker)
    returncode, timed_out, cpu = outcome
    seconds = time.perf_counter() - started
    other_load = None
    busy_after = _busy_cpu_seconds()
    if busy_before is not None and busy_after is not None and seconds > 0 and cpu is not None:
        other_load = max(0.0, (busy_after - busy_before - cpu) / seconds)
    result = RunResult(
        spec,
        "ok",
        returncode,
        seconds,
        out_dir=out,
        output=_tail(out / "output.txt"),
        other_load=other_load,
        copied_bytes=copied,
        cpu_seconds=cpu,
    )
    classify(result, read_records(out), timed_out, target.timeout)
    return result


def _started(
    target: Target, spec: RunSpec, work: Path, out: Path, env: dict[str, str], marker: str
) -> tuple[int | None, bool, float | None]:
    with open(out / "output.txt", "wb") as output:
        with processes.spawning():  # not taken for an orphan before it is registered
            proc = subprocess.Popen(
                command(target, spec.launch),
                cwd=work,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=output,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
            processes.started(proc.pid, marker)
        reaper = _Reaper(proc)
        try:
            if reaper.wait(target.timeout):
                return proc.returncode, False, reaper.cpu
            processes.end_run(proc.pid, marker)
            reaper.wait(None)
            return None, True, reaper.cpu
        finally:
            # the stop leaves DataLoader workers behind; a process may have detached
            processes.end_run(proc.pid, marker)


class _Reaper:
    """Waits for a started process with `os.wait4`, which also gives its CPU time
    (and that of the processes it waited for): `Popen.wait` would discard it."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.cpu: float | None = None
        self._thread = threading.Thread(target=self._reap, daemon=True)
        self._thread.start()

    def _reap(self) -> None:
        try:
            _, status, usage = os.wait4(self.proc.pid, 0)
        except ChildProcessError:  # reaped elsewhere: no usage to read
            self.proc.wait()
            return
        self.cpu = usage.ru_utime + usage.ru_stime
        self.proc.returncode = os.waitstatus_to_exitcode(status)

    def wait(self, timeout: float | None) -> bool:
        """True when the process ended within `timeout`."""
        self._thread.join(timeout)
        return not self._thread.is_alive()


def _forked(
    server: WarmInterpreter,
    target: Target,
    work: Path,
    out: Path,
    env: dict[str, str],
    marker: str,
) -> tuple[int | None, bool, float | None]:
    script = work / target.script
    ident = server.spawn(
        str(script), [str(target.script), *target.args], str(work), env, str(out / "output.txt")
    )
    pid = server.pid(ident)
    processes.started(pid, marker)
    try:
        status = server.wait(ident, target.timeout)
        if status is None:
            processes.end_run(pid, marker)
            server.wait(ident, 30.0)
            return None, True, server.cpu_seconds(ident)
        return status, False, server.cpu_seconds(ident)
    finally:
        processes.end_run(pid, marker)


def classify(result: RunResult, records: list[Record], timed_out: bool, timeout: float) -> None:
    trained = sorted(
        (r for r in records if r.get("active")),
        key=lambda r: (r.get("rank") is None, r.get("rank") or 0, r.get("pid", 0)),
    )
    errors = [r["error"] for r in records if r.get("error")]
    # a rank's own error explains more than the launcher's summary of it
    errors.sort(key=lambda e: "ChildFailedError" in str(e["type"]) if e else False)
    internal = sorted(result.out_dir.glob("internal_pid*.txt")) if result.out_dir else []
    result.records = trained
    if result.out_dir is not None:
        result.refused_writes = read_refused_writes(str(result.out_dir))
    result.machine_device = "cuda" if any(r.get("device") == "cuda" for r in records) else "cpu"
    first_error = errors[0] if errors else None
    result.error = dict(first_error) if first_error else None
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
            f"did not finish within {timeout:g} s (no stop was reached; the script may hang)"
        )
        if reached:
            result.message += f"; it had made {reached} optimizer steps"
        return
    text = "\n".join(str(e["traceback"]) for e in errors if e) + "\n" + result.output
    if result.returncode not in (0, None) or first_error:
        if needs_cuda(text):
            result.status = "needs-cuda"
            result.message = "the script needs CUDA, and this machine has no CUDA device"
            return
        result.status = "internal" if result.returncode == EXIT_INTERNAL else "crashed"
        if first_error:
            result.message = f"{first_error['type']}: {first_error['message']}"
        else:
            result.message = f"exited with status {result.returncode}"
        result.hint = failure_hint(first_error, result.returncode, result.output)
        return
    if not trained or all(int(r.get("steps", 0)) == 0 for r in trained):
        result.status = "no-steps"
        result.message = "the script ran to its end without stepping an optimizer"
        return
    if len({len(r.get("losses", [])) for r in trained}) > 1:
        result.status = "crashed"
        result.message = "the ranks recorded different numbers of backward passes"


MISSING_MODULE = re.compile(r"No module named '([^']+)'")
# argparse's own error: its usage line, then "PROG: error: WHAT", exit status 2
ARGPARSE_ERROR = re.compile(r"^usage: .*?^\S+: error: (.+)$", re.MULTILINE | re.DOTALL)


def failure_hint(error: Any, returncode: int | None, output: str) -> str | None:
    """One sentence on what to do about a script that would not run, when the way
    it failed says: a module its interpreter lacks, its own argument parser."""
    if error and error.get("type") in ("ModuleNotFoundError", "ImportError"):
        missing = MISSING_MODULE.search(str(error.get("message", "")))
        if missing:
            module = missing.group(1).split(".")[0]
            return (
                f"the script imports `{module}`, which the interpreter running it does not "
                "have: run the scripts with your project's interpreter, `--python PATH` "
                f"(e.g. `--python .venv/bin/python`), or install `{module}` there"
            )
    parsed = ARGPARSE_ERROR.search(output)
    if returncode == 2 and parsed:
        return (
            f"the script's argument parser stopped it ({parsed.group(1).strip()}): pass the "
            "script's arguments after `--`, as in `accel-lint verify train.py -- ARGS`"
        )
    return None


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


def read_records(out: Path) -> list[Record]:
    found: list[Record] = []
    for path in sorted(out.glob("*.json")):
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            continue
        if isinstance(data, dict):
            found.append(data)  # type: ignore[arg-type]  # written by the runner
    return found


def _tail(path: Path, lines: int = 40) -> str:
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return ""
    return "\n".join(text.rstrip().splitlines()[-lines:])


class Progress(Protocol):
    def total(self, runs: int) -> None: ...

    def started(self, spec: RunSpec, progress_file: Path | None = None) -> None: ...

    def finished(self, spec: RunSpec, result: RunResult) -> None: ...


class NoProgress:
    def total(self, runs: int) -> None:
        pass

    def started(self, spec: RunSpec, progress_file: Path | None = None) -> None:
        pass

    def finished(self, spec: RunSpec, result: RunResult) -> None:
        pass


def run_all(
    target: Target,
    specs: Iterable[RunSpec],
    scratch: Path,
    jobs: int,
    progress: Progress,
    server: WarmInterpreter | None = None,
) -> list[RunResult]:
    """Run independent runs, `jobs` at a time, results in the order of `specs`.
    Only equivalence runs go in parallel: timing runs go one by one."""

    def one(spec: RunSpec) -> RunResult:
        result = run(target, spec, scratch, server, progress)
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
            processes.kill_all()
            raise
