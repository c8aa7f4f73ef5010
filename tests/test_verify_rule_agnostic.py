"""Adding a rule never edits the verifier: a rule that exists only in this test,
with its own declared verification, is planned, launched and judged from that
declaration alone; and no module of the verifier names a rule code in its code."""

from __future__ import annotations

import ast
import io
import re
import tokenize
from collections.abc import Sequence
from pathlib import Path
from typing import Any, cast

import pytest

from accel_lint.rule import Equivalence, FixSafety, Invariant, Launcher, Rule, Verification
from accel_lint.verify.launch import NoProgress, RunResult, RunSpec, Target
from accel_lint.verify.plan import Options
from accel_lint.verify.protocol import TIME, Record
from accel_lint.verify.report import FixItem
from accel_lint.verify.session import Session
from tests.support import ROOT


class OnlyInThisTest(Rule):
    """Declared here and nowhere else: the verifier has never heard of ACL990."""

    code = "ACL990"
    name = "test-only-rule"
    summary = "a rule that exists only in this test"
    fix_safety = FixSafety.UNSAFE
    verification = Verification(
        Equivalence.INTENDED_CHANGE,
        launcher=Launcher.TORCHRUN,
        invariant=Invariant.BARE_CHECKPOINT,
        needs_accelerator="its benefit needs a test-only accelerator",
    )


def _record(spec: RunSpec, **extra: Any) -> Record:
    fixed = spec.variant != "original"
    check = {"keys": 2, "values": "v1", "loads_into": "Net" if fixed else None, "prefixed": 0}
    check["prefixed"] = 0 if fixed else 2
    record: dict[str, Any] = {
        "rank": None,
        "steps": 4,
        "losses": [1.0, 0.8, 0.7, 0.65],
        "step_times": [0.1 * i for i in range(1, 21)],
        "memory": {"host_peak_bytes": 100, "device_peak_bytes": None},
        "device": "cpu",
        "saves": [{"step": 2, "path": "ckpt.pt", "content": "c", "state_dicts": [check]}],
        **extra,
    }
    return cast(Record, record)


class Executor:
    """Stands in for the processes: records what the session asked for and
    answers with records a real run of such a script would write."""

    def __init__(self, original_raises: bool = False) -> None:
        self.specs: list[RunSpec] = []
        self.original_raises = original_raises

    def __call__(self, specs: Sequence[RunSpec], jobs: int) -> list[RunResult]:
        results = []
        for spec in specs:
            self.specs.append(spec)
            if self.original_raises and spec.variant == "original" and spec.mode != TIME:
                error = {
                    "type": "TypeError",
                    "message": "bad call",
                    "traceback": "",
                    "needs_cuda": False,
                }
                results.append(
                    RunResult(spec, "crashed", 1, 0.1, message="TypeError: bad call", error=error)
                )
                continue
            results.append(RunResult(spec, "ok", 0, 0.1, records=[_record(spec)]))
        return results


def _session(verification: Verification, executor: Executor, repeat: int = 1) -> Session:
    item = FixItem(
        OnlyInThisTest.code,
        "the test-only fix",
        verification.equivalence,
        verification,
        filename="train.py",
        row=7,
        applicability="unsafe",
    )
    target = Target(Path("."), Path("train.py"), (), 4, 1, 60.0)
    return Session(
        target,
        "original text",
        lambda codes: "fixed text " + ",".join(sorted(codes)),
        [item],
        Options(steps=4, repeat=repeat),
        NoProgress(),
        display_name="train.py",
        executor=executor,
    )


def test_a_new_rule_is_planned_launched_and_judged_from_its_declaration() -> None:
    executor = Executor()
    report = _session(OnlyInThisTest.verification, executor).run()
    item = report.fixes[0]
    assert item.verdict is not None and item.verdict.holds, item.verdict
    # the verdict came from the judge of the declared invariant
    assert item.verdict.notes[0].startswith("1 saved state dict(s) load into Net with strict=True")
    fixed = [s for s in executor.specs if s.variant != "original"]
    assert fixed and all(s.launch.torchrun for s in fixed)  # launcher=TORCHRUN
    assert not any(s.launch.torchrun for s in executor.specs if s.variant == "original")
    assert all(s.text == "fixed text ACL990" for s in fixed)
    # needs_accelerator on a CPU machine: no ratio is claimed, no timing run is made
    assert item.speed is not None and item.speed.label == "not applicable on this hardware"
    assert item.speed.reason == "its benefit needs a test-only accelerator"
    assert report.timing is None and not any(s.role == "timing" for s in executor.specs)


def test_a_new_rule_whose_original_raises_is_judged_on_the_failed_original() -> None:
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=Invariant.ORIGINAL_RAISES)
    report = _session(verification, Executor(original_raises=True), repeat=0).run()
    verdict = report.fixes[0].verdict
    assert verdict is not None and verdict.holds, verdict
    assert verdict.notes == [
        "the original raised TypeError: bad call; the fixed script ran 4 steps"
    ]
    assert report.problem is None and report.exit_code == 0


@pytest.mark.parametrize("invariant", list(Invariant), ids=[i.value for i in Invariant])
def test_every_invariant_reaches_its_judge(invariant: Invariant) -> None:
    verification = Verification(Equivalence.INTENDED_CHANGE, invariant=invariant)
    report = _session(verification, Executor(), repeat=0).run()
    verdict = report.fixes[0].verdict
    assert verdict is not None
    assert "no judge is known" not in (verdict.reason or "")


CODE = re.compile(r"ACL\d{3}")


def _docstring_lines(tree: ast.Module) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                first = body[0]
                lines.update(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return lines


def test_no_module_of_the_verifier_names_a_rule_code() -> None:
    offenders = []
    for path in sorted((ROOT / "accel_lint" / "verify").rglob("*.py")):
        text = path.read_text(encoding="utf-8")
        docstrings = _docstring_lines(ast.parse(text))
        for token in tokenize.generate_tokens(io.StringIO(text).readline):
            if token.type == tokenize.COMMENT:
                continue
            if token.type == tokenize.STRING and token.start[0] in docstrings:
                continue
            if CODE.search(token.string):
                offenders.append(f"{path.relative_to(ROOT)}:{token.start[0]}: {token.string}")
    assert offenders == []


def test_the_code_check_sees_a_code_in_code(tmp_path: Path) -> None:
    """The check above can fail: a code in a string that is not a docstring is found."""
    text = '"""Docstring ACL101."""\n# comment ACL102\nTABLE = {"ACL103": 1}\n'
    docstrings = _docstring_lines(ast.parse(text))
    found = [
        t.string
        for t in tokenize.generate_tokens(io.StringIO(text).readline)
        if t.type != tokenize.COMMENT
        and not (t.type == tokenize.STRING and t.start[0] in docstrings)
        and CODE.search(t.string)
    ]
    assert found == ['"ACL103"']


def _plain_record(spec: RunSpec) -> Record:
    return cast(
        Record,
        {
            "rank": None,
            "steps": 4,
            "losses": [1.0, 0.8, 0.7, 0.65],
            "step_times": [0.1 * i for i in range(1, 21)],
            "memory": {"host_peak_bytes": 100, "device_peak_bytes": None},
            "device": "cpu",
            "torch_version": "2.13.0+cpu",
        },
    )


def test_a_fix_that_is_a_noop_on_the_installed_torch_holds_for_it_only() -> None:
    verification = Verification(Equivalence.EXACT, noop_since=(2, 0))
    item = FixItem("ACL990", "m", Equivalence.EXACT, verification, "train.py", 3, "unsafe")

    def executor(specs: Sequence[RunSpec], jobs: int) -> list[RunResult]:
        return [RunResult(s, "ok", 0, 0.1, records=[_plain_record(s)]) for s in specs]

    def session(target_torch: tuple[int, int] | None) -> list[str]:
        copy = FixItem(item.code, item.message, item.equivalence, verification, "train.py", 3)
        Session(
            Target(Path("."), Path("train.py"), (), 4, 1, 60.0),
            "original",
            lambda codes: "fixed",
            [copy],
            Options(steps=4, repeat=0),
            NoProgress(),
            display_name="train.py",
            executor=executor,
            target_torch=target_torch,
        ).run()
        assert copy.verdict is not None and copy.verdict.holds
        return copy.verdict.notes

    assert session((1, 13))[-1] == (
        "holds for the installed torch 2.13.0+cpu only: from torch 2.0 on this fix changes "
        "nothing, and the project targets torch 1.13, where it does"
    )
    assert not any("installed torch" in n for n in session(None))  # the latest: no caveat
    assert not any("installed torch" in n for n in session((2, 1)))


def test_exact_fixes_are_held_to_bitwise_equality_beside_a_close_one() -> None:
    exact = Verification(Equivalence.EXACT)
    close = Verification(Equivalence.CLOSE)
    items = [
        FixItem("ACL991", "m", Equivalence.EXACT, exact, "train.py", 3),
        FixItem("ACL992", "m", Equivalence.CLOSE, close, "train.py", 9),
    ]
    seen: list[RunSpec] = []

    def executor(specs: Sequence[RunSpec], jobs: int) -> list[RunResult]:
        results = []
        for spec in specs:
            seen.append(spec)
            record = dict(_plain_record(spec))
            if "ACL992" in spec.text:  # the close fix moves the losses a little
                record["losses"] = [1.0, 0.8 + 1e-9, 0.7, 0.65]
            results.append(RunResult(spec, "ok", 0, 0.1, records=[cast(Record, record)]))
        return results

    report = Session(
        Target(Path("."), Path("train.py"), (), 4, 1, 60.0),
        "original",
        lambda codes: "fixed " + " ".join(sorted(codes)),
        items,
        Options(steps=4, repeat=0),
        NoProgress(),
        display_name="train.py",
        executor=executor,
    ).run()
    names = [s.name for s in seen]
    assert "fixed (exact fixes: ACL991)" in names
    assert not any(s.role == "isolation" for s in seen)  # no culprit hunt needed
    exact_item, close_item = report.fixes
    assert exact_item.verdict is not None and exact_item.verdict.notes[0].startswith(
        "bitwise equal"
    )
    assert close_item.verdict is not None and close_item.verdict.holds  # within the slack
