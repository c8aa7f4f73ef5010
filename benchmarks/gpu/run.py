"""Verify the guides' fixes where their speedups happen: on a CUDA GPU.

Runs `accel-lint verify` (JSON and HTML report) on each workload under
`workloads/`, one GPU version of a fixture per group of rules, and writes the
reports and a summary (`summary.json`, `summary.md`) under one folder:

    python benchmarks/gpu/run.py                      # CUDA: full size, timed
    python benchmarks/gpu/run.py --device cpu         # dry mode: small, few steps
    python benchmarks/gpu/run.py --only cnn,eval-loop --out /tmp/gpu
    python benchmarks/gpu/run.py --budget 480         # every workload within 8 minutes

`--budget` shares a wall-clock budget among the workloads still to run: each gets
an equal share of what is left (a quick one leaves more for the rest), and one that
overruns its share is stopped with everything it started and reported as such, so a
lent GPU's minutes are never spent on one workload. `device.sh` beside this file
runs it on a GPU machine with no network (wheels carried in `wheelhouse/`).

The dry mode runs the same scripts and the same verifier on the CPU, sized to
take seconds, so that everything but the CUDA path is proven before a GPU run
(`tests/test_gpu_benchmark.py` runs it). It never imports torch itself: the
workloads and the verifier do, in their own processes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
WORKLOADS_DIR = HERE / "workloads"


@dataclass(frozen=True)
class Workload:
    name: str
    script: str  # relative to workloads/
    codes: tuple[str, ...]  # the fixes this workload is built to judge
    what: str

    @property
    def path(self) -> Path:
        return WORKLOADS_DIR / self.script


WORKLOADS = (
    Workload("cnn", "cnn/train.py", ("ACL201", "ACL202", "ACL203"), "ResNet-style CNN, conv+BN"),
    Workload(
        "images-sync",
        "images/sync_loader.py",
        ("ACL101", "ACL102"),
        "decoding compressed images in the training process",
    ),
    Workload(
        "images-pinned",
        "images/pinned_loader.py",
        ("ACL103", "ACL104"),
        "pinned loader workers over short epochs",
    ),
    Workload(
        "params-manual-zero",
        "many_params/manual_zero.py",
        ("ACL301", "ACL316"),
        "96 residual blocks (578 tensors), per-tensor zeroing, foreach off",
    ),
    Workload(
        "params-keep-grads",
        "many_params/keep_grads.py",
        ("ACL302", "ACL309"),
        "96 residual blocks (578 tensors), gradients kept, Adam unfused",
    ),
    Workload(
        "bf16-scaler",
        "bf16_scaler/train.py",
        ("ACL312",),
        "transformer encoder, bf16 autocast with a GradScaler",
    ),
    Workload("eval-loop", "eval_loop/train.py", ("ACL311",), "validation every 2 steps"),
)
BY_NAME = {workload.name: workload for workload in WORKLOADS}


@dataclass(frozen=True)
class Mode:
    """How hard to run: the GPU run is timed; the dry run proves the plumbing."""

    device: str
    script_args: tuple[str, ...]
    steps: int
    repeat: int
    timeout: float


MODES = {
    "cuda": Mode("cuda", ("--size", "full"), steps=40, repeat=5, timeout=600.0),
    "cpu": Mode("cpu", ("--size", "small", "--no-cuda"), steps=8, repeat=0, timeout=300.0),
}


def verify_command(
    python: str, workload: Workload, mode: Mode, out: Path, steps: int, repeat: int
) -> list[str]:
    return [
        python,
        "-m",
        "accel_lint",
        "verify",
        str(workload.path),
        "--isolated",
        "--select",
        ",".join(workload.codes),
        "--unsafe-fixes",
        "--output-format",
        "json",
        "--report",
        str(out / f"{workload.name}.html"),
        "--steps",
        str(steps),
        "--repeat",
        str(repeat),
        "--timeout",
        str(mode.timeout),
        "--",
        *mode.script_args,
    ]


def machine(python: str, device: str) -> dict[str, Any]:
    """What the runs ran on, asked of the interpreter that runs them."""
    probe = (
        "import json, torch\n"
        "cuda = torch.cuda.is_available()\n"
        "print(json.dumps({'torch': torch.__version__, 'cuda': torch.version.cuda,"
        " 'cuda_available': cuda,"
        " 'gpu': torch.cuda.get_device_name(0) if cuda else None,"
        " 'gpus': torch.cuda.device_count() if cuda else 0}))"
    )
    done = subprocess.run([python, "-c", probe], capture_output=True, text=True, check=False)
    found: dict[str, Any] = json.loads(done.stdout) if done.returncode == 0 else {}
    found.update(
        {
            "device": device,
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count(),
        }
    )
    if done.returncode != 0:
        found["error"] = done.stderr.strip().splitlines()[-1:] or ["torch cannot be imported"]
    return found


def fix_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """One row per fix: where, verdict, speed with its interval, memory."""
    rows = []
    for fix in report.get("fixes", []):
        speed = fix.get("speed") or {}
        rows.append(
            {
                "code": fix.get("code"),
                "row": fix.get("row"),
                "class": fix.get("class"),
                "verdict": fix.get("verdict"),
                "reason": fix.get("reason"),
                "speed_label": speed.get("label"),
                "ratio": speed.get("ratio"),
                "interval": speed.get("interval"),
                "steps_per_s": (speed.get("steps_per_s") or {}).get("median"),
                "peak_memory_bytes": speed.get("peak_memory_bytes"),
                "peak_device_memory_bytes": speed.get("peak_device_memory_bytes"),
            }
        )
    return rows


def _run_within(
    command: list[str], cwd: Path, seconds: float | None
) -> tuple[int | None, str, str]:
    """Run `command` in a session of its own; past `seconds`, end the whole session
    (verify's runs are its grandchildren). The exit code is None when it was stopped."""
    process = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=cwd,
        env={**os.environ, "NO_COLOR": "1"},
        start_new_session=True,
    )
    try:
        stdout, stderr = process.communicate(timeout=seconds)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        stdout, stderr = process.communicate()
        return None, stdout, stderr
    return process.returncode, stdout, stderr


def run_workload(
    python: str,
    workload: Workload,
    mode: Mode,
    out: Path,
    steps: int,
    repeat: int,
    share: float | None = None,
) -> dict[str, Any]:
    """Verify one workload; `share`: the wall-clock seconds it may take (verify's own
    per-run `--timeout` takes whole seconds from 1: the share is enforced here)."""
    if share is not None:
        mode = Mode(
            mode.device,
            mode.script_args,
            mode.steps,
            mode.repeat,
            min(mode.timeout, max(share, 1.0)),
        )
    command = verify_command(python, workload, mode, out, steps, repeat)
    started = time.perf_counter()
    returncode, stdout, stderr = _run_within(command, workload.path.parent, share)
    seconds = time.perf_counter() - started
    (out / f"{workload.name}.log").write_text(stderr, encoding="utf-8")
    result: dict[str, Any] = {
        "name": workload.name,
        "script": workload.script,
        "what": workload.what,
        "codes": list(workload.codes),
        "exit_code": returncode,
        "seconds": round(seconds, 1),
        "json": f"{workload.name}.json",
        "html": f"{workload.name}.html",
        "log": f"{workload.name}.log",
    }
    if returncode is None:
        result["error"] = f"stopped at its share of the time budget ({share:.0f} s)"
        return result
    try:
        report = json.loads(stdout)
    except json.JSONDecodeError:
        result["error"] = "verify printed no JSON report; see the log"
        return result
    (out / result["json"]).write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    result["device"] = report.get("device")
    result["fixes"] = fix_rows(report)
    judged = {row["code"] for row in result["fixes"]}
    missing = [code for code in workload.codes if code not in judged]
    if missing:
        result["error"] = f"no fix of {', '.join(missing)} was judged"
    elif report.get("error"):
        result["error"] = str(report["error"])
    return result


def _ratio(row: dict[str, Any]) -> str:
    ratio, interval = row.get("ratio"), row.get("interval")
    if ratio is None:
        return row.get("speed_label") or "not timed"
    text = f"{ratio:.2f}x"
    if isinstance(interval, list | tuple) and len(interval) == 2:
        text += f" [{interval[0]:.2f}, {interval[1]:.2f}]"
    return f"{text} ({row.get('speed_label')})" if row.get("speed_label") else text


def _mib(value: Any) -> str:
    return f"{value / 2**20:.0f} MiB" if isinstance(value, int | float) else "-"


def summary_markdown(summary: dict[str, Any]) -> str:
    found = summary["machine"]
    lines = [
        f"# accel-lint verify on {found.get('gpu') or 'CPU (dry mode)'}",
        "",
        f"torch {found.get('torch')} (CUDA {found.get('cuda')}), Python {found.get('python')}, "
        f"{found.get('cpus')} CPUs, {summary['steps']} steps per run, "
        f"{summary['repeat']} timing runs per side.",
        "",
        "| workload | fix | row | verdict | speedup [interval] | peak memory | device peak |",
        "|---|---|---:|---|---|---:|---:|",
    ]
    for workload in summary["workloads"]:
        if not workload.get("fixes"):
            lines.append(
                f"| {workload['name']} | {', '.join(workload['codes'])} | | "
                f"{workload.get('error', 'failed')} | | | |"
            )
        lines.extend(
            f"| {workload['name']} | {row['code']} | {row['row']} | {row['verdict']} | "
            f"{_ratio(row)} | {_mib(row['peak_memory_bytes'])} | "
            f"{_mib(row['peak_device_memory_bytes'])} |"
            for row in workload.get("fixes", [])
        )
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=sorted(MODES), default="cuda")
    parser.add_argument("--out", type=Path, help="folder for the reports")
    parser.add_argument("--only", help="comma-separated workload names: " + ", ".join(BY_NAME))
    parser.add_argument("--steps", type=int, help="optimizer steps per run")
    parser.add_argument("--repeat", type=int, help="timing runs per side (0: no timing)")
    parser.add_argument("--python", default=sys.executable, help="interpreter for the runs")
    parser.add_argument(
        "--budget", type=float, help="wall-clock seconds for every workload together"
    )
    return parser.parse_args(argv)


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    mode = MODES[args.device]
    names = [name.strip() for name in args.only.split(",")] if args.only else list(BY_NAME)
    unknown = [name for name in names if name not in BY_NAME]
    if unknown:
        print(f"unknown workload: {', '.join(unknown)} (known: {', '.join(BY_NAME)})")
        return 2
    found = machine(args.python, mode.device)
    if mode.device == "cuda" and not found.get("cuda_available"):
        print("no CUDA device here: run with --device cpu for the dry mode")
        return 2
    out: Path = args.out or HERE / "reports" / mode.device
    out.mkdir(parents=True, exist_ok=True)
    steps = args.steps or mode.steps
    repeat = mode.repeat if args.repeat is None else args.repeat
    results = []
    started = time.perf_counter()
    for index, name in enumerate(names):
        share = None
        if args.budget is not None:
            left = args.budget - (time.perf_counter() - started)
            share = max(left, 0.0) / (len(names) - index)
        print(f"{name}: verifying {', '.join(BY_NAME[name].codes)} ...", flush=True)
        result = run_workload(args.python, BY_NAME[name], mode, out, steps, repeat, share)
        verdicts = ", ".join(f"{row['code']} {row['verdict']}" for row in result.get("fixes", []))
        print(f"{name}: {result.get('error') or verdicts} ({result['seconds']} s)", flush=True)
        results.append(result)
    summary = {
        "machine": found,
        "steps": steps,
        "repeat": repeat,
        "budget": args.budget,
        "seconds": round(time.perf_counter() - started, 1),
        "workloads": results,
    }
    (out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n", encoding="utf-8")
    (out / "summary.md").write_text(summary_markdown(summary), encoding="utf-8")
    print(f"reports in {out}")
    return 1 if any("error" in result for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
