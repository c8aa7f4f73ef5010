"""Does the cost per KB stay flat as a file grows? One copy of a realistic training
script against the same script concatenated N times (default 64), phase by phase,
in ms of CPU per KB of source. Two scripts by default: a DDP script, and one whose
loaders, model and checkpoints travel through its functions (`train_epochs`, 64
copies make 0.8 MB; every function name is then bound 64 times, which is what
made a walk up the calls that did not memoise its answers cost the cube of the
copies):

    parse       libcst.parse_module
    walk        the one batched traversal (facts + every rule)
    facts       FileFacts.finish()
    ACLnnn      each rule's finish(), where it decides (and the shared analyses it
                is the first to ask for are built)
    positions   PositionProvider (the file has findings)

    python benchmarks/bench_scaling.py
    python benchmarks/bench_scaling.py --copies 16 --script path/to/train.py
    python benchmarks/bench_scaling.py --script benchmarks/data/train_epochs.py.txt

A linear linter costs the same per KB at any size; a phase whose ms/KB grows with
the copies does work per item that grows with the file (a quadratic scan).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from accel_lint.config import Selection, Settings, load_settings
from accel_lint.engine import rules_for
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.parse import analysis_conditions
from accel_lint.rule import Rule, RuleContext
from accel_lint.walk import walk

T = TypeVar("T")
DATA = Path(__file__).parent / "data"
SCRIPTS = [DATA / "train_ddp.py.txt", DATA / "train_epochs.py.txt"]


def timed(samples: dict[str, float], phase: str, func: Callable[[], T]) -> T:
    start = time.process_time()
    try:
        return func()
    finally:
        samples[phase] += time.process_time() - start


def run_once(
    text: str, rules: list[type[Rule]], settings: Settings
) -> tuple[dict[str, float], int]:
    """CPU seconds per phase of one check of `text`, and the findings."""
    samples: dict[str, float] = defaultdict(float)
    module = timed(samples, "parse", lambda: cst.parse_module(text))
    facts = FileFacts(module)
    instances = [
        rule(RuleContext(module, facts, settings.target_torch, settings.options_for(rule)))
        for rule in rules
    ]
    visitors = [FactsCollector(facts), *instances, ScopeCloser(facts)]
    timed(samples, "walk", lambda: walk(module, visitors))
    timed(samples, "facts", facts.finish)
    for instance in instances:
        timed(samples, instance.code, instance.finish)
    found = sum(len(instance.findings) for instance in instances)
    if found:
        wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
        timed(samples, "positions", lambda: wrapper.resolve(PositionProvider))
    return samples, found


def profile(text: str, repeat: int) -> tuple[dict[str, float], int]:
    """CPU seconds per phase (the best of `repeat` runs of each), and the findings."""
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    rules = rules_for(settings.enabled, text.encode())
    best: dict[str, float] = {}
    found = 0
    for _ in range(repeat):
        # as `check` runs a file: cyclic GC paused while the tree is alive (each full
        # collection walks every node, a cost that grows with the file)
        with analysis_conditions():
            samples, found = run_once(text, rules, settings)
        for phase, seconds in samples.items():
            best[phase] = min(best.get(phase, seconds), seconds)
    return best, found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--script", type=Path, action="append", help="default: both scripts")
    parser.add_argument("--copies", type=int, default=64)
    parser.add_argument("--repeat", type=int, default=3, help="runs of one copy (best kept)")
    args = parser.parse_args()
    for script in args.script or SCRIPTS:
        report(script, args.copies, args.repeat)


def report(script: Path, copies: int, repeat: int) -> None:
    one = script.read_text(encoding="utf-8")
    if not one.endswith("\n"):
        one += "\n"
    many = one * copies
    small, found_small = profile(one, repeat)
    large, found_large = profile(many, 1)
    kb_small, kb_large = len(one.encode()) / 1024, len(many.encode()) / 1024
    print(
        f"{script.name}: 1 copy {kb_small:.1f} KB ({found_small} findings), "
        f"{copies} copies {kb_large:.1f} KB ({found_large} findings)\n"
    )
    print(f"{'phase':10} {'1 copy ms/KB':>13} {f'{copies} copies ms/KB':>16} {'ratio':>7}")
    phases = sorted(set(small) | set(large), key=lambda p: -large.get(p, 0.0))
    for phase in [*phases, "total"]:
        a = sum(small.values()) if phase == "total" else small.get(phase, 0.0)
        b = sum(large.values()) if phase == "total" else large.get(phase, 0.0)
        per_a, per_b = 1000 * a / kb_small, 1000 * b / kb_large
        ratio = f"{per_b / per_a:7.2f}" if per_a > 0 else "      -"
        print(f"{phase:10} {per_a:13.3f} {per_b:16.3f} {ratio}")
    print()


if __name__ == "__main__":
    main()
