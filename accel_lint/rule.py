"""The rule base class and what rules produce: findings, fixes, and the declaration of
how `verify` judges a rule's fixes.

A rule reports through one method, `Rule.report(node, message, fix=None,
no_fix_reason=None)`. A fix's safety is the rule's (`fix_safety`), unless the
rule declares `FixSafety.VARIES`, in which case every fix names its own. A rule
that can fix but does not fix one occurrence says why in `no_fix_reason`, which
every output format renders the same way.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence, Set
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, ClassVar, Union

import libcst as cst

from accel_lint.facts import FileFacts
from accel_lint.noqa import Directive


class FixSafety(str, Enum):
    """Ruff's convention: safe fixes keep behaviour; unsafe ones need `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    VARIES = "varies"  # declared by a rule whose fixes are safe in some places only
    NONE = "none"  # the rule reports, never rewrites


class Equivalence(str, Enum):
    """What the verifier must show for a fix (the rule catalogue's classes)."""

    EXACT = "exact"
    CLOSE = "close"
    STATISTICAL = "statistical"
    INTENDED_CHANGE = "intended-change"


class Launcher(str, Enum):
    """How the fixed script must be started."""

    PYTHON = "python"
    TORCHRUN = "torchrun"  # the fix makes it a multi-process script


class Invariant(str, Enum):
    """What an intended change must keep; the verifier has one judge per member."""

    EPOCH_RESHUFFLE = "epoch-reshuffle"  # epoch 0 as before, later epochs reshuffled
    RANK0_SAVE = "rank0-save"  # each file written once, by rank 0, with the same content
    ORIGINAL_RAISES = "original-raises"  # the original raises, the fixed script runs
    BARE_CHECKPOINT = "bare-checkpoint"  # saved state dicts load into the bare model
    UNSCALED_CLIP = "unscaled-clip"  # clipping sees the true (unscaled) gradients
    # at each optimizer step the gradients are the sum over the window's micro-batches
    WINDOW_GRADIENTS = "window-gradients"
    CONSTANT_SCALE = "constant-scale"  # the loss scale is constant inside each window
    ONE_CLIP_PER_STEP = "one-clip-per-step"  # one clip per optimizer step
    # the original raises; the fixed loss is close to the float32 loss
    RAISES_THEN_CLOSE = "raises-then-close"


class Cause(str, Enum):
    """A diagnosis the verifier tries when a fix fails its class."""

    PARAMS_WITHOUT_GRAD = "params-without-grad"  # optimizer skips None grads


@dataclass(frozen=True)
class Verification:
    """How `verify` judges a rule's fixes: read by the verifier, never switched on codes.

    `needs_accelerator` says why the fix's speed benefit needs hardware a CPU-only
    machine lacks (the report prints it instead of a ratio). `noop_since` is the torch
    version from which the fix changes nothing (the proof then holds only for the
    installed version).
    """

    equivalence: Equivalence
    launcher: Launcher = Launcher.PYTHON
    needs_accelerator: str | None = None
    invariant: Invariant | None = None
    causes: tuple[Cause, ...] = ()
    noop_since: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        intended = self.equivalence is Equivalence.INTENDED_CHANGE
        if intended != (self.invariant is not None):
            raise TypeError("an intended-change fix names its invariant, and only such a fix")


Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel[Any]]


@dataclass(frozen=True)
class Fix:
    """Node replacements in the analysed tree, plus the imports they need.

    `replacements` maps nodes of the tree the rule saw to their new versions
    (a `FlattenSentinel` inserts statements, `RemovalSentinel.REMOVE` deletes).
    `imports` are statements such as ``"import os"``, added once per file.
    `safety` is left out: `Rule.report` fills in the rule's, unless the rule
    declares `FixSafety.VARIES`, which makes it required.
    """

    message: str
    replacements: Mapping[cst.CSTNode, Replacement]
    imports: tuple[str, ...] = ()
    safety: FixSafety | None = None


@dataclass
class Finding:
    """A rule's report on a node; the engine adds the position."""

    code: str
    name: str
    message: str
    node: cst.CSTNode
    fix: Fix | None = None
    no_fix_reason: str | None = None
    equivalence: Equivalence | None = None  # when it differs from the rule's
    related: tuple[cst.CSTNode, ...] = ()  # other nodes it depends on (an argparse default)


@dataclass(frozen=True)
class Option:
    """A per-rule setting under `[tool.accel-lint.rules.<CODE>]`; `expected` is named
    in the error when `accepts` refuses a configured value."""

    default: Any
    expected: str
    accepts: Callable[[Any], bool]


@dataclass(frozen=True)
class RuleContext:
    """What a rule gets for one file: the tree, its facts, and its settings."""

    module: cst.Module
    facts: FileFacts
    target_torch: tuple[int, int] | None = None  # None: the latest
    options: Mapping[str, Any] = field(default_factory=dict)
    path: str = ""  # the file as it was named (for rules that treat tests apart)


_CODE = re.compile(r"^ACL\d{3}$")
_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)+$")


class Rule:
    """One anti-pattern. Subclasses set the class attributes, keep their state in
    `setup()`, collect candidates in `visit_*`/`leave_*` methods (walked by
    `accel_lint.walk`), and decide in `finish()` when the answer needs whole-file
    facts."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line for `accel-lint rules` and SARIF
    fix_safety: ClassVar[FixSafety]
    verification: ClassVar[Verification | None] = None  # None when the rule has no fix
    options: ClassVar[Mapping[str, Option]] = {}
    # a rule that judges the noqa comments themselves decides in
    # `finish_suppressions`, after the other rules' findings were filtered
    reads_suppressions: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not _CODE.match(cls.code):
            raise TypeError(f"{cls.__name__}: rule code {cls.code!r} is not ACLnnn")
        if not _NAME.match(cls.name):
            raise TypeError(f"{cls.__name__}: rule name {cls.name!r} is not kebab-case")
        if (cls.fix_safety is FixSafety.NONE) != (cls.verification is None):
            raise TypeError(f"{cls.code}: a rule declares a verification exactly when it fixes")

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.facts = ctx.facts
        self.findings: list[Finding] = []
        self.setup()

    def setup(self) -> None:
        """Per-file state of the rule; called once before the walk."""

    @classmethod
    def equivalence(cls) -> Equivalence | None:
        return cls.verification.equivalence if cls.verification is not None else None

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: Fix | None = None,
        *,
        no_fix_reason: str | None = None,
        equivalence: Equivalence | None = None,
        related: tuple[cst.CSTNode, ...] = (),
    ) -> None:
        """Report `node`. A rule that can fix gives either a fix or the reason it has
        none here; a fix's safety comes from the rule (see `FixSafety.VARIES`)."""
        if fix is not None:
            fix = _with_safety(self, fix)
            if no_fix_reason is not None:
                raise AssertionError(f"{self.code}: a fix and a reason for no fix")
        elif no_fix_reason is not None and self.fix_safety is FixSafety.NONE:
            raise AssertionError(f"{self.code} declares no fix but gives a reason for none")
        self.findings.append(
            Finding(self.code, self.name, message, node, fix, no_fix_reason, equivalence, related)
        )

    def finish(self) -> None:
        """Called once after the walk, when `self.facts` is complete."""

    def finish_suppressions(
        self,
        directives: Sequence[Directive],
        used: Mapping[int, Set[str]],
        enabled: frozenset[str],
        known: frozenset[str],
    ) -> None:
        """For `reads_suppressions` rules: the file's noqa directives in order, the
        codes each row's directive suppressed, the codes enabled for the file and
        every rule code."""


def _with_safety(rule: Rule, fix: Fix) -> Fix:
    declared = rule.fix_safety
    if declared is FixSafety.NONE:
        raise AssertionError(f"{rule.code} declares no fix but reported one")
    if declared is FixSafety.VARIES:
        if fix.safety not in (FixSafety.SAFE, FixSafety.UNSAFE):
            raise AssertionError(f"{rule.code}: fixes of varying safety must name theirs")
        return fix
    if fix.safety is not None and fix.safety is not declared:
        raise AssertionError(f"{rule.code}: a {fix.safety.value} fix from a {declared.value} rule")
    return Fix(fix.message, fix.replacements, fix.imports, declared)
