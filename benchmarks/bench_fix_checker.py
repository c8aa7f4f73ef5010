"""What the fix checker (`accel_lint.fixcheck`) costs next to the re-parse each fix
pass makes anyway, per file, in one process:

    reparse     libcst.parse_module of the text (what every pass of the fix loop does)
    scopes      fixcheck.scopes_of: CPython's symtable and where each read is bound
                (made once per text: the pass's original, and the fixed text)

    python benchmarks/bench_fix_checker.py --corpus DIR [--limit 400]

Files whose text mentions `torch` only (the files a fix can touch). Not a test:
numbers depend on the machine.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import libcst as cst

from accel_lint.fixcheck import scopes_of
from accel_lint.source import DecodeError, decode


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=400)
    args = parser.parse_args()
    texts: list[str] = []
    for path in sorted(args.corpus.rglob("*.py")):
        try:
            data = path.read_bytes()
            text = decode(data).text
        except (OSError, DecodeError):
            continue
        if b"torch" not in data:
            continue
        try:
            compile(text, str(path), "exec", dont_inherit=True)
        except (SyntaxError, ValueError):
            continue
        texts.append(text)
        if len(texts) >= args.limit:
            break
    reparse: list[float] = []
    scopes: list[float] = []
    for text in texts:
        start = time.perf_counter()
        cst.parse_module(text)
        middle = time.perf_counter()
        scopes_of(text)
        end = time.perf_counter()
        reparse.append(middle - start)
        scopes.append(end - middle)
    total_r, total_s = sum(reparse), sum(scopes)
    print(f"files: {len(texts)}, lines: {sum(t.count(chr(10)) for t in texts)}")
    print(f"reparse: total {total_r:.2f} s, median {statistics.median(reparse) * 1e3:.2f} ms")
    print(f"scopes:  total {total_s:.2f} s, median {statistics.median(scopes) * 1e3:.2f} ms")
    print(
        f"scopes / reparse: {total_s / total_r:.3f} (total), per file median "
        f"{statistics.median(s / r for s, r in zip(scopes, reparse)):.3f}"
    )


if __name__ == "__main__":
    main()
