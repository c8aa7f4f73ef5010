"""Where accel-lint's time goes per file, phase by phase, in one process:

    read        the bytes from disk
    prefilter   `rules_for`: which rules' trigger words occur in the file
    syntax      CPython's compile() for files no rule can match (the ACL000 check)
    parse       libcst.parse_module, for files some rule can match
    walk        the one batched traversal (facts + every matching rule)
    finish      facts.finish() and each rule's finish() (name resolution happens here)
    positions   where the findings are (`accel_lint.positions`), only for files with
                findings; `positions (libcst)` times libcst's PositionProvider on the same
                files, what the engine used before

    python benchmarks/bench_engine.py                  # the installed torch's sources
    python benchmarks/bench_engine.py --corpus DIR --no-prefilter --qualified-names

`--no-prefilter` parses and walks every file with every rule (what the trigger
words save); `--qualified-names` also times libcst's QualifiedNameProvider on
each parsed file (what our own scope table saves). Evidence for the design,
not a test: numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import ast
import importlib.util
import statistics
import sys
import time
import warnings
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider, QualifiedNameProvider

from accel_lint.config import Selection, Settings, load_settings
from accel_lint.engine import rules_for
from accel_lint.facts import FileFacts
from accel_lint.facts.collector import FactsCollector, ScopeCloser
from accel_lint.positions import Locator
from accel_lint.rule import Rule, RuleContext
from accel_lint.rules import RULES
from accel_lint.source import DecodeError, decode
from accel_lint.walk import walk

T = TypeVar("T")
PHASES = (
    "read",
    "prefilter",
    "syntax",
    "parse",
    "walk",
    "finish",
    "positions",
    "positions (libcst)",
    "qualified-names",
)
_EXTRA = ("positions (libcst)", "qualified-names")  # not part of accel-lint's own time


class Clock:
    def __init__(self) -> None:
        self.samples: dict[str, list[float]] = defaultdict(list)

    def time(self, phase: str, func: Callable[[], T]) -> T:
        start = time.process_time()
        try:
            return func()
        finally:
            self.samples[phase].append(time.process_time() - start)


def lint_one(
    path: Path, settings: Settings, clock: Clock, *, prefilter: bool, qualified_names: bool
) -> int:
    """The steps of `engine.analyze`, timed one by one; returns the number of findings."""
    data = clock.time("read", path.read_bytes)
    rules: list[type[Rule]] = clock.time(
        "prefilter",
        lambda: rules_for(settings.enabled, data) if prefilter else [e.rule for e in RULES],
    )
    try:
        text = decode(data).text
    except DecodeError:
        return 0
    if not rules:
        try:
            clock.time("syntax", lambda: compile(text, str(path), "exec", ast.PyCF_ONLY_AST, True))
            return 0
        except (SyntaxError, ValueError):
            pass  # CPython's grammar may be older than libcst's: the engine asks libcst
    try:
        module = clock.time("parse", lambda: cst.parse_module(text))
    except (cst.ParserSyntaxError, RecursionError):
        return 0
    if not rules:
        return 0
    facts = FileFacts(module)
    instances = [
        rule(RuleContext(module, facts, settings.target_torch, settings.options_for(rule)))
        for rule in rules
    ]
    clock.time(
        "walk", lambda: walk(module, [FactsCollector(facts), *instances, ScopeCloser(facts)])
    )

    def finish() -> list[cst.CSTNode]:
        facts.finish()
        for instance in instances:
            instance.finish()
        return [f.node for instance in instances for f in instance.findings]

    nodes = clock.time("finish", finish)
    if nodes:
        locator = Locator(module, text)
        clock.time("positions", lambda: [locator.range_of(n) for n in nodes])
        clock.time(
            "positions (libcst)",
            lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(PositionProvider),
        )
    if qualified_names:
        clock.time(
            "qualified-names",
            lambda: MetadataWrapper(module, unsafe_skip_copy=True).resolve(QualifiedNameProvider),
        )
    return len(nodes)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", type=Path, help="a directory of .py files (default: torch's)")
    parser.add_argument("--no-prefilter", action="store_true", help="parse and walk every file")
    parser.add_argument(
        "--qualified-names", action="store_true", help="also time QualifiedNameProvider"
    )
    parser.add_argument("--sample", type=int, default=1, help="use every N-th file only")
    args = parser.parse_args()

    if args.corpus is None:
        spec = importlib.util.find_spec("torch")
        if spec is None or not spec.submodule_search_locations:
            sys.exit("torch is not installed here: pass --corpus PATH")
        args.corpus = Path(next(iter(spec.submodule_search_locations)))
    files = sorted(p for p in args.corpus.rglob("*.py") if p.is_file())[:: args.sample]
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    warnings.simplefilter("ignore")  # CPython's SyntaxWarnings about the corpus
    clock = Clock()
    findings = 0
    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for path in files:
        findings += lint_one(
            path,
            settings,
            clock,
            prefilter=not args.no_prefilter,
            qualified_names=args.qualified_names,
        )

    total = sum(sum(v) for phase, v in clock.samples.items() if phase not in _EXTRA)
    print(
        f"{len(files)} files from {args.corpus} ({len(settings.enabled)} rules, "
        f"prefilter {'off' if args.no_prefilter else 'on'}): {findings} findings, "
        f"{total:.2f} s CPU in accel-lint's phases ({1000 * total / len(files):.2f} ms/file)\n"
    )
    print(
        f"{'phase':16} {'files':>6} {'total s':>9} {'share':>6} "
        f"{'mean ms':>9} {'median':>8} {'p90':>8}"
    )
    for phase in PHASES:
        values = clock.samples.get(phase)
        if not values:
            continue
        ordered = sorted(values)
        share = "" if phase in _EXTRA else f"{100 * sum(values) / total:5.1f}%"
        print(
            f"{phase:16} {len(values):6d} {sum(values):9.2f} {share:>6} "
            f"{1000 * statistics.fmean(values):9.2f} {1000 * statistics.median(values):8.2f} "
            f"{1000 * ordered[int(0.9 * (len(ordered) - 1))]:8.2f}"
        )
    if "qualified-names" in clock.samples and "parse" in clock.samples:
        qn = sum(clock.samples["qualified-names"])
        ours = sum(clock.samples["walk"]) + sum(clock.samples["finish"])
        print(
            f"\nlibcst's QualifiedNameProvider on the parsed files: {qn:.2f} s, "
            f"{qn / ours:.1f}x our whole walk + finish ({ours:.2f} s)"
        )


if __name__ == "__main__":
    main()
