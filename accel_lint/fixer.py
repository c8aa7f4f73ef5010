"""Apply fixes: one transformer pass per iteration over the tree the rules saw,
imports added once, re-parse and re-lint until nothing fixable is left (ruff's
loop). Every pass goes through the fix checker (`fixcheck`): a fix that would
leave a name undefined, or bound elsewhere than before, is dropped, the file
keeps the others, and the finding says why. Writing the result back is
`writeback.write_fixed`."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import libcst as cst

from accel_lint.config import Settings
from accel_lint.edits import code_for
from accel_lint.engine import Analysis, analyze, rules_for, safety_allowed
from accel_lint.fixcheck import NEWER_SYNTAX, Scopes, broken_by
from accel_lint.layout import laid_out
from accel_lint.parse import analysis_conditions, too_deep_to_analyse
from accel_lint.rewrite import apply_fixes_once
from accel_lint.rule import Equivalence, Finding, Rule
from accel_lint.source import Source

MAX_ITERATIONS = 10


# -- the fix loop ----------------------------------------------------------------


@dataclass
class AppliedFix:
    code: str
    message: str
    equivalence: Equivalence | None = None  # the finding's own class, when not the rule's


@dataclass
class FixOutcome:
    path: str
    source: Source
    fixed_text: str
    applied: list[AppliedFix] = field(default_factory=list)
    remaining: Analysis | None = None  # the analysis of the final text
    error: str | None = None  # a bug of ours: did not converge / produced invalid code

    @property
    def changed(self) -> bool:
        return self.fixed_text != self.source.text


def _overlaps(
    a: tuple[tuple[int, int], tuple[int, int]], b: tuple[tuple[int, int], tuple[int, int]]
) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def choose_fixes(analysis: Analysis, findings: Sequence[Finding], unsafe: bool) -> list[Finding]:
    """Applicable fixes whose replaced nodes do not overlap; the rest wait for the next pass."""
    chosen: list[Finding] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    seen: set[int] = set()
    for finding in findings:
        fix = finding.fix
        if fix is None or not safety_allowed(fix, unsafe) or id(fix) in seen:
            continue
        spans = []
        for node in fix.replacements:
            rng = analysis.range_of(node)
            spans.append(((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)))
        if any(_overlaps(s, t) for s in spans for t in taken):
            continue
        seen.add(id(fix))
        taken.extend(spans)
        chosen.append(finding)
    return chosen


def fix_source(
    path: str,
    source: Source,
    settings: Settings,
    codes: frozenset[str],
    *,
    unsafe: bool,
) -> FixOutcome:
    """Fix with the rules of `codes` until nothing fixable is left. The source is never
    partly fixed: on a bug (no convergence, unparsable result) the original text is
    returned with `error`."""
    with analysis_conditions():
        try:
            return _fix_loop(path, source, settings, codes, unsafe=unsafe)
        except RecursionError:
            # nesting the parse's depth check cannot see (thousands of concatenated
            # strings): the file stays as it is, reported like one too deep to parse
            error = too_deep_to_analyse(path)
            return FixOutcome(
                path, source, source.text, [], Analysis(path, source, None, error=error)
            )


def _fix_loop(
    path: str,
    source: Source,
    settings: Settings,
    codes: frozenset[str],
    *,
    unsafe: bool,
) -> FixOutcome:
    text = source.text
    rules: Sequence[type[Rule]] = rules_for(codes, text.encode("utf-8"))
    applied: list[AppliedFix] = []
    refused: dict[tuple[str, ...], str] = {}  # fixes the checker dropped, and why
    for _ in range(MAX_ITERATIONS):
        analysis = analyze(path, Source(text, source.encoding), settings, rules, by_calls=False)
        if analysis.error is not None or analysis.module is None:
            if applied:
                return FixOutcome(
                    path,
                    source,
                    source.text,
                    [],
                    None,
                    "a fix produced code that does not parse "
                    f"({analysis.error.message if analysis.error else 'unknown'}); "
                    "the file was left unchanged. This is a bug in accel-lint: please report it.",
                )
            return FixOutcome(path, source, text, [], analysis)
        while True:
            _say_refused(analysis, refused)
            chosen = choose_fixes(analysis, analysis.findings, unsafe)
            if not chosen:
                if applied:
                    # handed over, not shared: the layout drops it before its own parse
                    held = [analysis]
                    del analysis
                    return _laid_out(path, source, settings, rules, applied, held, refused)
                return FixOutcome(path, source, text, applied, analysis)
            new_text, kept = _checked(analysis, chosen, analysis.scopes(), refused)
            if kept:
                break
        if new_text == text:
            break
        applied.extend(
            AppliedFix(f.code, f.fix.message, f.equivalence) for f in kept if f.fix is not None
        )
        text = new_text
        # the next pass parses the fixed text: this pass's tree goes first, so one
        # file never holds two trees at once (they were each gigabytes at 5 MB).
        # The cyclic collector is off while a file is analysed (`analysis_conditions`):
        # the analysis's cycles (scopes and their bindings) must be broken, or they
        # would keep every pass's tree alive until the file is done
        analysis.release()
        del analysis, chosen, kept
        # a fix can bring in another rule's trigger words (a DDP migration makes the
        # script distributed, and its `torch.load` then needs map_location): the next
        # pass also runs the enabled rules the fixed text may now match
        rules = _with_newly_triggered(rules, codes, text)
    return FixOutcome(
        path,
        source,
        source.text,
        [],
        None,
        f"fixes did not converge after {MAX_ITERATIONS} passes; the file was left unchanged. "
        "This is a bug in accel-lint: please report it.",
    )


def _refusal_key(finding: Finding) -> tuple[str, ...]:
    """What identifies a fix from one pass to the next: its rule, its message and the
    code it replaces (positions move as other fixes apply)."""
    assert finding.fix is not None
    replaced = sorted(code_for(node) for node in finding.fix.replacements)
    return (finding.code, finding.fix.message, *replaced)


def _say_refused(analysis: Analysis, refused: dict[tuple[str, ...], str]) -> None:
    """Findings whose fix the checker dropped in an earlier pass keep no fix, and say why."""
    if not refused:
        return
    for finding in analysis.findings:
        if finding.fix is not None:
            reason = refused.get(_refusal_key(finding))
            if reason is not None:
                finding.fix = None
                finding.no_fix_reason = reason


def _checked(
    analysis: Analysis,
    chosen: list[Finding],
    before: Scopes | None,
    refused: dict[tuple[str, ...], str],
) -> tuple[str, list[Finding]]:
    """The text after the chosen fixes that pass the checker, and those fixes; each
    dropped one is recorded in `refused` with its reason. When all pass (the usual
    case) the pass costs one transform and one symbol table of the result; only a
    failure applies the fixes one by one to find the culprits."""
    assert analysis.module is not None
    module = analysis.module
    text = analysis.source.text

    def span(node: cst.CSTNode) -> tuple[int, int]:
        rng = analysis.range_of(node)
        return rng.start.line, rng.end.line

    def attempt(findings: list[Finding]) -> tuple[str, str | None]:
        fixes = [f.fix for f in findings if f.fix is not None]
        new_text = apply_fixes_once(module, fixes)
        return new_text, broken_by(text, before, fixes, new_text, span)

    if before is None:
        # CPython cannot compile the file here: nothing can be checked, nothing is fixed
        for finding in chosen:
            refused[_refusal_key(finding)] = NEWER_SYNTAX
        return text, []
    new_text, reason = attempt(chosen)
    if reason is None:
        return new_text, chosen
    kept: list[Finding] = []
    if len(chosen) > 1:
        for finding in chosen:
            _, why = attempt([finding])
            if why is None:
                kept.append(finding)
            else:
                refused[_refusal_key(finding)] = why
    else:
        for finding in chosen:
            refused[_refusal_key(finding)] = reason
    while kept:
        # each passes alone; together they may still break a name
        new_text, reason = attempt(kept)
        if reason is None:
            return new_text, kept
        last = kept.pop()
        refused[_refusal_key(last)] = reason
    return text, []


def _with_newly_triggered(
    rules: Sequence[type[Rule]], codes: frozenset[str], text: str
) -> Sequence[type[Rule]]:
    added = [rule for rule in rules_for(codes, text.encode("utf-8")) if rule not in rules]
    return [*rules, *added] if added else rules


def _reported(analysis: Analysis) -> Counter[str]:
    return Counter(f.code for f in analysis.findings)


def _laid_out(
    path: str,
    source: Source,
    settings: Settings,
    rules: Sequence[type[Rule]],
    applied: list[AppliedFix],
    held: list[Analysis],
    refused: dict[tuple[str, ...], str],
) -> FixOutcome:
    """The fixed file with the lines its fixes made too long split (`layout.laid_out`),
    and the analysis of that text, so remaining findings point at the right lines.

    `held` holds the analysis of the fixed text, and only it does: when the layout
    changes the text, that analysis and its tree go before the laid-out text is
    parsed, so that one file never holds two trees at once."""
    analysis = held.pop()
    assert analysis.module is not None
    module = laid_out(source.text, analysis.module, MAX_ITERATIONS)
    if module is analysis.module:
        return FixOutcome(path, source, module.code, applied, analysis)
    fixed_text = analysis.source.text  # the text that tree was parsed from
    reported = _reported(analysis)
    laid_text = module.code
    analysis.release()
    del analysis, module
    final = analyze(path, Source(laid_text, source.encoding), settings, rules, by_calls=False)
    _say_refused(final, refused)
    if final.error is None and _reported(final) != reported:
        # the layout moved a comment that decides what is reported (a suppression it
        # does not know as bound to its line): the fixed lines stay long, a finding
        # that was suppressed is never unsuppressed, and so never fixed by a next pass
        final.release()
        del final
        kept = analyze(path, Source(fixed_text, source.encoding), settings, rules, by_calls=False)
        _say_refused(kept, refused)
        return FixOutcome(path, source, fixed_text, applied, kept)
    if final.error is not None:
        return FixOutcome(
            path,
            source,
            source.text,
            [],
            None,
            "laying out the fixed lines produced code that does not parse "
            f"({final.error.message}); the file was left unchanged. "
            "This is a bug in accel-lint: please report it.",
        )
    return FixOutcome(path, source, laid_text, applied, final)
