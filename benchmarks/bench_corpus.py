"""Lint a large real corpus with accel-lint (cold, then warm from the cache) and,
when it is installed, with TorchFix, in the same run; print files/s for each.

    python benchmarks/bench_corpus.py                      # the installed torch's sources
    python benchmarks/bench_corpus.py --corpus ~/src/proj  # any tree of .py files
    python benchmarks/bench_corpus.py --torchfix-cmd /tmp/tfvenv/bin/torchfix

The corpus's `.py` files are copied to a temporary directory first, so no
configuration or cache of theirs interferes, and both tools see the same files.
accel-lint runs as `accel-lint check --select ALL` (every rule on), cold with
`--no-cache` (half of the runs before TorchFix, half after, so both tools meet
the same load on a shared machine) and warm after one run has filled a fresh
cache; TorchFix as `torchfix --select ALL` (lint only). files/s = .py files in the corpus / wall
seconds of the whole process (start-up included); CPU seconds include the
worker processes. TorchFix pins `libcst<1.6`, so install it in its own venv:
`python -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install torchfix`.
This is a script, not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Timing:
    label: str
    command: list[str]
    walls: list[float] = field(default_factory=list)
    cpus: list[float] = field(default_factory=list)
    exit_codes: list[int] = field(default_factory=list)

    @property
    def wall(self) -> float:
        return statistics.median(self.walls)

    @property
    def cpu(self) -> float:
        return statistics.median(self.cpus)


def installed_torch_sources() -> Path:
    # find_spec does not import torch (seconds, and not needed)
    spec = importlib.util.find_spec("torch")
    if spec is None or not spec.submodule_search_locations:
        sys.exit("torch is not installed here: pass --corpus PATH")
    return Path(next(iter(spec.submodule_search_locations)))


def copy_corpus(source: Path, dest: Path, sample: int) -> list[Path]:
    """Copy every `sample`-th .py file (sorted by path) from source into dest."""
    files = sorted(p for p in source.rglob("*.py") if p.is_file())[::sample]
    copied = []
    for path in files:
        target = dest / source.name / path.relative_to(source)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, target)
        copied.append(target)
    return copied


def describe(files: list[Path]) -> dict[str, int]:
    from accel_lint.config import Selection, load_settings
    from accel_lint.engine import rules_for

    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    size = lines = parsed = 0
    for path in files:
        data = path.read_bytes()
        size += len(data)
        lines += data.count(b"\n")
        parsed += bool(rules_for(settings.enabled, data))
    return {"files": len(files), "bytes": size, "lines": lines, "parsed": parsed}


def timed(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float, int]:
    """Wall and CPU seconds (the process and every child it waited for), exit code."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(
        command, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if result.returncode not in (0, 1):
        sys.stderr.write(result.stderr.decode(errors="replace")[-2000:])
    return wall, cpu, result.returncode


def measure(timing: Timing, runs: int, cwd: Path, env: dict[str, str]) -> Timing:
    for _ in range(runs):
        wall, cpu, code = timed(timing.command, cwd, env)
        timing.walls.append(wall)
        timing.cpus.append(cpu)
        timing.exit_codes.append(code)
        load = os.getloadavg()[0]  # other tenants' load shows up as wall >> CPU / cores
        print(
            f"  {timing.label}: {wall:.2f} s wall, {cpu:.2f} s CPU (exit {code}; "
            f"load average {load:.1f} after)",
            flush=True,
        )
    return timing


def find_torchfix(explicit: str | None) -> list[str] | None:
    if explicit:
        return [explicit]
    on_path = shutil.which("torchfix")
    if on_path:
        return [on_path]
    if importlib.util.find_spec("torchfix") is not None:
        return [sys.executable, "-m", "torchfix"]
    return None


def tool_version(command: list[str]) -> str:
    result = subprocess.run([*command, "--version"], capture_output=True, text=True)
    return (
        (result.stdout or result.stderr).strip().splitlines()[-1] if result.returncode == 0 else "?"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a directory of .py files (default: torch's)")
    parser.add_argument("--torchfix", action="store_true", help="fail if TorchFix is not found")
    parser.add_argument(
        "--torchfix-cmd", help="the torchfix executable (e.g. /tmp/tfvenv/bin/torchfix)"
    )
    parser.add_argument(
        "--no-torchfix", action="store_true", help="skip TorchFix even if installed"
    )
    parser.add_argument("--runs", type=int, default=3, help="runs of each accel-lint mode (median)")
    parser.add_argument("--torchfix-runs", type=int, default=1, help="runs of TorchFix")
    parser.add_argument("--jobs", "-j", type=int, help="worker processes for both tools")
    parser.add_argument("--serial", action="store_true", help="also time accel-lint with -j 1")
    parser.add_argument("--sample", type=int, default=1, help="use every N-th file only")
    parser.add_argument("--json", type=Path, help="also write the results to this file")
    args = parser.parse_args()

    source = (args.corpus or installed_torch_sources()).resolve()
    torchfix = None if args.no_torchfix else find_torchfix(args.torchfix_cmd)
    if args.torchfix and torchfix is None:
        sys.exit("TorchFix not found: pass --torchfix-cmd /path/to/torchfix")

    with tempfile.TemporaryDirectory(prefix="accel-lint-bench-") as tmp:
        root = Path(tmp)
        corpus_parent = root / "corpus"
        files = copy_corpus(source, corpus_parent, args.sample)
        corpus = corpus_parent / source.name
        facts = describe(files)
        print(
            f"corpus: {source} -> {corpus}\n"
            f"  {facts['files']} .py files, {facts['bytes'] / 1e6:.1f} MB, "
            f"{facts['lines']:,} lines; "
            f"{facts['parsed']} contain a rule's trigger words (parsed and walked), "
            f"{facts['files'] - facts['parsed']} only syntax-checked",
            flush=True,
        )
        env = {**os.environ, "ACCEL_LINT_CACHE_DIR": str(root / "cache"), "NO_COLOR": "1"}
        accel = [sys.executable, "-m", "accel_lint", "check", "--select", "ALL", "--exit-zero"]
        accel += ["--output-format", "concise", "--isolated"]
        jobs = ["--jobs", str(args.jobs)] if args.jobs else []
        timings: list[Timing] = []
        cold = Timing("accel-lint cold (--no-cache)", [*accel, *jobs, "--no-cache", str(corpus)])
        tf: Timing | None = None
        if torchfix is not None:
            tf = Timing(
                f"torchfix {tool_version(torchfix)}",
                [*torchfix, "--select", "ALL", *jobs, str(corpus)],
            )
        # On a shared machine the load drifts: cold runs before and after TorchFix
        # (and TorchFix in between) so both tools meet the same conditions.
        measure(cold, (args.runs + 1) // 2 if tf else args.runs, root, env)
        if tf is not None:
            timings.append(measure(tf, args.torchfix_runs, root, env))
            measure(cold, args.runs // 2, root, env)
        timings.insert(0, cold)
        if args.serial:
            serial = Timing(
                "accel-lint cold, -j 1", [*accel, "--jobs", "1", "--no-cache", str(corpus)]
            )
            timings.append(measure(serial, args.runs, root, env))
        fill = Timing("accel-lint filling the cache", [*accel, *jobs, str(corpus)])
        timings.append(measure(fill, 1, root, env))
        warm = Timing("accel-lint warm (cache)", [*accel, *jobs, str(corpus)])
        timings.append(measure(warm, args.runs, root, env))

    n = facts["files"]
    print(f"\n{'':34} {'wall s':>8} {'CPU s':>8} {'files/s':>9} {'CPU ms/file':>12}")
    for t in timings:
        print(f"{t.label:34} {t.wall:8.2f} {t.cpu:8.2f} {n / t.wall:9.1f} {1000 * t.cpu / n:12.2f}")
    print(f"\nwarm vs cold: {cold.wall / warm.wall:.1f}x faster (wall)")
    if tf is not None:
        print(
            f"accel-lint cold vs TorchFix: {tf.wall / cold.wall:.1f}x the files/s "
            f"({n / cold.wall:.1f} vs {n / tf.wall:.1f}); CPU {tf.cpu / cold.cpu:.1f}x less"
        )
    print(
        f"machine: {platform.platform()}, {os.cpu_count()} CPUs, Python {platform.python_version()}"
    )
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "corpus": str(source),
                    **facts,
                    "timings": [{**asdict(t), "wall": t.wall, "cpu": t.cpu} for t in timings],
                },
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
