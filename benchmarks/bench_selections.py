"""Cold `accel-lint check` on one corpus for several rule selections and builds, in
one run, to see what a group of rules costs (issue 12's budget: the second wave of
rules may make `check --select ALL` on torch's sources at most 25% slower).

    python benchmarks/bench_selections.py                       # the installed torch's sources
    python benchmarks/bench_selections.py --baseline /path/to/older/checkout
    python benchmarks/bench_selections.py --corpus ~/src/proj --runs 3

Each run is `python -m accel_lint check <corpus> --isolated --no-cache --exit-zero -q
--select <codes>` in its own process (the default 2 workers); CPU seconds include the
workers. A baseline checkout runs with `PYTHONPATH=<checkout>` and `--select ALL`. For
each selection the prefilter's count of files to parse (and their MB) comes first: it
explains most of the cost, because parsing is most of it. Runs alternate between the
selections, so a change of load on a shared machine meets all of them; the median of
`--runs` is printed. A script, not a test: numbers depend on the machine and its load.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path

# the rules of 0.1.0 and ACL001, what `--select ALL` ran before the second wave
FIRST = "ACL001,ACL101,ACL102,ACL201,ACL301,ACL302,ACL401,ACL402,ACL403,ACL404"
# the second wave (issue 12): data loading, host-to-device copies, model and kernels
SECOND = "ACL103,ACL104,ACL105,ACL202,ACL203,ACL204,ACL205,ACL206,ACL207,ACL208,ACL209"


def torch_sources() -> Path:
    import importlib.util

    spec = importlib.util.find_spec("torch")
    if spec is None or spec.origin is None:
        sys.exit("torch is not installed here: pass --corpus")
    return Path(spec.origin).parent


def parsed_share(corpus: Path, codes: str) -> tuple[int, int, float]:
    """Files, files both prefilters let through for `codes` (libcst parses them), and
    their MB."""
    sys.path.insert(0, str(HERE))
    from accel_lint.called import called
    from accel_lint.engine import rules_for
    from accel_lint.rules import BY_CODE, RULES
    from accel_lint.source import compile_ast

    wanted = frozenset(e.code for e in RULES) if codes == "ALL" else frozenset(codes.split(","))
    files = through = size = 0
    for path in corpus.rglob("*.py"):
        data = path.read_bytes()
        files += 1
        rules = rules_for(wanted, data)
        if rules:
            try:
                seen = called(compile_ast(data.decode("utf-8", "replace"), str(path)))
                rules = [r for r in rules if BY_CODE[r.code].may_call(seen)]
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                pass  # libcst decides
        if rules:
            through += 1
            size += len(data)
    return files, through, size / 1e6


# this checkout: what the selections run (not whatever the venv has installed)
HERE = Path(__file__).resolve().parent.parent


def run_once(corpus: Path, codes: str, checkout: Path) -> tuple[float, float]:
    # `-m` puts the working directory first on sys.path: run from the filesystem root so
    # that PYTHONPATH, not the directory the benchmark was started in, picks the build
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    subprocess.run(
        [
            *(sys.executable, "-m", "accel_lint", "check", str(corpus), "--isolated"),
            *("--no-cache", "--exit-zero", "-q", "--select", codes),
        ],
        env=env,
        cwd="/",
        check=True,
        stdout=subprocess.DEVNULL,
    )
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, default=None)
    parser.add_argument(
        "--baseline", type=Path, action="append", default=[], help="an older checkout (repeatable)"
    )
    parser.add_argument("--runs", type=int, default=1)
    args = parser.parse_args()
    corpus = args.corpus or torch_sources()
    variants: list[tuple[str, str, Path]] = [
        (f"{baseline.name} (ALL)", "ALL", baseline.resolve()) for baseline in args.baseline
    ]
    variants += [
        ("first rules (0.1 + ACL001)", FIRST, HERE),
        ("first + second wave", f"{FIRST},{SECOND}", HERE),
        ("ALL", "ALL", HERE),
    ]
    print(f"corpus {corpus}, load average {os.getloadavg()[0]:.1f}")
    for label, codes, path in variants:
        if path == HERE:
            files, through, size = parsed_share(corpus, codes)
            print(f"  {label}: {through} of {files} files parsed ({size:.1f} MB)")
    results: dict[str, list[tuple[float, float]]] = {label: [] for label, _, _ in variants}
    for _ in range(args.runs):
        for label, codes, path in variants:
            results[label].append(run_once(corpus, codes, path))
    print(f"{'run':<32} {'wall s':>8} {'CPU s':>8} {'vs first':>9}")
    first = statistics.median(cpu for _, cpu in results[variants[-3][0]])
    for label, _, _ in variants:
        wall = statistics.median(w for w, _ in results[label])
        cpu = statistics.median(c for _, c in results[label])
        print(f"{label:<32} {wall:>8.1f} {cpu:>8.1f} {cpu / first - 1:>+8.0%}")
    print(f"load average after: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
