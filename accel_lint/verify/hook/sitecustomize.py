"""accel-lint verify's process hook.

`accel-lint verify` puts this directory first on the PYTHONPATH of the runs it
starts, so every Python process of a run (the script, torchrun's ranks,
`mp.spawn` children, their workers) imports this module at start-up. It does
nothing unless the `ACCEL_LINT_VERIFY` variable is set; then it loads the runner
package that sits beside this directory. Any `sitecustomize` the environment
already had (Debian's Python ships one) is run first, as it would have been
without us.
"""

from __future__ import annotations

import importlib
import importlib.machinery
import importlib.util
import os
import sys
import types

VERIFY_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGE = "_accel_lint_verify"


def _chain_previous() -> None:
    here = os.path.dirname(os.path.abspath(__file__))
    path = [p for p in sys.path if os.path.abspath(p or ".") != here]
    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", path)
    if spec is None or spec.loader is None or spec.origin == os.path.abspath(__file__):
        return
    module = importlib.util.module_from_spec(spec)
    sys.modules["_accel_lint_previous_sitecustomize"] = module
    spec.loader.exec_module(module)


def load(name: str) -> types.ModuleType:
    """Import `name` (`runner`, `protocol`) from the verify directory without
    importing accel_lint (the script's interpreter may not have it): the directory
    becomes a package of its own whose `__init__` is not run."""
    if PACKAGE not in sys.modules:
        package = types.ModuleType(PACKAGE)
        package.__path__ = [VERIFY_DIR]
        sys.modules[PACKAGE] = package
    return importlib.import_module(f"{PACKAGE}.{name}")


def _activate() -> None:
    if os.environ.get("ACCEL_LINT_VERIFY"):
        load("runner").activate()


_chain_previous()
_activate()
