"""benchmarks/gpu: every workload shows the findings it is built to judge, and the
dry mode (`--device cpu`) runs the whole benchmark through the real verifier."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from types import ModuleType

import pytest

from tests.support import ROOT, cli

BENCHMARK = ROOT / "benchmarks" / "gpu" / "run.py"


def _driver() -> ModuleType:
    spec = importlib.util.spec_from_file_location("gpu_benchmark", BENCHMARK)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up by name
    spec.loader.exec_module(module)
    return module


def test_every_workload_has_the_findings_it_is_built_to_judge() -> None:
    driver = _driver()
    workloads = driver.WORKLOADS
    codes = sorted({code for workload in workloads for code in workload.codes})
    ran = cli(
        "check",
        *(str(workload.path) for workload in workloads),
        "--isolated",
        "--no-cache",
        "--select",
        ",".join(codes),
        "--output-format",
        "json",
        cwd=ROOT,
    )
    assert ran.returncode == 1, ran.stderr
    found: dict[str, set[str]] = {}
    for finding in json.loads(ran.stdout):
        found.setdefault(Path(finding["filename"]).as_posix(), set()).add(finding["code"])
    for workload in workloads:
        script = workload.path.as_posix()
        # its own codes at least (others of the selection may fire too: verify is told
        # to judge this workload's codes only)
        assert set(workload.codes) <= found.get(script, set()), (workload.name, found.get(script))
    # the guides' groups are all covered, each fix by one workload
    assert codes == [
        *("ACL101", "ACL102", "ACL103", "ACL104", "ACL201", "ACL202", "ACL203"),
        *("ACL301", "ACL302", "ACL309", "ACL311", "ACL312", "ACL316"),
    ]


def test_an_unknown_workload_or_a_missing_gpu_is_a_clear_error(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--only", "nope", "--out", str(tmp_path)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout.startswith("unknown workload: nope (known: cnn, images-sync")


def test_summary_rows_carry_verdict_speed_and_memory() -> None:
    driver = _driver()
    report = {
        "fixes": [
            {
                "code": "ACL203",
                "row": 86,
                "class": "exact",
                "verdict": "holds",
                "reason": "bitwise equal",
                "speed": {
                    "label": "faster",
                    "ratio": 1.31,
                    "interval": [1.2, 1.4],
                    "steps_per_s": {"median": 50.0, "min": 48.0, "max": 52.0},
                    "peak_memory_bytes": 3 * 2**20,
                    "peak_device_memory_bytes": 512 * 2**20,
                },
            }
        ]
    }
    rows = driver.fix_rows(report)
    assert rows == [
        {
            "code": "ACL203",
            "row": 86,
            "class": "exact",
            "verdict": "holds",
            "reason": "bitwise equal",
            "speed_label": "faster",
            "ratio": 1.31,
            "interval": [1.2, 1.4],
            "steps_per_s": 50.0,
            "peak_memory_bytes": 3 * 2**20,
            "peak_device_memory_bytes": 512 * 2**20,
        }
    ]
    summary = {
        "machine": {"gpu": "NVIDIA H100", "torch": "2.11.0", "cuda": "12.8", "python": "3.12"},
        "steps": 40,
        "repeat": 5,
        "workloads": [{"name": "cnn", "codes": ["ACL203"], "fixes": rows}],
    }
    summary["machine"]["cpus"] = 16
    table = driver.summary_markdown(summary)
    assert "# accel-lint verify on NVIDIA H100" in table
    assert "| cnn | ACL203 | 86 | holds | 1.31x [1.20, 1.40] (faster) | 3 MiB | 512 MiB |" in table


@pytest.mark.slow
def test_dry_mode_verifies_every_workload_on_the_cpu(tmp_path: Path) -> None:
    pytest.importorskip("torch")
    out = tmp_path / "reports"
    done = subprocess.run(
        [sys.executable, str(BENCHMARK), "--device", "cpu", "--out", str(out), "--steps", "4"],
        capture_output=True,
        text=True,
        check=False,
        timeout=1200,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["machine"]["device"] == "cpu" and summary["machine"]["cuda_available"] is False
    judged = {
        workload["name"]: sorted({row["code"] for row in workload["fixes"]})
        for workload in summary["workloads"]
    }
    driver = _driver()
    assert judged == {w.name: sorted(w.codes) for w in driver.WORKLOADS}
    for workload in summary["workloads"]:
        assert workload["exit_code"] in (0, 1), workload  # 2: a run failed
        html = (out / workload["html"]).read_text(encoding="utf-8")
        assert html.startswith("<!DOCTYPE html>") and "<script" not in html
        for row in workload["fixes"]:
            assert row["verdict"] in ("holds", "fails", "not-verifiable"), row
    table = (out / "summary.md").read_text(encoding="utf-8")
    assert table.startswith("# accel-lint verify on CPU (dry mode)")


def test_a_workload_past_its_share_of_the_budget_is_stopped_and_said(tmp_path: Path) -> None:
    out = tmp_path / "reports"
    done = subprocess.run(
        [
            sys.executable,
            str(BENCHMARK),
            "--device",
            "cpu",
            "--only",
            "cnn",
            "--out",
            str(out),
            "--budget",
            "0.5",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["budget"] == 0.5
    (workload,) = summary["workloads"]
    assert workload["exit_code"] is None
    assert workload["error"] == "stopped at its share of the time budget (0 s)"
    assert "| cnn | ACL201, ACL202, ACL203 | | stopped at its share" in (
        out / "summary.md"
    ).read_text(encoding="utf-8")


@pytest.mark.slow
def test_device_script_installs_nothing_present_and_packs_what_comes_back(
    tmp_path: Path,
) -> None:
    """The GPU call's script, rehearsed on the CPU: what comes back is at most 8 files
    (the device tool's limit), the reports packed in one archive."""
    pytest.importorskip("torch")
    out = tmp_path / "out"
    done = subprocess.run(
        [
            "bash",
            str(ROOT / "benchmarks" / "gpu" / "device.sh"),
            "--device",
            "cpu",
            "--only",
            "eval-loop",
            "--steps",
            "2",
            "--repeat",
            "0",
        ],
        capture_output=True,
        text=True,
        check=False,
        timeout=900,
        env={**os.environ, "OUT": str(out), "PYTHON": sys.executable},
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert sorted(p.name for p in out.iterdir()) == [
        "device.log",
        "machine.txt",
        "reports.tar.gz",
        "summary.json",
        "summary.md",
    ]
    machine = (out / "machine.txt").read_text(encoding="utf-8")
    assert "torch " in machine and "accel-lint " in machine
    with tarfile.open(out / "reports.tar.gz") as packed:
        names = set(packed.getnames())
    assert {"reports/eval-loop.json", "reports/eval-loop.html", "reports/summary.md"} <= names
    summary = json.loads((out / "summary.json").read_text(encoding="utf-8"))
    assert summary["budget"] == 480 and summary["steps"] == 2
    assert [row["verdict"] for row in summary["workloads"][0]["fixes"]] == ["holds"]
