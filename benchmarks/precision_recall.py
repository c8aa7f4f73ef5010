"""Precision and recall of the rules on a corpus of real training scripts.

A spelling-based extractor lists every *candidate* site of each rule (every call
spelled `...DataLoader(`, every `...Conv2d(`, every loop over parameters that
mentions `grad`, ...): a superset of what a rule may flag. A human labels each
candidate true (the anti-pattern the rule's page describes is there) or false, in a
JSON file; this script then compares the labels with what accel-lint reports.

    python benchmarks/precision_recall.py CORPUS --labels labels.json [--codes ACL101,ACL102]

Unlabelled candidates are listed with their source line so they can be labelled
(`--write-template` adds them to the labels file as null). The corpus itself is
never committed: fetch public repositories, export their .py files, point this
script at the folder.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import subprocess
import sys
from collections import defaultdict
from pathlib import Path

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

CODES = ("ACL101", "ACL102", "ACL201", "ACL301", "ACL302", "ACL401", "ACL402", "ACL403", "ACL404")


def _name(func: cst.BaseExpression) -> str:
    if isinstance(func, cst.Attribute):
        return func.attr.value
    if isinstance(func, cst.Name):
        return func.value
    return ""


class Candidates(cst.CSTVisitor):
    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self, text: str) -> None:
        super().__init__()
        self.text = text
        self.distributed = bool(
            re.search(r"init_process_group|DistributedDataParallel|hvd\.init", text)
        )
        self.data_parallel = "DataParallel" in text
        self.found: list[tuple[str, int]] = []
        self._autocast = 0

    def _add(self, code: str, node: cst.CSTNode) -> None:
        self.found.append((code, self.get_metadata(PositionProvider, node).start.line))

    def visit_Call(self, node: cst.Call) -> None:
        name = _name(node.func)
        if name.endswith("DataLoader"):
            self._add("ACL101", node)
            self._add("ACL102", node)
        elif re.fullmatch(r"Conv(Transpose)?[123]d", name):
            self._add("ACL201", node)
        elif name == "zero_grad":
            self._add("ACL302", node)
        elif name == "DataParallel":
            self._add("ACL401", node)
        elif name == "save" and self.distributed:
            self._add("ACL403", node)
        elif name == "DistributedSampler":
            self._add("ACL404", node)
        elif (
            self._autocast
            and self.data_parallel
            and isinstance(node.func, (cst.Name, cst.Attribute))
        ):
            self._add("ACL402", node)

    def visit_For(self, node: cst.For) -> None:
        header = cst.Module([]).code_for_node(node.iter)
        body = cst.Module([]).code_for_node(node.body)
        if re.search(r"parameters\(|param_groups", header) and "grad" in body:
            self._add("ACL301", node)

    def visit_With(self, node: cst.With) -> None:
        if any("autocast" in cst.Module([]).code_for_node(i.item) for i in node.items):
            self._autocast += 1

    def leave_With(self, original_node: cst.With) -> None:
        if any("autocast" in cst.Module([]).code_for_node(i.item) for i in original_node.items):
            self._autocast -= 1


def candidates(corpus: Path) -> dict[str, tuple[str, str]]:
    """key "CODE:relpath:line" -> (code, source line)"""
    out: dict[str, tuple[str, str]] = {}
    for path in sorted(corpus.rglob("*.py")):
        try:
            text = path.read_text(encoding="utf-8")
            module = cst.parse_module(text)
        except (UnicodeDecodeError, cst.ParserSyntaxError, RecursionError):
            continue
        visitor = Candidates(text)
        MetadataWrapper(module, unsafe_skip_copy=True).visit(visitor)
        lines = text.splitlines()
        rel = path.relative_to(corpus).as_posix()
        for code, line in visitor.found:
            out[f"{code}:{rel}:{line}"] = (
                code,
                lines[line - 1].strip() if line <= len(lines) else "",
            )
    return out


def flagged(corpus: Path, codes: list[str]) -> set[str]:
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "accel_lint",
            "check",
            ".",
            "--isolated",
            "--no-cache",
            "--select",
            ",".join(codes),
            "--output-format",
            "json",
        ],
        cwd=corpus,
        capture_output=True,
        text=True,
        check=False,
    )
    if result.returncode == 2:
        raise SystemExit(result.stderr)
    return {
        f"{d['code']}:{os.path.normpath(d['filename'])}:{d['location']['row']}"
        for d in json.loads(result.stdout)
        if d["code"] in codes
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("corpus", type=Path)
    parser.add_argument("--labels", type=Path, required=True)
    parser.add_argument("--codes", default=",".join(CODES))
    parser.add_argument("--write-template", action="store_true")
    args = parser.parse_args()
    codes = args.codes.split(",")
    labels: dict[str, bool | None] = (
        json.loads(args.labels.read_text()) if args.labels.exists() else {}
    )
    cands = {k: v for k, v in candidates(args.corpus).items() if v[0] in codes}
    hits = flagged(args.corpus, codes)
    outside = sorted(hits - set(cands))
    if outside:
        print("flagged sites the candidate extractor missed (label them too):")
        for key in outside:
            print("  ", key)
    unlabelled = [k for k in sorted(cands) if labels.get(k) is None]
    unlabelled += [k for k in outside if labels.get(k) is None]
    if unlabelled:
        print(f"{len(unlabelled)} unlabelled candidates:")
        for key in unlabelled:
            print(
                f"  {'FLAG' if key in hits else '    '} {key}  {cands.get(key, ('', ''))[1][:90]}"
            )
        if args.write_template:
            for key in unlabelled:
                labels.setdefault(key, None)
            args.labels.write_text(json.dumps(labels, indent=1, sort_keys=True) + "\n")
    stats: dict[str, list[int]] = defaultdict(lambda: [0, 0, 0])  # tp, fp, fn
    for key, truth in labels.items():
        code = key.split(":")[0]
        if truth is None or code not in codes:
            continue
        if key in hits and truth:
            stats[code][0] += 1
        elif key in hits:
            stats[code][1] += 1
            print("false positive:", key)
        elif truth:
            stats[code][2] += 1
            print("false negative:", key)
    print(f"\n{'code':8} {'TP':>4} {'FP':>4} {'FN':>4} {'precision':>10} {'recall':>8}")
    total = [0, 0, 0]
    for code in codes:
        tp, fp, fn = stats[code]
        total = [a + b for a, b in zip(total, (tp, fp, fn))]
        p = f"{tp / (tp + fp):.3f}" if tp + fp else "-"
        r = f"{tp / (tp + fn):.3f}" if tp + fn else "-"
        print(f"{code:8} {tp:>4} {fp:>4} {fn:>4} {p:>10} {r:>8}")
    tp, fp, fn = total
    precision, recall = tp / max(1, tp + fp), tp / max(1, tp + fn)
    print(f"{'all':8} {tp:>4} {fp:>4} {fn:>4} {precision:>10.3f} {recall:>8.3f}")


if __name__ == "__main__":
    main()
