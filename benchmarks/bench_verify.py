"""What `accel-lint verify` costs: its whole wall time on a fixture (against an
older build of accel-lint, alternating), and the runner's overhead on the steps
it instruments. Numbers, not a test: they depend on the machine and on what else
runs on it, so every figure comes with the load average.

    python benchmarks/bench_verify.py total --rounds 2
    python benchmarks/bench_verify.py wall --baseline-ref 37d75e1 --rounds 3
    python benchmarks/bench_verify.py overhead --rounds 6
    python benchmarks/bench_verify.py hooks
    python benchmarks/bench_verify.py fixtures

`total` runs one plain run of the fixture (the same script and steps, one
thread, no runner) and then `verify` on it, and reports the wall and CPU seconds
of each kind of run (from `verify`'s JSON: each run's CPU is what its parent
reaped) and of the whole verification (the `verify` process and everything it
started) against the plain run. On a shared machine the CPU seconds are the
figure to compare: the wall time also counts other tenants' work.

`overhead` runs a training script plain and under the runner's timing and
equivalence modes, alternating, and compares the rates the script measures
itself (wall clock and CPU time). On a shared machine those move by more than
the overhead; `hooks` measures the instrumentation directly: in one process, the
best of many repeats of a plain training step, then of exactly what the runner
adds to a step in each mode (the step hooks, a DataLoader batch through its
wrapper, and in equivalence runs the loss read and the gradient scan).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from accel_lint.verify.launch import environment  # noqa: E402
from accel_lint.verify.protocol import EQUIV, TIME, RunConfig  # noqa: E402

FIXTURE = ROOT / "fixtures" / "cnn_bn" / "train.py"
STEADY = re.compile(r"^steady (\S+) steps/s, (\S+) steps per CPU second", re.MULTILINE)

# A compute-bound training loop (a small CNN on in-memory data through a
# DataLoader: every hook and wrapper of the runner fires each step) that measures
# its own steady-state rate, so the runner's overhead shows as a lower rate.
OVERHEAD_SCRIPT = """
import time
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.manual_seed(0)
data = TensorDataset(torch.randn(4096, 3, 16, 16), torch.randint(0, 10, (4096,)))
loader = DataLoader(data, batch_size=32, shuffle=True)
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
times, cpu = [], []
for epoch in range(2):
    for x, y in loader:
        optimizer.zero_grad()
        nn.functional.cross_entropy(model(x), y).backward()
        optimizer.step()
        times.append(time.perf_counter())
        cpu.append(time.process_time())
wall, used = times[10:], cpu[10:]
print(
    f"steady {(len(wall) - 1) / (wall[-1] - wall[0]):.3f} steps/s, "
    f"{(len(used) - 1) / (used[-1] - used[0]):.3f} steps per CPU second"
)
"""


def load() -> str:
    return " ".join(f"{v:.1f}" for v in os.getloadavg())


def overhead(rounds: int) -> None:
    work = Path(tempfile.mkdtemp(prefix="accel-lint-bench-"))
    script = work / "train.py"
    script.write_text(OVERHEAD_SCRIPT, encoding="utf-8")
    out = work / "out"
    out.mkdir()

    def config(mode: str) -> RunConfig:
        return _config(mode, str(out))

    plain = environment(None, 1, "bench")
    for name in ("PYTHONPATH",):  # no hook at all: the script alone
        plain.pop(name, None)
    variants = {
        "plain": plain,
        "timing mode": environment(config(TIME), 1, "bench"),
        "equivalence mode": environment(config(EQUIV), 1, "bench"),
    }
    rates: dict[str, list[float]] = {name: [] for name in variants}
    cpu_rates: dict[str, list[float]] = {name: [] for name in variants}
    loads = []
    for index in range(rounds):
        order = list(variants) if index % 2 == 0 else list(variants)[::-1]
        for name in order:
            done = subprocess.run(
                [sys.executable, str(script)],
                env=variants[name],
                cwd=work,
                capture_output=True,
                text=True,
                check=True,
            )
            match = STEADY.search(done.stdout)
            assert match, done.stdout + done.stderr
            rates[name].append(float(match.group(1)))
            cpu_rates[name].append(float(match.group(2)))
        loads.append(load())
        print(
            f"round {index + 1}: "
            + ", ".join(f"{n} {rates[n][-1]:.1f} ({cpu_rates[n][-1]:.1f} per CPU s)" for n in rates)
        )
    print(f"\n{rounds} alternating rounds, measured by the script over its steady steps")
    for title, table in (("steps/s (wall clock)", rates), ("steps per CPU second", cpu_rates)):
        base = statistics.median(table["plain"])
        print(f"\n| {title} | median | min-max | vs plain (medians) | per-round ratio median |")
        print("|---|---:|---:|---:|---:|")
        for name, values in table.items():
            paired = [v / p for v, p in zip(values, table["plain"])]
            print(
                f"| {name} | {statistics.median(values):.1f} | "
                f"{min(values):.1f}-{max(values):.1f} | {statistics.median(values) / base:.4f} | "
                f"{statistics.median(paired):.4f} |"
            )
    print(f"load averages after each round: {'; '.join(loads)}")
    shutil.rmtree(work, ignore_errors=True)


HOOKS_SETUP = """
import torch
from torch import nn
from torch.utils.data import DataLoader, TensorDataset

torch.set_num_threads(1)
torch.manual_seed(0)
data = TensorDataset(torch.randn(4096, 3, 16, 16), torch.randint(0, 10, (4096,)))
model = nn.Sequential(
    nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.Conv2d(16, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
    nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(16, 10),
)
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
x, y = data[:32]
"""


def _best(stmt: str, setup: dict[str, object], number: int, repeat: int) -> float:
    """Seconds per call: the best of `repeat` timings of `number` calls (the least
    disturbed by other processes)."""
    import timeit

    timer = timeit.Timer(stmt, globals=setup)
    return min(timer.repeat(repeat=repeat, number=number)) / number


def hooks(repeat: int) -> None:
    import torch  # noqa: F401  (the runner's objects need it loaded)

    from accel_lint.verify.runner.loaders import Loaders
    from accel_lint.verify.runner.models import Models
    from accel_lint.verify.runner.state import Runner

    scope: dict[str, object] = {}
    exec(HOOKS_SETUP, scope)
    step = (
        "optimizer.zero_grad()\n"
        "loss = nn.functional.cross_entropy(model(x), y)\n"
        "loss.backward()\n"
        "optimizer.step()"
    )
    plain = _best(step, scope, 20, repeat)
    loader_batch = _best(
        "next(it)", {**scope, "it": iter(__import__("itertools").count())}, 10000, repeat
    )
    rows = []
    for mode in (TIME, EQUIV):
        cfg = _config(mode, str(tempfile.mkdtemp()))
        runner = Runner(cfg)
        runner.torch = scope["torch"]
        runner.models = Models(runner.torch)
        runner.loaders = Loaders(runner)
        optimizer = scope["optimizer"]
        runner.pre_step(optimizer, (), {})  # the first step adopts the model
        runner.post_step(optimizer, (), {})
        exec(step, scope)  # gradients present, as at a real step
        added: dict[str, object] = {**scope, "runner": runner, "opt": optimizer}
        per_step = _best(
            "runner.pre_step(opt, (), {}); runner.post_step(opt, (), {})", added, 200, repeat
        )
        if mode == EQUIV:
            per_step += _best("runner.on_backward(loss)", added, 200, repeat)
        # one batch through the DataLoader wrapper's bookkeeping: the attribute, the
        # clock and the record (the real loader's work is the same either way)
        wrapper = _best(
            "getattr(it, '_accel_lint_ordinal', None); t = perf(); d = perf() - t",
            {"it": object(), "perf": time.perf_counter},
            10000,
            repeat,
        )
        total = per_step + wrapper
        rows.append((mode, per_step, wrapper, total, total / plain))
    print(f"\nplain training step (best of {repeat}): {plain * 1e3:.3f} ms")
    print("| mode | step hooks us | loader wrapper us | total us per step | share of the step |")
    print("|---|---:|---:|---:|---:|")
    for mode, per_step, wrapper, total, share in rows:
        print(
            f"| {mode} | {per_step * 1e6:.1f} | {wrapper * 1e6:.2f} | {total * 1e6:.1f} | "
            f"{share:.3%} |"
        )
    print(f"(a bare iterator's next() for scale: {loader_batch * 1e6:.2f} us)")


def _config(mode: str, out: str) -> RunConfig:
    return {
        "out": out,
        "mode": mode,
        "steps": 10**9,  # never stop: the script measures itself to its end
        "warmup": 10,
        "seed": 0,
        "seed_offset": 0,
        "threads": 1,
        "perturb": False,
        "save_state": False,
        "reference": None,
        "dump_init": None,
        "align_init": None,
        "progress": None,
        "profile_steps": 0,
    }


def _timed(command: Sequence[str], env: dict[str, str]) -> tuple[float, float, str]:
    """Wall and CPU seconds of a command and everything it waited for, and its stdout."""
    started = time.perf_counter()
    proc = subprocess.Popen(
        command,
        env=env,
        cwd=tempfile.gettempdir(),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    out = proc.stdout.read() if proc.stdout is not None else ""
    _, _, usage = os.wait4(proc.pid, 0)
    proc.returncode = 0
    return time.perf_counter() - started, usage.ru_utime + usage.ru_stime, out


def total(
    rounds: int, fixture: Path, script_args: Sequence[str], extra: Sequence[str], build: Path
) -> None:
    env = {**os.environ, "PYTHONPATH": str(build), "NO_COLOR": "1"}
    print(f"build: {build}")
    plain_env = {**env, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    print(f"plain: python {fixture.relative_to(ROOT)} {' '.join(script_args)} (one thread)")
    print(
        f"verify: accel-lint verify {fixture.relative_to(ROOT)} {' '.join(extra)} "
        f"--output-format json -- {' '.join(script_args)}"
    )
    rows = []
    for index in range(rounds):
        before = load()
        plain_wall, plain_cpu, _ = _timed([sys.executable, str(fixture), *script_args], plain_env)
        wall_s, cpu_s, out = _timed(
            [
                sys.executable,
                "-m",
                "accel_lint",
                "verify",
                str(fixture),
                *extra,
                "--output-format",
                "json",
                "--",
                *script_args,
            ],
            env,
        )
        report = json.loads(out)
        kinds: dict[str, list[tuple[float, float]]] = {}
        for run in report["runs"]:
            cpu = run.get("cpu_seconds") or 0.0  # builds before it was recorded: 0
            kinds.setdefault(run["role"], []).append((run["seconds"], cpu))
        print(f"\nround {index + 1} (load average before {before}, after {load()})")
        print("| run kind | runs | wall s (sum) | CPU s (sum) | CPU s per run |")
        print("|---|---:|---:|---:|---:|")
        for kind, values in kinds.items():
            walls, cpus = [v[0] for v in values], [v[1] for v in values]
            print(
                f"| {kind} | {len(values)} | {sum(walls):.1f} | {sum(cpus):.1f} | "
                f"{statistics.median(cpus):.2f} |"
            )
        runs_cpu = sum(c for values in kinds.values() for _, c in values)
        print(
            f"| verify, whole (accel-lint, the warm interpreter, every run) | "
            f"{len(report['runs'])} | {wall_s:.1f} | {cpu_s:.1f} | - |"
        )
        print(f"| one plain run of the script | 1 | {plain_wall:.1f} | {plain_cpu:.1f} | - |")
        print(
            f"verify / plain: wall {wall_s / plain_wall:.1f}x, CPU {cpu_s / plain_cpu:.1f}x; "
            f"outside the runs (accel-lint, torch imported once, forks): "
            f"{cpu_s - runs_cpu:.1f} CPU s"
        )
        rows.append((wall_s, cpu_s, plain_wall, plain_cpu, before))
    print("\n| round | verify wall s | verify CPU s | plain wall s | plain CPU s | load before |")
    print("|---|---:|---:|---:|---:|---:|")
    for index, (w, c, pw, pc, before) in enumerate(rows, 1):
        print(f"| {index} | {w:.1f} | {c:.1f} | {pw:.1f} | {pc:.1f} | {before} |")


def _checkout(ref: str) -> Path:
    """The accel_lint package at `ref`, unpacked beside nothing else of ours."""
    target = Path(tempfile.mkdtemp(prefix="accel-lint-baseline-"))
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref, "accel_lint"], capture_output=True, check=True
    )
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    return target


def _verify(python_path: Path, args: Sequence[str]) -> tuple[float, int, str]:
    env = {**os.environ, "PYTHONPATH": str(python_path), "NO_COLOR": "1"}
    started = time.perf_counter()
    done = subprocess.run(  # not from the checkout: `-m` would import its accel_lint first
        [sys.executable, "-m", "accel_lint", "verify", *args],
        env=env,
        cwd=tempfile.gettempdir(),
        capture_output=True,
        text=True,
    )
    runs = len(re.findall(r"^accel-lint verify: ", done.stderr, re.MULTILINE))
    return time.perf_counter() - started, runs, done.stdout


def wall(baseline_ref: str, rounds: int, fixture: Path, script_args: Sequence[str]) -> None:
    baseline = _checkout(baseline_ref)
    current = ROOT
    tail = ["--", *script_args] if script_args else []
    commands = {
        # the baseline judged unsafe fixes only when asked; this build does by default
        f"baseline {baseline_ref}": (baseline, [str(fixture), "--unsafe-fixes", *tail]),
        "this build": (current, [str(fixture), *tail]),
    }
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    processes: dict[str, int] = {}
    for index in range(rounds):
        order = list(commands) if index % 2 == 0 else list(commands)[::-1]
        for name in order:
            path, args = commands[name]
            spent, runs, _ = _verify(path, args)
            seconds[name].append(spent)
            processes[name] = runs
            print(f"round {index + 1}: {name}: {spent:.1f} s, {runs} runs (load {load()})")
    print(f"\n`accel-lint verify {fixture.relative_to(ROOT)} {' '.join(tail)}`, {rounds} rounds")
    print("| build | median wall s | min-max | runs |")
    print("|---|---:|---:|---:|")
    for name, values in seconds.items():
        print(
            f"| {name} | {statistics.median(values):.1f} | {min(values):.1f}-{max(values):.1f} | "
            f"{processes[name]} |"
        )
    shutil.rmtree(baseline, ignore_errors=True)


def fixtures(extra: Sequence[str]) -> None:
    """`verify` on every fixture with only what the fixture needs (its arguments,
    and --torchrun for a script that is itself launched with torchrun)."""
    rows = []
    for script in sorted((ROOT / "fixtures").glob("*/train.py")):
        spec = json.loads((script.parent / "run.json").read_text(encoding="utf-8"))
        flags = ["--torchrun"] if spec.get("torchrun") else []
        args = [str(script), *flags, *extra, "--output-format", "json", "--", *spec["args"]]
        started = time.perf_counter()
        done = subprocess.run(
            [sys.executable, "-m", "accel_lint", "verify", *args],
            cwd=tempfile.gettempdir(),
            env={**os.environ, "PYTHONPATH": str(ROOT)},
            capture_output=True,
            text=True,
        )
        spent = time.perf_counter() - started
        report = json.loads(done.stdout)
        seen = {
            (f["code"], f["row"]): f["status"]
            for f in (report["runtime"] or {}).get("findings", [])
        }
        name = script.parent.name
        print(f"{name}: exit {done.returncode}, {spent:.0f} s, load {load()}", flush=True)
        for fix in report["fixes"]:
            speed = fix["speed"] or {}
            label = speed.get("label", "-")
            if speed.get("ratio") is not None:
                label += f" ({speed['ratio']:.2f}x)"
            rows.append(
                f"| {name} | {fix['code']} line {fix['row']} | {fix['applicability']} | "
                f"{fix['class']} | {fix['verdict']} | {label} | "
                f"{seen.get((fix['code'], fix['row']), '-')} |"
            )
        rows.extend(
            f"| {name} | runtime: {found['code']} line {found['row']} | | | | | {found['detail']} |"
            for found in (report["runtime"] or {}).get("runtime_only", [])
        )
    print("\n| fixture | fix | fix is | class | verdict | speed | at run time |")
    print("|---|---|---|---|---|---|---|")
    print("\n".join(rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    over = sub.add_parser("overhead", help="the script's own rate, plain and under the runner")
    over.add_argument("--rounds", type=int, default=6)
    direct = sub.add_parser("hooks", help="the runner's work per step, measured directly")
    direct.add_argument("--repeat", type=int, default=30)
    every = sub.add_parser("fixtures", help="verify every fixture and print the verdicts")
    every.add_argument("extra", nargs="*", help="verify options to add (e.g. --repeat 1)")
    cost = sub.add_parser("total", help="a whole verify per run kind, against one plain run")
    cost.add_argument("--rounds", type=int, default=1)
    cost.add_argument("--fixture", type=Path, default=FIXTURE)
    cost.add_argument("--verify-args", default="", help="verify options (e.g. '--repeat 3')")
    cost.add_argument(
        "--build",
        type=Path,
        default=ROOT,
        help="a checkout whose accel_lint to run (another build)",
    )
    cost.add_argument("script_args", nargs="*", default=["--epochs", "1"])
    whole = sub.add_parser("wall", help="a whole verify, against an older build")
    whole.add_argument("--baseline-ref", default="37d75e1")
    whole.add_argument("--rounds", type=int, default=3)
    whole.add_argument("--fixture", type=Path, default=FIXTURE)
    whole.add_argument("script_args", nargs="*", default=["--epochs", "1"])
    args = parser.parse_args()
    print(json.dumps({"load": load(), "cpus": os.cpu_count()}))
    if args.what == "overhead":
        overhead(args.rounds)
    elif args.what == "hooks":
        hooks(args.repeat)
    elif args.what == "fixtures":
        fixtures(args.extra)
    elif args.what == "total":
        total(
            args.rounds,
            args.fixture.resolve(),
            args.script_args,
            args.verify_args.split(),
            args.build.resolve(),
        )
    else:
        wall(args.baseline_ref, args.rounds, args.fixture.resolve(), args.script_args)


if __name__ == "__main__":
    main()
