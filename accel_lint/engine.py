"""Lint one file: decode, parse once, walk once with facts and every rule, finish,
then positions (only when something was found), suppressions and diagnostics."""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic, Edit, FixView, parse_error
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.positions import Locator
from accel_lint.rewrite import apply_fixes_once
from accel_lint.rule import Finding, Fix, FixSafety, Rule, RuleContext
from accel_lint.rules import RULES
from accel_lint.source import Source, compile_ast, syntax_check
from accel_lint.walk import walk

# flake8's grammar: a bare noqa comment, or noqa followed by a colon and codes
_NOQA = re.compile(
    r"#\s*noqa(?::[\s]?(?P<codes>[A-Z]+[0-9]+(?:[,\s]+[A-Z]+[0-9]+)*))?", re.IGNORECASE
)
_NOQA_CODE = re.compile(r"[A-Z]+[0-9]+", re.IGNORECASE)


@dataclass
class Analysis:
    """One file after the walk: its tree, the rules' findings and their positions."""

    path: str
    source: Source
    module: cst.Module | None
    findings: list[Finding] = field(default_factory=list)
    error: Diagnostic | None = None
    _locator: Locator | None = None

    def range_of(self, node: cst.CSTNode) -> CodeRange:
        if self._locator is None:
            assert self.module is not None
            self._locator = Locator(self.module, self.source.text)
        return self._locator.range_of(node)


def rules_for(codes: frozenset[str], data: bytes) -> list[type[Rule]]:
    """Enabled rules whose trigger words appear in the file (cheap prefilter)."""
    return [entry.rule for entry in RULES if entry.code in codes and entry.may_match(data)]


def analyze(
    path: str,
    source: Source,
    settings: Settings,
    rules: Sequence[type[Rule]],
    *,
    apply_noqa: bool = True,
) -> Analysis:
    """Parse once and run `rules` in one walk. `rules` empty: syntax check only."""
    if not rules:
        error = syntax_check(path, source.text)
        if error is None:
            return Analysis(path, source, None)
        # CPython's grammar may be older than libcst's: let libcst decide.
    try:
        module = cst.parse_module(source.text)
    except cst.ParserSyntaxError as exc:
        return Analysis(path, source, None, error=_syntax_error(path, source.text, exc))
    except RecursionError:
        return Analysis(path, source, None, error=parse_error(path, "too deeply nested to parse"))
    analysis = Analysis(path, source, module)
    if not rules:
        return analysis
    facts = FileFacts(module)
    instances = [
        rule(RuleContext(module, facts, settings.target_torch, settings.options_for(rule), path))
        for rule in rules
    ]
    walk(module, [FactsCollector(facts), *instances, ScopeCloser(facts)])
    facts.finish()
    findings: list[Finding] = []
    for instance in instances:
        instance.finish()
        findings.extend(instance.findings)
    if findings and apply_noqa:
        findings = _unsuppressed(analysis, findings)
    analysis.findings = findings
    return analysis


def _syntax_error(path: str, text: str, exc: cst.ParserSyntaxError) -> Diagnostic:
    """CPython's message and position, which users know; libcst's if CPython parses it."""
    try:
        compile_ast(text, path)
    except SyntaxError as cpython:
        return parse_error(
            path, f"SyntaxError: {cpython.msg}", cpython.lineno or 1, cpython.offset or 1
        )
    except (ValueError, RecursionError, MemoryError) as other:
        return parse_error(path, f"SyntaxError: {other}")
    return parse_error(
        path, f"cannot be parsed by libcst: {exc.message}", exc.raw_line, exc.raw_column + 1
    )


def _unsuppressed(analysis: Analysis, findings: list[Finding]) -> list[Finding]:
    lines = analysis.source.text.splitlines()
    kept: list[Finding] = []
    for finding in findings:
        row = analysis.range_of(finding.node).start.line
        if not (0 < row <= len(lines) and _noqa_covers(lines[row - 1], finding.code)):
            kept.append(finding)
    return kept


def _noqa_covers(line: str, code: str) -> bool:
    if "#" not in line:
        return False
    match = _NOQA.search(line)
    if match is None:
        return False
    codes = match.group("codes")
    if codes is None:
        return True
    return code.upper() in {c.upper() for c in _NOQA_CODE.findall(codes)}


def sort_key(finding: Finding, analysis: Analysis) -> tuple[int, int, str]:
    pos = analysis.range_of(finding.node).start
    return (pos.line, pos.column, finding.code)


def diagnostics(analysis: Analysis, *, with_edits: bool = False) -> list[Diagnostic]:
    """Positioned diagnostics of one analysed file, sorted by position then code."""
    if analysis.error is not None:
        return [analysis.error]
    out: list[Diagnostic] = []
    for finding in sorted(analysis.findings, key=lambda f: sort_key(f, analysis)):
        rng = analysis.range_of(finding.node)
        message = finding.message
        if finding.related:
            # point at what the finding depends on elsewhere (an argparse default)
            rows = sorted({analysis.range_of(n).start.line for n in finding.related})
            message += f" (line {', '.join(map(str, rows))})"
        fix = finding.fix
        fix_view = None
        if fix is not None and with_edits:
            fix_view = FixView(_safety(fix).value, fix.message, tuple(fix_edits(analysis, fix)))
        out.append(
            Diagnostic(
                finding.code,
                finding.name,
                message,
                analysis.path,
                rng.start.line,
                rng.start.column + 1,
                rng.end.line,
                rng.end.column + 1,
                fix_view,
                fix is not None,
                _safety(fix).value if fix is not None else None,
                fix.message if fix is not None else None,
                finding.no_fix_reason,
            )
        )
    return out


def fix_edits(analysis: Analysis, fix: Fix) -> list[Edit]:
    """The text edits one fix makes, as the minimal changed spans of the file."""
    assert analysis.module is not None
    new_text = apply_fixes_once(analysis.module, [fix])
    return text_edits(analysis.source.text, new_text)


def text_edits(old: str, new: str) -> list[Edit]:
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    edits: list[Edit] = []
    matcher = difflib.SequenceMatcher(a=old_lines, b=new_lines, autojunk=False)
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            continue
        a = "".join(old_lines[i1:i2])
        b = "".join(new_lines[j1:j2])
        # trim the common prefix and suffix so an edit covers only what changed
        p = 0
        while p < min(len(a), len(b)) and a[p] == b[p]:
            p += 1
        s = 0
        while s < min(len(a), len(b)) - p and a[-1 - s] == b[-1 - s]:
            s += 1
        start_row, start_col = _advance(i1 + 1, 1, a[:p])
        end_row, end_col = _advance(start_row, start_col, a[p : len(a) - s])
        edits.append(Edit(b[p : len(b) - s], start_row, start_col, end_row, end_col))
    return edits


def _advance(row: int, col: int, text: str) -> tuple[int, int]:
    lines = text.splitlines(keepends=True)
    for line in lines:
        if line.endswith(("\n", "\r")):
            row, col = row + 1, 1
        else:
            col += len(line)
    return row, col


def _safety(fix: Fix) -> FixSafety:
    # `Rule.report` fills in every reported fix's safety
    assert fix.safety is not None
    return fix.safety


def safety_allowed(fix: Fix, unsafe: bool) -> bool:
    return fix.safety is FixSafety.SAFE or (unsafe and fix.safety is FixSafety.UNSAFE)
