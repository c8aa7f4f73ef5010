"""Run code right after a module is imported, in whatever process imports it.

The runner installs itself when the script imports torch (not before: the script
may never import it, and importing torch ourselves would cost seconds in
processes that never train, such as DataLoader workers started with spawn).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Callable, Sequence
from types import ModuleType
from typing import Any


class _AfterExec(importlib.abc.Loader):
    """Wraps a module's loader to run `then(module)` as soon as its import completes."""

    def __init__(self, loader: Any, then: Callable[[ModuleType], None]) -> None:
        self._loader = loader
        self._then = then

    def __getattr__(self, name: str) -> Any:  # resource readers etc. of the real loader
        return getattr(self._loader, name)

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType | None:
        module: ModuleType | None = self._loader.create_module(spec)
        return module

    def exec_module(self, module: ModuleType) -> None:
        self._loader.exec_module(module)
        self._then(sys.modules.get(module.__name__, module))


class PostImport(importlib.abc.MetaPathFinder):
    """Runs a callback after each watched module is imported; leaves
    `sys.meta_path` once all have been."""

    def __init__(self, watch: dict[str, Callable[[ModuleType], None]]) -> None:
        self.watch = watch

    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        then = self.watch.pop(fullname, None)
        if then is None:
            return None
        if not self.watch:
            sys.meta_path.remove(self)  # safe: a spec is returned, importlib stops here
        spec: importlib.machinery.ModuleSpec | None = None
        for finder in list(sys.meta_path):
            find = getattr(finder, "find_spec", None)
            if finder is not self and find is not None:
                spec = find(fullname, path, target)
                if spec is not None:
                    break
        if spec is None or spec.loader is None:
            return spec
        spec.loader = _AfterExec(spec.loader, then)
        return spec


def deterministic_inductor(config: ModuleType) -> None:
    """torch.use_deterministic_algorithms() imports torch._inductor (and with it
    torch._dynamo, seconds per process) only to set this flag: it is set when the
    script itself imports inductor, i.e. when it uses torch.compile."""
    config.deterministic = True  # type: ignore[attr-defined]
