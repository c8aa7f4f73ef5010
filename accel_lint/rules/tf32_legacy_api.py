"""ACL313 tf32-legacy-api: the legacy TF32 switches `torch.backends.cuda.matmul.allow_tf32`
and `torch.backends.cudnn.allow_tf32`, replaced in torch 2.9 by the `fp32_precision`
attributes; and, on any torch, a file that sets both APIs. Page: rules/ACL313.md

What torch 2.13 does (measured): a legacy write sets both the legacy state and the
new one; a write through `fp32_precision` sets only the new one; reading a legacy
flag (`allow_tf32`, `torch.get_float32_matmul_precision()`) raises RuntimeError when
the two disagree. An assignment under a test that picks one API by version
(`if hasattr(..., "fp32_precision")`, a torch-version comparison, a `try`) is a
choice, not a mix, and is not reported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import libcst as cst

from accel_lint.edits import code_for
from accel_lint.facts.file import Guard
from accel_lint.facts.tree import Tree
from accel_lint.names import LOCAL, Scope, qualified_names
from accel_lint.rule import Equivalence, Fix, FixSafety, Replacement, Rule, Verification
from accel_lint.torch_api import (
    FLOAT32_MATMUL_PRECISION,
    FP32_PRECISION_OWNERS,
    FP32_PRECISION_SINCE,
    TF32_LEGACY_CUDNN,
    TF32_LEGACY_MATMUL,
)

# a test that picks the TF32 API by what the installed torch offers
_VERSION_TEST = re.compile(
    r"hasattr|getattr|version|fp32_precision|allow_tf32|torch_\d|TORCH_\d|\(\s*2\s*,\s*\d+\s*\)"
)
_COMPILE = frozenset({"torch.compile"})
# libraries that read the legacy matmul precision while setting up a run
_LEGACY_READERS = ("lightning", "pytorch_lightning", "lightning_fabric")
# backend-wide settings the per-operator ones inherit from when left at "none"
_PARENTS = frozenset({"torch.backends", "torch.backends.cudnn"})


@dataclass(frozen=True)
class _Setting:
    assign: cst.Assign
    target: cst.Attribute
    scope: Scope
    legacy: str | None  # the legacy switch's qualified name, None for the new API
    owner: str | None  # the new API's owner module (`torch.backends.cudnn.conv`)
    line: cst.SimpleStatementLine | None
    chosen: bool = False  # set only where a test finds the installed torch has it


class Tf32LegacyApi(Rule):
    code = "ACL313"
    name = "tf32-legacy-api"
    summary = "Legacy TF32 switches (allow_tf32), replaced by fp32_precision in torch 2.9"
    fix_safety = FixSafety.SAFE
    verification = Verification(
        Equivalence.EXACT, needs_accelerator="TF32 only exists on NVIDIA GPUs (Ampere and later)"
    )

    def setup(self) -> None:
        self._settings: list[_Setting] = []
        self._tries = 0
        self._line: cst.SimpleStatementLine | None = None

    def visit_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = node

    def leave_SimpleStatementLine(self, node: cst.SimpleStatementLine) -> None:
        self._line = None

    def visit_Try(self, node: cst.Try) -> None:
        self._tries += 1

    def leave_Try(self, node: cst.Try) -> None:
        self._tries -= 1

    def visit_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            attr = target.target
            if not isinstance(attr, cst.Attribute) or attr.attr.value not in (
                "allow_tf32",
                "fp32_precision",
            ):
                continue
            # one API chosen by what the installed torch offers: a legacy switch there is
            # the fallback; a new one there still mixes with legacy ones set on every run
            chosen = bool(self._tries) or any(_version_test(g) for g in self.facts.guards)
            scope = self.facts.scope
            if attr.attr.value == "allow_tf32":
                if chosen:
                    continue
                names = qualified_names(attr, scope)
                if names and LOCAL not in names and len(names) == 1:
                    (name,) = names
                    if name in (TF32_LEGACY_MATMUL, TF32_LEGACY_CUDNN):
                        self._settings.append(_Setting(node, attr, scope, name, None, self._line))
            else:
                owners = qualified_names(attr.value, scope)
                if owners and owners <= FP32_PRECISION_OWNERS:
                    self._settings.append(
                        _Setting(node, attr, scope, None, min(owners), self._line, chosen)
                    )

    def finish(self) -> None:
        legacy = [s for s in self._settings if s.legacy is not None]
        new = [s for s in self._settings if s.legacy is None]
        if not legacy:
            return
        target = self.ctx.target_torch
        modern = target is None or target >= FP32_PRECISION_SINCE
        if not modern and not new:
            return
        reasons = {id(s): self._no_fix(s, new, modern) for s in legacy}
        blocked = next((s for s in legacy if reasons[id(s)] is not None), None)
        for setting in legacy:
            assert setting.legacy is not None
            if new:
                message = (
                    f"`{setting.legacy}` is set in a file that also sets `fp32_precision`: "
                    "once the two APIs disagree, reading a legacy TF32 flag raises RuntimeError "
                    "(torch reads them itself, e.g. while torch.compile autotunes)"
                )
            else:
                message = (
                    f"`{setting.legacy}` is the legacy TF32 switch that torch 2.9 replaced with "
                    "`fp32_precision`; the two must not be mixed"
                )
            reason = reasons[id(setting)]
            if reason is None and blocked is not None:
                # half a migration would mix the two APIs
                reason = (
                    "another TF32 switch of this file cannot be rewritten; migrate them together"
                )
            if reason is not None:
                self.report(setting.target, message, no_fix_reason=reason)
            else:
                self.report(setting.target, message, self._fix(setting))

    # -- the fix ---------------------------------------------------------------------------

    def _no_fix(self, setting: _Setting, new: list[_Setting], modern: bool) -> str | None:
        if not modern and any(s.chosen for s in new):
            return (
                "the file sets `fp32_precision` only where torch has it; move the legacy "
                "switches into the other branch of that test"
            )
        if not modern:
            return "the target torch predates `fp32_precision` (2.9): remove the new API instead"
        others = [
            t
            for t in setting.assign.targets
            if not any(s.target is t.target for s in self._settings if s.legacy)
        ]
        if others:
            return "the statement assigns other targets too"
        if any(s.owner in _PARENTS for s in new):
            return (
                "the file sets a backend-wide `fp32_precision`, which the per-operator settings "
                "inherit; choose them by hand"
            )
        value = setting.assign.value
        literal = value.value if isinstance(value, cst.Name) else None
        keeps = "False" if setting.legacy == TF32_LEGACY_MATMUL else "True"
        if literal != keeps:
            # the new API leaves the legacy state at its default; every later read of it
            # (by another module, torch.compile's autotuning, Lightning) would raise
            if setting.legacy == TF32_LEGACY_MATMUL:
                return (
                    "torch 2.13 raises on any later read of the legacy flag once only "
                    '`fp32_precision = "tf32"` is set; `torch.set_float32_matmul_precision'
                    '("high")` sets both, or migrate every reader of the project at once'
                )
            return (
                "torch 2.13 raises on any later read of `torch.backends.cudnn.allow_tf32` "
                "once cuDNN's `fp32_precision` is set to something else than tf32; "
                "migrate every reader of the project at once"
            )
        reader = self._legacy_reader()
        if reader is not None:
            return reader
        return None

    def _legacy_reader(self) -> str | None:
        """Why the new API alone could make this file raise: something it runs reads the
        legacy flags, which raise once only the new API has turned TF32 on."""
        tree = Tree.of(self.facts)
        for node, scope in self.facts.attributes_named("allow_tf32"):
            if not isinstance(tree.parent(node), cst.AssignTarget):
                names = qualified_names(node, scope)
                if names & {TF32_LEGACY_MATMUL, TF32_LEGACY_CUDNN}:
                    return "the file reads a legacy TF32 flag, which raises after the new API"
        if self.facts.calls_resolving_to(FLOAT32_MATMUL_PRECISION):
            return (
                "the file uses `set/get_float32_matmul_precision`, which shares the legacy "
                "state; keep one API"
            )
        compiled = self.facts.calls_resolving_to(_COMPILE) or self.facts.method_calls("compile")
        if compiled:
            return (
                "torch.compile (2.13) still reads the legacy flags while autotuning, and they "
                "raise once only `fp32_precision` has turned TF32 on"
            )
        for bindings in self.facts.module_scope.bindings.values():
            for binding in bindings:
                if binding.target and binding.target.split(".")[0] in _LEGACY_READERS:
                    return "Lightning reads the legacy matmul precision when a run starts"
        return None

    def _fix(self, setting: _Setting) -> Fix:
        assign = setting.assign
        value = assign.value
        literal = value.value if isinstance(value, cst.Name) else None
        if literal == "True":
            precision = '"tf32"'
        elif literal == "False":
            precision = '"ieee"'
        else:
            test = code_for(value)
            if isinstance(value, (cst.Lambda, cst.IfExp, cst.NamedExpr)):
                test = f"({test})"
            precision = f'"tf32" if {test} else "ieee"'
        texts: list[str] = []
        for target in assign.targets:
            attr = target.target
            assert isinstance(attr, cst.Attribute)
            base = code_for(attr.value)
            names = qualified_names(attr, setting.scope)
            if TF32_LEGACY_CUDNN in names:
                texts += [f"{base}.conv.fp32_precision = {precision}"]
                texts += [f"{base}.rnn.fp32_precision = {precision}"]
            else:
                texts.append(f"{base}.fp32_precision = {precision}")
        replacements: dict[cst.CSTNode, Replacement] = {}
        line = setting.line
        if line is not None and len(line.body) == 1:
            lines = [cst.parse_statement(t) for t in texts]
            first = lines[0]
            assert isinstance(first, cst.SimpleStatementLine)
            lines[0] = first.with_changes(
                leading_lines=line.leading_lines, trailing_whitespace=line.trailing_whitespace
            )
            replacements[line] = cst.FlattenSentinel(lines)
        else:
            smalls = []
            for text in texts:
                statement = cst.parse_statement(text)
                assert isinstance(statement, cst.SimpleStatementLine)
                smalls.append(statement.body[0])
            last = assign.semicolon
            smalls[-1] = smalls[-1].with_changes(semicolon=last)
            replacements[assign] = cst.FlattenSentinel(smalls)
        shown = "; ".join(texts)
        return Fix(f"Set `{shown}`", replacements)


def _version_test(guard: Guard) -> bool:
    test, _ = guard
    return bool(_VERSION_TEST.search(code_for(test)))
