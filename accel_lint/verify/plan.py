"""Which script each run executes and how it is started.

A variant is the set of rules whose fixes are applied on top of the base
script (the original, or the original repaired by the fixes that make it run
at all). How a variant is launched comes from the fixes' declarations: one
fix that needs torchrun makes the variant a torchrun run.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from accel_lint.rule import Launcher
from accel_lint.verify.launch import Launch, RunResult, RunSpec
from accel_lint.verify.report import FixItem


@dataclass(frozen=True)
class Options:
    steps: int = 20
    repeat: int = 3
    warmup: int | None = None
    timeout: float = 600.0
    nproc: int | None = None
    torchrun: bool = False  # the original itself is launched with torchrun
    threads: int = 1
    seeds: int = 3
    jobs: int = 2

    @property
    def warmup_steps(self) -> int:
        return self.warmup if self.warmup is not None else max(1, min(5, self.steps // 4))


class Planner:
    def __init__(
        self,
        original: str,
        fixed_with: Callable[[frozenset[str]], str],
        fixes: Sequence[FixItem],
        options: Options,
    ) -> None:
        self.original = original
        self.fixed_with = fixed_with
        self.fixes = list(fixes)
        self.options = options
        self.base: frozenset[str] = frozenset()  # rules whose fixes every run includes
        self.nproc = options.nproc or 2
        self.reference: RunResult | None = None
        self._texts: dict[frozenset[str], str] = {}

    @property
    def codes(self) -> tuple[str, ...]:
        """The rules with applied fixes, in the order of their first fix."""
        return tuple(dict.fromkeys(f.code for f in self.fixes))

    def text(self, codes: frozenset[str]) -> str:
        codes = codes | self.base
        if not codes:
            return self.original
        if codes not in self._texts:
            self._texts[codes] = self.fixed_with(codes)
        return self._texts[codes]

    def launch(self, codes: frozenset[str]) -> Launch:
        codes = codes | self.base
        torchrun = self.options.torchrun or any(
            f.verification.launcher is Launcher.TORCHRUN for f in self.fixes if f.code in codes
        )
        return Launch(torchrun=torchrun, nproc=self.nproc)

    def spec(self, name: str, codes: frozenset[str] | None, **changes: Any) -> RunSpec:
        """A run of the base script (`codes` None) or of a fixed variant; fixed
        variants are compared with the reference and start from its weights."""
        variant = frozenset() if codes is None else codes
        spec = RunSpec(
            name,
            self.text(variant),
            launch=self.launch(variant),
            threads=self.options.threads,
            variant=variant_name(variant) if codes is not None else "original",
        )
        reference = self.reference
        if reference is not None and codes is not None:
            spec = replace(spec, reference=reference.state_file, align_init=reference.init_dir)
        return replace(spec, **changes)

    def reference_state(self) -> Path | None:
        return self.reference.state_file if self.reference is not None else None


def variant_name(codes: frozenset[str]) -> str:
    return "+".join(sorted(codes)) if codes else "original"
