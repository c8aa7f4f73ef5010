"""The runtime second opinion: static findings marked seen or not seen from what a
probe run of the original recorded, and what the run showed that no static
finding names, with the rule it maps to. Matching on constructed records; then
real probe runs on the fixtures where the pattern shows on CPU, and on a case
built so that the static rules cannot see it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest

from accel_lint.verify.launch import RunResult, RunSpec
from accel_lint.verify.opinion import StaticFinding, second_opinion
from accel_lint.verify.protocol import Record
from tests.support import ROOT

SCRIPT = Path("train.py")
NAMES = {"dataloader-sync-loading": "ACL101", "conv-bias-before-norm": "ACL201"}


def _loader(row: int, workers: int = 0, wait: float = 0.0, **extra: Any) -> dict[str, Any]:
    return {
        "ordinal": 0,
        "file": "/scratch/run/work/train.py",
        "row": row,
        "num_workers": workers,
        "pin_memory": False,
        "persistent_workers": False,
        "prefetch_factor": None,
        "batch_size": 16,
        "dataset": "Records",
        "in_memory": False,
        "passes": 1,
        "batches": 10,
        "wait_s": wait,
        "trains": True,
        **extra,
    }


def _run(name: str, record: dict[str, Any], device: str = "cpu") -> RunResult:
    record = {"device": device, "step_times": [0.0, 0.5, 1.0], **record}
    return RunResult(RunSpec(name, ""), "ok", 0, 1.0, records=[cast(Record, record)])


def _probe(*observations: dict[str, Any], patterns: Any = ()) -> RunResult:
    observed = [
        {"file": "/scratch/probe/work/train.py", "notable": True, **o} for o in observations
    ]
    return _run(
        "probe",
        {
            "steps": 8,
            "runtime": {
                "observations": observed,
                "configuration": ["backends: cudnn.benchmark=False"],
                "patterns": list(patterns),
                "cuda": False,
            },
        },
    )


def _finding(code: str, name: str, row: int, end_row: int | None = None) -> StaticFinding:
    return StaticFinding(code, name, row, end_row or row, "")


def test_a_finding_is_seen_where_the_run_shows_its_pattern_at_its_lines() -> None:
    reference = _run("original", {"loaders": [_loader(12, wait=0.4)]})
    probe = _probe({"kind": "conv-bias-before-norm", "row": 30, "detail": "Conv2d feeds BN"})
    findings = [
        _finding("ACL101", "dataloader-sync-loading", 12),
        _finding("ACL201", "conv-bias-before-norm", 30),
        _finding("ACL201", "conv-bias-before-norm", 44),
        _finding("ACL404", "sampler-missing-set-epoch", 50),
    ]
    opinion = second_opinion(findings, probe, reference, SCRIPT, NAMES.get)
    status = [(c.code, c.row, c.status) for c in opinion.findings]
    assert status == [
        ("ACL101", 12, "seen"),
        ("ACL201", 30, "seen"),
        ("ACL201", 44, "not seen"),
        ("ACL404", 50, "not observable at run time"),
    ]
    assert opinion.findings[0].detail == (
        "num_workers=0: it fed training, and the loop waited for its batches 40% of each step"
    )
    assert opinion.runtime_only == []


def test_what_no_static_finding_names_is_a_runtime_finding_with_its_rules_code() -> None:
    reference = _run("original", {"loaders": [_loader(26, wait=0.9)]})
    opinion = second_opinion([], _probe(), reference, SCRIPT, NAMES.get)
    (found,) = opinion.runtime_only
    assert (found.code, found.name, found.file, found.row) == (
        "ACL101",
        "dataloader-sync-loading",
        "train.py",
        26,
    )


def test_a_loader_over_memory_or_that_barely_waits_is_not_a_runtime_finding() -> None:
    loaders = [_loader(26, wait=0.01), _loader(27, wait=0.9, in_memory=True)]
    opinion = second_opinion(
        [], _probe(), _run("original", {"loaders": loaders}), SCRIPT, NAMES.get
    )
    assert opinion.runtime_only == []


def test_cuda_only_patterns_are_not_judged_on_cpu_and_profiler_hits_alone_do_not_overrule() -> None:
    pattern = {
        "name": "SynchronizedDataLoaderPattern",
        "shows": "dataloader-sync-loading",
        "status": "ran",
        "reason": None,
        "hits": [{"file": "/scratch/probe/work/train.py", "row": 80, "message": "m"}],
    }
    reference = _run("original", {"loaders": [_loader(26, wait=0.01)]})
    findings = [_finding("ACL316", "foreach-disabled", 9)]
    opinion = second_opinion(findings, _probe(patterns=[pattern]), reference, SCRIPT, NAMES.get)
    assert [(c.status, c.detail) for c in opinion.findings] == [
        ("not observable at run time", "only on CUDA, and this run did not use it")
    ]
    # the loader barely waits: torch's pattern alone does not make it a runtime finding
    assert opinion.runtime_only == []


def test_a_probe_that_did_not_complete_is_said_so() -> None:
    failed = RunResult(RunSpec("probe", ""), "crashed", 1, 1.0, message="ValueError: x")
    opinion = second_opinion([], failed, _run("original", {"loaders": []}), SCRIPT, NAMES.get)
    assert opinion.problem == "the probe run did not complete: ValueError: x"


# -- real probe runs ------------------------------------------------------------------------


def _verify(script: Path, tmp_path: Path, *args: str) -> dict[str, Any]:
    env = {**os.environ, "TMPDIR": str(tmp_path), "NO_COLOR": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "accel_lint",
            "verify",
            str(script),
            "--output-format",
            "json",
            "--repeat",
            "0",
            *args,
        ],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=900,
    )
    assert done.returncode == 0, done.stderr
    data: dict[str, Any] = json.loads(done.stdout)
    return data


def _seen(report: dict[str, Any]) -> dict[tuple[str, int], str]:
    return {(f["code"], f["row"]): f["status"] for f in report["runtime"]["findings"]}


@pytest.mark.slow
def test_the_probe_confirms_the_loader_and_conv_findings_of_cnn_bn(tmp_path: Path) -> None:
    report = _verify(ROOT / "fixtures" / "cnn_bn" / "train.py", tmp_path, "--", "--epochs", "1")
    seen = _seen(report)
    # cnn_bn's loaders read tensors already in memory: ACL101 leaves them alone
    assert ("ACL101", 107) not in seen
    assert seen[("ACL102", 107)] == "seen"
    assert seen[("ACL201", 18)] == seen[("ACL201", 39)] == "seen"
    # the test loader is only iterated after training: built as found, not used yet
    assert seen[("ACL102", 108)] == "seen"
    patterns = {p["name"]: p for p in report["runtime"]["patterns"]}
    assert patterns["Conv2dBiasFollowedByBatchNorm2dPattern"]["status"] == "ran"
    assert patterns["Conv2dBiasFollowedByBatchNorm2dPattern"]["hits"]
    assert patterns["SynchronizedDataLoaderPattern"]["hits"]
    assert patterns["ExtraCUDACopyPattern"]["status"] == "skipped"
    assert report["runtime"]["runtime_only"] == []


@pytest.mark.slow
def test_the_probe_confirms_the_zero_grad_findings_of_amp_manual_zero(tmp_path: Path) -> None:
    report = _verify(
        ROOT / "fixtures" / "amp_manual_zero" / "train.py",
        tmp_path,
        "--select",
        "ACL301,ACL302",
        "--",
        "--epochs",
        "2",
        "--steps-per-epoch",
        "8",
    )
    seen = _seen(report)
    assert seen == {("ACL301", 114): "seen", ("ACL302", 131): "seen"}
    details = {f["code"]: f["detail"] for f in report["runtime"]["findings"]}
    assert details["ACL302"].endswith("zero-filled instead of None: zero_grad(set_to_none=False)")


RUNTIME_ONLY = """
    import os
    import time

    import torch
    from torch import nn
    from torch.utils.data import DataLoader, Dataset


    class SlowRecords(Dataset):
        def __init__(self):
            g = torch.Generator().manual_seed(0)
            self.x = torch.randn(256, 3, 8, 8, generator=g)
            self.y = torch.randint(0, 2, (256,), generator=g)

        def __len__(self):
            return len(self.y)

        def __getitem__(self, index):
            time.sleep(0.002)  # a read from slow storage
            return self.x[index], self.y[index]


    def main():
        torch.manual_seed(0)
        workers = int(os.environ.get("TRAIN_WORKERS", "0"))  # known only at run time
        loader = DataLoader(SlowRecords(), batch_size=16, shuffle=True, num_workers=workers)
        model = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.Flatten(),
            nn.Linear(8 * 8 * 8, 2),
        )
        optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
        for epoch in range(3):
            for x, y in loader:
                optimizer.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                optimizer.step()


    if __name__ == "__main__":
        main()
"""


@pytest.mark.slow
def test_the_probe_reports_what_the_static_rules_missed(tmp_path: Path) -> None:
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(textwrap.dedent(RUNTIME_ONLY).lstrip(), encoding="utf-8")
    # --python: the interpreter named explicitly (checked for torch before anything else)
    report = _verify(script, tmp_path, "--steps", "12", "--python", sys.executable)
    assert report["python"] == f"{sys.executable} (Python {sys.version.split()[0]})"
    # statically only the conv bias is found (the worker count comes from the environment)
    assert [f["code"] for f in report["fixes"]] == ["ACL201"]
    assert _seen(report) == {("ACL201", 28): "seen"}
    (missed,) = report["runtime"]["runtime_only"]
    assert (missed["code"], missed["name"], missed["row"]) == (
        "ACL101",
        "dataloader-sync-loading",
        26,
    )
    assert missed["detail"].startswith("num_workers=0: it fed training, and the loop waited")
