"""The rule base class and the values rules produce: findings and fixes."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from enum import Enum
from typing import TYPE_CHECKING, Any, ClassVar, Union

import libcst as cst

if TYPE_CHECKING:
    from accel_lint.config import Settings
    from accel_lint.facts import FileFacts


class FixSafety(str, Enum):
    """Ruff's convention: safe fixes keep behaviour; unsafe ones need `--unsafe-fixes`."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    NONE = "none"  # the rule reports, never rewrites


class Equivalence(str, Enum):
    """What the verifier must show for a fix of this rule (RULES.md)."""

    EXACT = "exact"
    CLOSE = "close"
    STATISTICAL = "statistical"
    INTENDED_CHANGE = "intended-change"


Replacement = Union[cst.CSTNode, cst.RemovalSentinel, cst.FlattenSentinel[Any]]


@dataclass(frozen=True)
class Fix:
    """Node replacements in the analysed tree, plus the imports they need.

    `replacements` maps nodes of the tree the rule saw to their new versions
    (a `FlattenSentinel` inserts statements, `RemovalSentinel.REMOVE` deletes).
    `imports` are statements such as ``"import os"``, added once per file.
    """

    message: str
    replacements: Mapping[cst.CSTNode, Replacement]
    imports: tuple[str, ...] = ()
    safety: FixSafety = FixSafety.SAFE


@dataclass
class Finding:
    """A rule's report on a node; the engine adds the position."""

    code: str
    name: str
    message: str
    node: cst.CSTNode
    fix: Fix | None = None
    equivalence: Equivalence | None = None  # when it differs from the rule's default
    related: tuple[cst.CSTNode, ...] = ()  # other nodes the fix touches (argparse default)


@dataclass(frozen=True)
class Option:
    """A per-rule setting under `[tool.accel-lint.rules.<CODE>]`."""

    default: Any
    kind: type | tuple[type, ...]
    help: str


@dataclass
class RuleContext:
    module: cst.Module
    facts: FileFacts
    settings: Settings
    options: Mapping[str, Any] = field(default_factory=dict)


_CODE = re.compile(r"^ACL\d{3}$")
_NAME = re.compile(r"^[a-z]+(-[a-z]+)+$")


class Rule:
    """One anti-pattern. Subclasses define `visit_*`/`leave_*` methods (walked by
    `accel_lint.walk`) that collect candidates, and decide in `finish()` when
    the answer needs whole-file facts."""

    code: ClassVar[str]
    name: ClassVar[str]
    summary: ClassVar[str]  # one line for `accel-lint rules` and SARIF
    fix_safety: ClassVar[FixSafety]
    equivalence: ClassVar[Equivalence | None] = None  # None when the rule has no fix
    default_enabled: ClassVar[bool] = True
    # The file must contain one of these byte strings for the rule to possibly match;
    # a name can only be resolved through an import if it is spelled somewhere.
    triggers: ClassVar[tuple[bytes, ...]] = ()
    options: ClassVar[Mapping[str, Option]] = {}

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if not _CODE.match(cls.code):
            raise TypeError(f"{cls.__name__}: rule code {cls.code!r} is not ACLnnn")
        if not _NAME.match(cls.name):
            raise TypeError(f"{cls.__name__}: rule name {cls.name!r} is not kebab-case")
        if cls.fix_safety is not FixSafety.NONE and cls.equivalence is None:
            raise TypeError(f"{cls.code}: a rule with a fix needs an equivalence class")

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx
        self.facts = ctx.facts
        self.findings: list[Finding] = []

    def report(
        self,
        node: cst.CSTNode,
        message: str,
        fix: Fix | None = None,
        *,
        equivalence: Equivalence | None = None,
        related: tuple[cst.CSTNode, ...] = (),
    ) -> None:
        if fix is not None and self.fix_safety is FixSafety.NONE:
            raise AssertionError(f"{self.code} declares no fix but reported one")
        self.findings.append(
            Finding(self.code, self.name, message, node, fix, equivalence, related)
        )

    def finish(self) -> None:
        """Called once after the walk, when `self.facts` is complete."""

    @classmethod
    def url(cls) -> str:
        from accel_lint.pages import page_url

        return page_url(cls.code)
