"""Lint one file: decode, parse once, walk once with facts and every rule, finish,
then positions (only when something was found), suppressions and diagnostics."""

from __future__ import annotations

import ast
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst
from libcst.metadata import CodeRange

from accel_lint import noqa
from accel_lint.called import Called
from accel_lint.config import Settings
from accel_lint.diagnostic import Diagnostic, Edit, FixView
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.fixcheck import Scopes, broken_by, scopes_of
from accel_lint.incremental import Reparser
from accel_lint.layout import laid_out, needs_layout
from accel_lint.parse import parse
from accel_lint.positions import Locator
from accel_lint.rewrite import apply_fixes_once
from accel_lint.rule import Finding, Fix, FixSafety, Rule, RuleContext
from accel_lint.rules import BY_CODE, RULES, matching
from accel_lint.source import Source, syntax_check
from accel_lint.walk import walk


@dataclass
class Analysis:
    """One file after the walk: its tree, the rules' findings and their positions."""

    path: str
    source: Source
    module: cst.Module | None
    findings: list[Finding] = field(default_factory=list)
    error: Diagnostic | None = None
    note: str | None = None  # checked with libcst's grammar only: syntax newer than this Python
    reparser: Reparser | None = None  # the open document's, in the language server
    tree: ast.Module | None = None  # CPython's tree of the text, when the parse made one
    _scopes: tuple[Scopes | None] | None = None
    _locator: Locator | None = None
    # every node's parent, recorded by the walk for the positions
    _parents: dict[cst.CSTNode, cst.CSTNode] | None = None
    _facts: FileFacts | None = None
    _rules: list[Rule] = field(default_factory=list)

    def _located(self) -> Locator:
        if self._locator is None:
            assert self.module is not None
            self._locator = Locator(
                self.module, self.source.text, self.tree, self.reparser, self._parents
            )
        return self._locator

    def range_of(self, node: cst.CSTNode) -> CodeRange:
        return self._located().range_of(node)

    def line_of(self, node: cst.CSTNode) -> int:
        """`range_of(node).start.line`, cheaper for a statement (`Locator.line_of`)."""
        return self._located().line_of(node)

    def release(self) -> None:
        """Break the reference cycles of the analysis (a scope and its bindings, the
        facts and what they share), so that the tree is freed by reference counting
        as soon as the last reference to it goes, not by a cyclic collection that
        visits every node. Call it once the diagnostics are made."""
        facts, rules = self._facts, self._rules
        self._facts, self._rules = None, []
        if facts is None:
            return
        scopes = {id(scope): scope for scope in facts.scope_of.values()}
        scopes[id(facts.module_scope)] = facts.module_scope
        owners: list[object] = [*scopes.values(), *facts.shared_values(), *rules, facts]
        for owner in owners:
            state = getattr(owner, "__dict__", None)
            if state is not None:
                state.clear()

    def scopes(self) -> Scopes | None:
        """The text's scopes for the fix checker (`fixcheck`), made once when asked."""
        if self._scopes is None:
            self._scopes = (scopes_of(self.source.text),)
        return self._scopes[0]


def rules_for(codes: frozenset[str], data: bytes, path: str = "") -> list[type[Rule]]:
    """Enabled rules whose trigger words appear in the file (cheap prefilter)."""
    return [entry.rule for entry in matching(codes, data, path)]


def analyze(
    path: str,
    source: Source,
    settings: Settings,
    rules: Sequence[type[Rule]],
    *,
    apply_noqa: bool = True,
    by_calls: bool = True,
    reparser: Reparser | None = None,
) -> Analysis:
    """Parse once and run `rules` in one walk. `rules` empty: syntax check only.

    `by_calls`: the rules that need a call the file does not make (CPython's tree
    says) do not run, and a file left with none is not parsed by libcst. The fixer
    turns it off: a fixed text must parse again, whatever rules are left.

    `reparser`: the language server's last parse of this document (see
    `incremental`): the unchanged statements are not parsed again, and positions
    found for them last time are reused."""
    if not rules:
        error = syntax_check(path, source.text)
        if error is None:
            return Analysis(path, source, None)
        # CPython's grammar may be older than libcst's: let libcst decide.

    def wanted(seen: Called) -> bool:
        nonlocal rules
        target = settings.target_torch
        rules = [rule for rule in rules if BY_CODE[rule.code].may_call(seen, target)]
        return bool(rules)

    parsed = parse(path, source.text, wanted if by_calls and rules else None, reparser)
    if parsed.module is None:
        return Analysis(path, source, None, error=parsed.error)
    module = parsed.module
    analysis = Analysis(path, source, module, note=parsed.note, reparser=reparser, tree=parsed.tree)
    if not rules:
        return analysis
    facts = FileFacts(module, source.text)
    instances = [
        rule(RuleContext(module, facts, settings.target_torch, settings.options_for(rule), path))
        for rule in rules
    ]
    analysis._facts, analysis._rules = facts, list(instances)
    analysis._parents = {}
    walk(module, [FactsCollector(facts), *instances, ScopeCloser(facts)], analysis._parents)
    facts.finish()
    findings: list[Finding] = []
    readers: list[Rule] = []
    for instance in instances:
        instance.finish()
        if instance.reads_suppressions:
            readers.append(instance)  # decides once the others' findings are filtered
        else:
            findings.extend(instance.findings)
    if apply_noqa and (findings or readers):
        suppressions = noqa.read(source.text)
        used: dict[int, set[str]] = {}
        findings = _unsuppressed(analysis, findings, suppressions, used)
        known = frozenset(entry.code for entry in RULES)
        for reader in readers:
            reader.finish_suppressions(suppressions.lines, used, settings.codes_for(path), known)
            findings.extend(_unsuppressed(analysis, reader.findings, suppressions, {}))
    elif not apply_noqa:
        for reader in readers:
            findings.extend(reader.findings)
    analysis.findings = findings
    return analysis


def _unsuppressed(
    analysis: Analysis,
    findings: list[Finding],
    suppressions: noqa.Suppressions,
    used: dict[int, set[str]],
) -> list[Finding]:
    """The findings no `# noqa` covers; `used` collects, per row, the codes a
    directive of that row suppressed."""
    if not suppressions.lines and not suppressions.file_codes:
        return findings
    rows = suppressions.by_row()
    kept: list[Finding] = []
    for finding in findings:
        if finding.code in suppressions.file_codes:
            continue
        row = analysis.range_of(finding.node).start.line
        if noqa.covers(rows.get(row), finding.code):
            used.setdefault(row, set()).add(finding.code)
        else:
            kept.append(finding)
    return kept


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
            rows = sorted({analysis.line_of(n) for n in finding.related})
            message += f" (line {', '.join(map(str, rows))})"
        fix = finding.fix
        no_fix_reason = finding.no_fix_reason
        fix_view = None
        if fix is not None and with_edits:
            edits = fix_edits(analysis, fix)
            if isinstance(edits, str):
                # the checker refuses it: the finding says why, as `fix` would
                fix, no_fix_reason = None, edits
            else:
                fix_view = FixView(_safety(fix).value, fix.message, tuple(edits))
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
                no_fix_reason,
            )
        )
    return out


def fix_edits(analysis: Analysis, fix: Fix) -> list[Edit] | str:
    """The text edits one fix makes, as the minimal changed spans of the file, with
    the lines it made too long split as `fix` splits them (`layout.laid_out`); or,
    when the fix checker refuses the fix on its own (`fixcheck`), the reason."""
    assert analysis.module is not None
    original = analysis.source.text
    new_text = apply_fixes_once(analysis.module, [fix])
    reason = broken_by(
        original,
        analysis.scopes(),
        [fix],
        new_text,
        lambda node: (analysis.range_of(node).start.line, analysis.range_of(node).end.line),
    )
    if reason is not None:
        return reason
    if needs_layout(original, new_text):
        try:
            fixed = cst.parse_module(new_text, config=analysis.module.config_for_parsing)
        except cst.ParserSyntaxError:  # the fixer drops such a fix; it is shown as it is
            pass
        else:
            new_text = laid_out(original, fixed).code
    return text_edits(original, new_text)


def text_edits(old: str, new: str) -> list[Edit]:
    old_lines = old.splitlines(keepends=True)
    new_lines = new.splitlines(keepends=True)
    edits: list[Edit] = []
    import difflib  # only for fixes shown as edits

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
