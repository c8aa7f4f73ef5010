"""What the runner's parts need of the runner of their process, as protocols, so
that they depend on this module and not on each other (the runner imports them)."""

from __future__ import annotations

import threading
from typing import Any, Protocol

from ..protocol import RunConfig, RuntimeRecord

# per thread: inside a recorded backward call (Tensor.backward calls autograd.backward)
local = threading.local()


class Watcher(Protocol):
    """The probe's observer, as the runner drives it."""

    def start(self) -> None: ...

    def pre_step(self, optimizer: Any) -> None: ...

    def post_step(self, steps: int) -> None: ...

    def record(self) -> RuntimeRecord: ...


class Host(Protocol):
    """The runner of this process, as its loaders and observer see it."""

    cfg: RunConfig
    primary: Any  # the first optimizer that steps
    built: list[Any]  # every optimizer constructed
    scalers: list[Any]  # GradScalers that scaled a loss
    defaults: dict[str, object]  # backend flags before the runner set any
    observer: Watcher | None

    def primary_steps(self) -> int: ...
