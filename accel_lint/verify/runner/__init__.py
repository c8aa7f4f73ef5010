"""The instrumenting runner: runs inside every Python process of a verification run.

`hook/sitecustomize.py` loads this package by path (not as part of accel_lint, which
the script's interpreter may not have) when the `ACCEL_LINT_VERIFY` environment
variable holds a run configuration. It then waits for the script to `import
torch` and, in that process, seeds the generators, pins the thread count, installs
PyTorch's global optimizer step hooks and the recorders, and stops the process
after N optimizer steps by writing its record and calling `os._exit(0)`. Because
the hook rides on PYTHONPATH it reaches every process that imports torch
(torchrun ranks, `mp.spawn` children); processes that never build an optimizer
(the torchrun launcher, DataLoader workers) write nothing unless they crash.

This package imports the standard library, the protocol module beside it, and
torch (through the script's own import); nothing else of accel_lint.

    imports   run code right after the script imports torch
    base      what the parts need of the runner (protocols)
    state     the runner of one process: counts, stop, record
    patches   what is installed into torch: seeds, threads, hooks, recorders
    models    root modules, names, snapshots, differences, initial weights
    loaders   the DataLoaders and how the training loop waits for them
    records   writing records; memory, hashes, paths
    observe   the runtime second opinion (probe runs)
    server    a warm interpreter that forks one process per run
"""

from __future__ import annotations

import atexit
import json
import os
import sys
from collections.abc import Callable
from types import ModuleType

from ..protocol import CONFIG_ENV, EQUIV, RunConfig
from .confine import confine_writes
from .imports import PostImport, deterministic_inductor
from .patches import install
from .state import Runner


def activate(config: RunConfig | None = None, started: float | None = None) -> Runner | None:
    """Called by sitecustomize (and by the warm interpreter in a forked run): wait
    for torch, or install now if it is already there."""
    if config is None:
        raw = os.environ.get(CONFIG_ENV)
        if not raw:
            return None
        config = json.loads(raw)
        assert config is not None
    _keep_orphans()
    confine_writes(os.getcwd(), config["out"])  # the run's copy of the script's folder
    runner = Runner(config) if started is None else Runner(config, started)
    sys.excepthook = runner.excepthook_wrapper(sys.excepthook)
    atexit.register(runner.at_exit)
    if "torch" in sys.modules:
        install(runner, sys.modules["torch"])
        return runner
    watch: dict[str, Callable[[ModuleType], None]] = {"torch": lambda torch: install(runner, torch)}
    if config["mode"] == EQUIV:
        watch["torch._inductor.config"] = deterministic_inductor
    sys.meta_path.insert(0, PostImport(watch))
    return runner


def _keep_orphans() -> None:
    """Make this process of the run a child subreaper (Linux): a process the script
    starts that detaches (new session, empty environment) stays under the run while
    it lives, and reaches verify's process, which ends it, once the run has ended;
    never init, where nothing would end it."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER
    except (OSError, AttributeError):
        pass
