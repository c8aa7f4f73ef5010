"""accel-lint verify's process hook.

`accel-lint verify` puts this directory first on the PYTHONPATH of the runs it
starts, so every Python process of a run (the script, torchrun's ranks,
`mp.spawn` children, their workers) imports this module at start-up. It does
nothing unless the `ACCEL_LINT_VERIFY` variable is set; then it loads the runner
that sits beside this directory. Any `sitecustomize` the environment already
had (Debian's Python ships one) is run first, as it would have been without us.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import os
import sys


def _chain_previous() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_accel_lint_previous_sitecustomize"] = module
    spec.loader.exec_module(module)


def _activate() -> None:
    if not os.environ.get("ACCEL_LINT_VERIFY"):
        return
    runner = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "runner.py")
    spec = importlib.util.spec_from_file_location("_accel_lint_verify_runner", runner)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    module.activate()


_chain_previous()
_activate()
