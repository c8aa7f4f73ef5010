"""Naming the fix that broke equivalence, when several rules' fixes were applied.

Each failing rule's fixes are run alone (a statistically judged rule with its
seed offsets) and judged again; the rule whose fixes fail alone is the culprit.
When every rule's fixes hold alone, the combined run must still hold the weakest
of their classes, else the fixes interact.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from accel_lint.rule import Equivalence
from accel_lint.verify import compare as cmp
from accel_lint.verify.judge import STRICTNESS, Judge, group_class
from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.plan import Planner
from accel_lint.verify.report import FixItem, Problem, Report

Runs = Callable[[Sequence[RunSpec]], list[RunResult]]


def problem_of(run: RunResult) -> Problem:
    return Problem(run.spec.name, run.status, run.message or run.status, run.output, run.hint)


def failed_run_verdict(run: RunResult) -> cmp.Verdict:
    what = "timed out" if run.status == "timeout" else "failed"
    return cmp.Verdict(cmp.FAILS, f"the fixed script {what} where the original ran: {run.message}")


def isolate(
    failing: Sequence[FixItem],
    items: Sequence[FixItem],
    planner: Planner,
    judge: Judge,
    runs: Runs,
    report: Report,
    combined: RunResult | None,
) -> None:
    codes = list(dict.fromkeys(f.code for f in failing))
    if not codes or len({f.code for f in items}) < 2:
        return
    specs: list[RunSpec] = []
    plan: list[tuple[str, int]] = []
    for code in codes:
        group = frozenset({code})
        members = [f for f in items if f.code == code]
        start = len(specs)
        specs.append(planner.spec(f"fixed ({code} only)", group, role="isolation"))
        if group_class(members) is Equivalence.STATISTICAL:
            specs += [
                planner.spec(
                    f"fixed ({code} only, seed +{k})", group, seed_offset=k, role="isolation"
                )
                for k in range(1, planner.options.seeds)
            ]
        plan.append((code, start))
    results = runs(specs)
    held_alone = True
    for index, (code, start) in enumerate(plan):
        end = plan[index + 1][1] if index + 1 < len(plan) else len(results)
        alone = results[start:end]
        members = [f for f in items if f.code == code]
        if not all(r.ok for r in alone):
            failed = next(r for r in alone if not r.ok)
            report.problem = problem_of(failed)
            for item in members:
                item.verdict = failed_run_verdict(failed)
            held_alone = False
            continue
        cls = group_class(members)
        for item in members:
            verdict = judge.judge(item, alone[0], alone, cls=cls)
            if cls is not item.equivalence:
                verdict.notes.append(
                    f"judged as {cls.value} together with the other {code} fix(es) of this script"
                )
            item.verdict = verdict
            held_alone = held_alone and verdict.holds
    if held_alone and combined is not None:
        check_combination(items, judge, report, combined)


def check_combination(
    items: Sequence[FixItem], judge: Judge, report: Report, combined: RunResult
) -> None:
    """Every rule's fixes hold alone: the combined run must still hold the weakest
    class among them (an interaction would break it)."""
    classes = [f.equivalence for f in items if f.equivalence in STRICTNESS]
    if not classes or any(f.equivalence is Equivalence.INTENDED_CHANGE for f in items):
        return
    weakest = max(classes, key=lambda c: STRICTNESS[c])
    if weakest is Equivalence.STATISTICAL:
        return  # the combined seeded runs were judged with the statistical fixes
    probe = FixItem("", "", weakest, items[0].verification)
    verdict = judge.judge(probe, combined, [combined], cls=weakest)
    if not verdict.holds:
        report.combined_fails = f"the fixes hold one by one but not together: {verdict.reason}"


def fixed_failed(
    failed_runs: Sequence[RunResult],
    items: Sequence[FixItem],
    planner: Planner,
    judge: Judge,
    runs: Runs,
    report: Report,
) -> None:
    """The fixed script failed where the original ran: find which rule's fixes
    break it by running each rule's fixes alone."""
    failed = next(r for r in failed_runs if not r.ok)
    report.problem = problem_of(failed)
    codes = list(dict.fromkeys(f.code for f in items))
    if len(codes) == 1:
        for item in items:
            item.verdict = failed_run_verdict(failed)
        return
    alone = runs(
        [
            planner.spec(f"fixed ({code} only)", frozenset({code}), role="isolation")
            for code in codes
        ]
    )
    for code, run in zip(codes, alone):
        for item in items:
            if item.code != code:
                continue
            item.verdict = judge.judge(item, run, [run]) if run.ok else failed_run_verdict(run)
    first = next((r for r in alone if not r.ok), None)
    if first is not None:
        report.problem = problem_of(first)
