"""What `accel-lint check one_file.py` costs as a whole process (what pre-commit runs on
every commit): median wall and CPU seconds over repeated runs, for a training script
with findings, for a file that mentions no rule's trigger word, and for a cache hit;
and which modules the run imported.

    python benchmarks/bench_startup.py [--runs 15]

A script, not a test: numbers depend on the machine and its load (CPU seconds, from
the OS accounting of the finished process, move least with foreign load).
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PLAIN = "import os\n\n\ndef main():\n    return os.getcwd()\n"


def run_once(args: list[str], cwd: Path) -> tuple[float, float]:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(args, cwd=cwd, capture_output=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def loaded_modules(path: Path, cwd: Path) -> list[str]:
    probe = (
        "import sys\nfrom accel_lint.cli import main\n"
        "try:\n    main(['check', sys.argv[1], '--no-cache', '-q'])\nexcept SystemExit:\n    pass\n"
        "top = sorted({m.split('.')[0] for m in sys.modules if not m.startswith('_')})\n"
        "sys.stderr.write(' '.join(t for t in top if t in ('libcst', 'rich', 'torch', 'click')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(path)], cwd=cwd, capture_output=True, text=True
    )
    return result.stderr.strip().splitlines()[-1].split() if result.stderr.strip() else []


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    exe = shutil.which("accel-lint") or sys.exit("accel-lint is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        finding = work / "train.py"
        shutil.copy(ROOT / "fixtures" / "cnn_bn" / "train.py", finding)
        plain = work / "util.py"
        plain.write_text(PLAIN, encoding="utf-8")
        cases = [
            ("file with findings, no cache", [exe, "check", str(finding), "--no-cache", "-q"]),
            ("file with no trigger word, no cache", [exe, "check", str(plain), "--no-cache", "-q"]),
            ("file with findings, cache hit", [exe, "check", str(finding), "-q"]),
        ]
        run_once(cases[2][1], work)  # fill the cache
        print(f"{args.runs} runs each, load average {os.getloadavg()[0]:.1f}")
        for label, command in cases:
            samples = [run_once(command, work) for _ in range(args.runs)]
            wall = statistics.median(s[0] for s in samples)
            cpu = statistics.median(s[1] for s in samples)
            print(f"{label:40} wall {wall:6.3f} s   CPU {cpu:6.3f} s")
        for label, path in (("findings", finding), ("no trigger", plain)):
            print(f"imported ({label}): {' '.join(loaded_modules(path, work)) or '-'}")


if __name__ == "__main__":
    main()
