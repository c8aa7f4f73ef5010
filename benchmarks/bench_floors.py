"""accel-lint's CPU as a ratio to a floor or a peer measured in the same run.

    python benchmarks/bench_floors.py [--runs 7] [--only one-file,repo,peers,jobs]
        (or --only instructions)
        [--repo DIR] [--tree DIR] [--torchfix-cmd /tmp/tfvenv/bin/torchfix]
        [--torchfix-pairs 1]
        [--ruff-cmd /tmp/tfvenv/bin/ruff]

Each figure pairs two whole processes and alternates them (A B A B ...), so that
foreign load falls on both alike; CPU seconds come from the OS accounting of the
finished process and its workers (`RUSAGE_CHILDREN`), and the ratio printed is
the median of the per-pair ratios (with each side's median beside it):

- `one-file`: `accel-lint check train.py --no-cache -q` on a training script with
  findings (`fixtures/cnn_bn/train.py`, what pre-commit runs on one commit) against
  the floor `python -c "import libcst; libcst.parse_module(...)"` of the same file;
- `repo`: `check REPO --select ALL --jobs 1 --no-cache -q` against one process
  that imports libcst and parses every Python file of the same tree with it;
- `peers`: TorchFix (`--select ALL --jobs 1`) and ruff (`check --select ALL
  --no-cache --isolated`) on the same tree, against the same `check` command
  (TorchFix's ratio is its CPU over ours; ruff's is ours over ruff's);
- `ast-first`: what the design "analyse CPython's tree first, parse with libcst
  only the files with findings" could at best save on the repository: in one
  process, CPython's `ast.parse` of every file, libcst's parse of the files
  `check` parses today (those the trigger words and calls let through), and
  libcst's parse of the files with findings only;
- `jobs`: `check TREE --select ALL --no-cache -q --jobs 2` against `--jobs 1`
  on a tree of 300 files (by default spread evenly over the training
  repositories of `/work/corpus`, copied to a temporary directory); and its
  floor, what two processes at once cost on the machine whoever runs them: two
  `--jobs 1` runs on the tree's halves started together, against the same two
  one after the other;
- `instructions`: the `one-file`, `repo` and `jobs` pairs counted in instructions
  executed (valgrind's `cachegrind --cache-sim=no`, user space, one run each:
  about 15x slower than the CPU pairs; `--jobs 2` with its workers: valgrind
  counts a forked worker on from its parent's count at the fork, which is
  measured alone and taken off). CPU seconds on a shared virtual machine
  drift by up to 40% between identical runs; the count repeats to 0.1%, so it
  shows what a change did. It is not time (libcst's native parser and our Python
  differ in instructions per second), and CPU time is what the goals are about:
  on pytorch/examples the CPU ratio came out 0.15-0.2 above the instruction
  ratio in the three 10-pair runs of stops 33 and 34, 0.06-0.12 above in the four
  runs of stop 35, and 0.00-0.04 above at stop 36, once the interpreter's
  teardown at exit (memory-bound work: a tenth of the CPU for 1% of the
  instructions) was skipped (docs/performance.md).

TorchFix and ruff are not dependencies: install them in a throwaway venv (torch
first, pinned, or pip resolves a multi-GB build):

    python3 -m venv /tmp/tfvenv && /tmp/tfvenv/bin/pip install torch==2.13.0 \\
        && /tmp/tfvenv/bin/pip install torchfix ruff

A script, not a test: the numbers depend on the machine and on what else runs on
it (the load average is printed with every figure).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/corpus")
FLOOR_ONE = "import libcst, sys; libcst.parse_module(open(sys.argv[1], 'rb').read())"
FLOOR_TREE = (
    "import libcst, pathlib, sys\n"
    "for p in sorted(pathlib.Path(sys.argv[1]).rglob('*.py')):\n"
    "    try:\n"
    "        libcst.parse_module(p.read_bytes())\n"
    "    except Exception:\n"
    "        pass\n"
)


# as users run it: with the bytecode cache (the first, unpaired run of each command
# writes it), and without the result cache (`--no-cache`)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def cpu_of(args: list[str], cwd: Path) -> float:
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(
        args, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False
    )
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def instructions(args: list[str], cwd: Path) -> int | None:
    """Instructions `args` executes in user space (None without valgrind)."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    command = [valgrind, "--tool=cachegrind", "--cache-sim=no", "--cachegrind-out-file=/dev/null"]
    if Path(args[0]).name != Path(sys.executable).name:
        args = [sys.executable, *args]  # an entry-point script: valgrind runs the interpreter
    done = subprocess.run(
        [*command, *args], cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE
    )
    for line in done.stderr.decode(errors="replace").splitlines():
        if "I   refs:" in line or "I refs:" in line:
            return int(line.rsplit(":", 1)[1].replace(",", "").strip())
    return None


# `check ... --jobs 2` stopped at its first fork (the wrapper is the benchmark's,
# not the product's): what each forked worker's count starts from
FORK_POINT = (
    "import os, sys\n"
    "os.fork = lambda: os._exit(0)\n"
    "from accel_lint.cli import main\n"
    "sys.argv = ['accel-lint', *sys.argv[1:]]\n"
    "main()\n"
)


def forked_instructions(args: list[str], cwd: Path) -> int | None:
    """Instructions of `accel-lint ARGS` and its forked workers together. valgrind
    follows a fork inside the same count, so each worker's count includes what the
    parent had executed when it forked: that is measured alone (`FORK_POINT`) and
    taken off once per worker."""
    valgrind = shutil.which("valgrind")
    if valgrind is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        subprocess.run(
            [
                valgrind,
                "--tool=cachegrind",
                "--cache-sim=no",
                "--trace-children=yes",
                f"--cachegrind-out-file={out}/count.%p",
                sys.executable,
                str(Path(sys.executable).with_name("accel-lint")),
                *args,
            ],
            cwd=cwd,
            env=ENV,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        counts = [
            int(line.split()[1])
            for path in out.glob("count.*")
            for line in path.read_text().splitlines()
            if line.startswith("summary:")
        ]
    at_fork = instructions([sys.executable, "-c", FORK_POINT, *args], cwd)
    if not counts or at_fork is None:
        return None
    return sum(counts) - (len(counts) - 1) * at_fork


def counted(label: str, ours: list[str], other: list[str], cwd: Path, other_label: str) -> None:
    subprocess.run(ours, cwd=cwd, env=ENV, stdout=subprocess.DEVNULL, check=False)  # caches
    a, b = instructions(ours, cwd), instructions(other, cwd)
    if a is None or b is None:
        print(f"{label}: valgrind not found or no count (apt-get install valgrind)")
        return
    print(
        f"{label:44} {'accel-lint / ' + other_label:28} {a / b:6.3f}x  "
        f"(instructions: accel-lint {a / 1e9:.3f} G, {other_label} {b / 1e9:.3f} G)",
        flush=True,
    )


def paired(
    label: str,
    ours: list[str],
    other: list[str],
    runs: int,
    cwd: Path,
    *,
    ours_over_other: bool = True,
    other_label: str = "floor",
    ours_label: str = "accel-lint",
) -> float:
    """Alternate the two commands `runs` times; print and return the median ratio."""
    cpu_of(ours, cwd)  # page cache, bytecode cache
    cpu_of(other, cwd)
    load_before = os.getloadavg()[0]
    a: list[float] = []
    b: list[float] = []
    for index in range(runs):
        first, second = (ours, other) if index % 2 == 0 else (other, ours)
        x = cpu_of(first, cwd)
        y = cpu_of(second, cwd)
        if index % 2 == 0:
            a.append(x)
            b.append(y)
        else:
            a.append(y)
            b.append(x)
    ratios = [x / y if ours_over_other else y / x for x, y in zip(a, b)]
    ratio = statistics.median(ratios)
    what = f"{ours_label} / {other_label}" if ours_over_other else f"{other_label} / {ours_label}"
    print(
        f"{label:44} {what:28} {ratio:6.2f}x  (range {min(ratios):.2f}-{max(ratios):.2f}; "
        f"CPU s median: {ours_label} {statistics.median(a):.2f}, {other_label} "
        f"{statistics.median(b):.2f}; {runs} pairs; load average {load_before:.1f} -> "
        f"{os.getloadavg()[0]:.1f})",
        flush=True,
    )
    return ratio


def ast_first(repo: Path, exe: str, work: Path) -> None:
    """CPU of the parses the ast-first design would keep, against today's."""
    import ast
    import json
    import time

    import libcst

    from accel_lint.called import Called
    from accel_lint.config import Selection, load_settings
    from accel_lint.engine import rules_for
    from accel_lint.parse import parse
    from accel_lint.rules import BY_CODE

    out = subprocess.run(
        [exe, "check", str(repo), "--select", "ALL", "--no-cache", "--output-format", "json"],
        cwd=work,
        env=ENV,
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    with_findings = {str(Path(d["filename"]).resolve()) for d in json.loads(out)}
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    files = sorted(p.resolve() for p in repo.rglob("*.py"))
    texts = {p: p.read_bytes() for p in files}
    parsed_today = []
    for path, data in texts.items():
        rules = rules_for(settings.codes_for(str(path)), data)
        if rules:  # as `engine.analyze` decides, on CPython's tree, before libcst parses

            def wanted(seen: Called, rules: list[Any] = rules) -> bool:
                return any(BY_CODE[rule.code].may_call(seen) for rule in rules)

            if parse(str(path), data.decode("utf-8", "replace"), wanted).module is not None:
                parsed_today.append(path)

    def cpu(paths: list[Path], parser: Callable[[bytes], object]) -> float:
        start = time.process_time()
        for path in paths:
            with contextlib.suppress(Exception):
                parser(texts[path])
        return time.process_time() - start

    everything = cpu(files, ast.parse)
    today = cpu(parsed_today, libcst.parse_module)
    found = [p for p in files if str(p) in with_findings]
    later = cpu(found, libcst.parse_module)
    print(
        f"ast-first on {repo.name}: ast.parse of all {len(files)} files {everything:.2f} s; "
        f"libcst parse of the {len(parsed_today)} files check parses {today:.2f} s; "
        f"of the {len(found)} with findings {later:.2f} s; parse CPU "
        f"{(everything + later) / today:.2f}x today's (load average {os.getloadavg()[0]:.1f})"
    )


# Two `check --jobs 1` runs, on the two halves of a tree, at once or one after the
# other: what running two processes at once costs on this machine, accel-lint's
# workers or not (`jobs`'s floor).
TWO_RUNS = (
    "import subprocess, sys\n"
    "mode, exe, *halves = sys.argv[1:]\n"
    "runs = [[exe, 'check', h, '--select', 'ALL', '--no-cache', '-q', '--jobs', '1']"
    " for h in halves]\n"
    "if mode == 'at-once':\n"
    "    for p in [subprocess.Popen(r, stdout=subprocess.DEVNULL) for r in runs]:\n"
    "        p.wait()\n"
    "else:\n"
    "    for r in runs:\n"
    "        subprocess.run(r, stdout=subprocess.DEVNULL)\n"
)


def halves(tree: Path, dest: Path) -> list[Path]:
    """The tree's Python files dealt alternately into two copies."""
    out = [dest / "first", dest / "second"]
    for index, source in enumerate(sorted(tree.rglob("*.py"))):
        target = out[index % 2] / source.relative_to(tree)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return out


def spread_tree(dest: Path, count: int) -> Path:
    """`count` Python files spread evenly over the corpus's repositories, copied."""
    files = sorted(p for p in CORPUS.glob("*/**/*.py") if p.is_file())
    if len(files) < count:
        sys.exit(f"{CORPUS} holds {len(files)} Python files; {count} wanted (see --tree)")
    step = len(files) / count
    for index in range(count):
        source = files[int(index * step)]
        target = dest / source.relative_to(CORPUS)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(source, target)
    return dest


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--only", default="one-file,repo,peers,jobs")
    parser.add_argument("--repo", type=Path, default=CORPUS / "pytorch+examples")
    parser.add_argument("--tree", type=Path, help="the --jobs tree (default: 300 corpus files)")
    parser.add_argument("--torchfix-cmd", default="/tmp/tfvenv/bin/torchfix")
    # one TorchFix run costs about 40 CPU s: one pair by default
    parser.add_argument("--torchfix-pairs", type=int, default=1)
    parser.add_argument("--ruff-cmd", default="/tmp/tfvenv/bin/ruff")
    args = parser.parse_args()
    only = set(args.only.split(","))
    exe = str(Path(sys.executable).with_name("accel-lint"))
    if not Path(exe).exists():
        sys.exit(f"{exe} is missing: install accel-lint in this venv")
    print(
        f"{os.cpu_count()} CPUs; python {sys.version.split()[0]}; load average "
        f"{' '.join(f'{x:.1f}' for x in os.getloadavg())}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)

        def check(*more: str) -> list[str]:
            return [exe, "check", *more, "--no-cache", "-q"]

        def jobs_tree() -> Path:
            if args.tree is not None:
                return Path(args.tree)
            tree = work / "tree"
            return tree if tree.is_dir() else spread_tree(tree, 300)

        script = work / "train.py"
        shutil.copyfile(ROOT / "fixtures" / "cnn_bn" / "train.py", script)
        one_file = "one file with findings (cnn_bn/train.py)"
        one_floor = [sys.executable, "-c", FLOOR_ONE, str(script)]
        if "one-file" in only:
            paired(one_file, check(str(script)), one_floor, args.runs, work)
        repo = str(args.repo)
        ours = check(repo, "--select", "ALL", "--jobs", "1")
        if "repo" in only:
            paired(
                f"{args.repo.name}, --select ALL --jobs 1",
                ours,
                [sys.executable, "-c", FLOOR_TREE, repo],
                max(3, args.runs // 2),
                work,
                other_label="libcst parse",
            )
        if "peers" in only:
            if shutil.which(args.torchfix_cmd):
                paired(
                    f"{args.repo.name}, TorchFix --select ALL -j 1",
                    ours,
                    [args.torchfix_cmd, "--select", "ALL", "--jobs", "1", repo],
                    args.torchfix_pairs,
                    work,
                    ours_over_other=False,
                    other_label="TorchFix",
                )
            else:
                print(f"TorchFix: {args.torchfix_cmd} not found (see the module doc)")
            if shutil.which(args.ruff_cmd):
                paired(
                    f"{args.repo.name}, ruff --select ALL",
                    ours,
                    [
                        args.ruff_cmd,
                        "check",
                        "--select",
                        "ALL",
                        "--no-cache",
                        "--isolated",
                        "--exit-zero",
                        repo,
                    ],
                    max(3, args.runs // 2),
                    work,
                    other_label="ruff",
                )
            else:
                print(f"ruff: {args.ruff_cmd} not found (see the module doc)")
        if "instructions" in only:
            counted(one_file, check(str(script)), one_floor, work, "floor")
            counted(
                f"{args.repo.name}, --select ALL --jobs 1",
                ours,
                [sys.executable, "-c", FLOOR_TREE, repo],
                work,
                "libcst parse",
            )
            tree = jobs_tree()
            count = sum(1 for _ in Path(tree).rglob("*.py"))
            jobs_args = ["check", str(tree), "--select", "ALL", "--no-cache", "-q"]
            subprocess.run(check(str(tree)), cwd=work, env=ENV, stdout=subprocess.DEVNULL)
            two = forked_instructions([*jobs_args, "--jobs", "2"], cwd=work)
            one = instructions(check(str(tree), "--select", "ALL", "--jobs", "1"), work)
            if one is not None and two is not None:
                print(
                    f"{f'{count}-file tree, --jobs 2 against --jobs 1':44} "
                    f"{'accel-lint / --jobs 1':28} {two / one:6.3f}x  (instructions: --jobs 2 "
                    f"{two / 1e9:.3f} G with its workers, --jobs 1 {one / 1e9:.3f} G)",
                    flush=True,
                )
        if "ast-first" in only:
            ast_first(args.repo, exe, work)
        if "jobs" in only:
            tree = jobs_tree()
            count = sum(1 for _ in Path(tree).rglob("*.py"))
            paired(
                f"{count}-file tree, --jobs 2 against --jobs 1",
                check(str(tree), "--select", "ALL", "--jobs", "2"),
                check(str(tree), "--select", "ALL", "--jobs", "1"),
                max(3, args.runs // 2),
                work,
                other_label="--jobs 1",
            )
            parts = [str(p) for p in halves(Path(tree), work / "halves")]
            paired(
                "two --jobs 1 runs on its halves: at once",
                [sys.executable, "-c", TWO_RUNS, "at-once", exe, *parts],
                [sys.executable, "-c", TWO_RUNS, "one-by-one", exe, *parts],
                max(3, args.runs // 2),
                work,
                other_label="one by one",
                ours_label="at once",
            )


if __name__ == "__main__":
    main()
