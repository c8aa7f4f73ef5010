"""What one large module costs: CPU seconds and peak resident memory of `check` and
`fix` of one file, as the OS accounts them for the whole process (the figures of
docs/performance.md, "Large files").

    python benchmarks/bench_large_file.py DIR --bytes 5000000
    python benchmarks/bench_large_file.py DIR --bytes 300000 --fix --unsafe-fixes

The module is made from the Python files under DIR that mention torch and that
CPython 3.11 compiles, in sorted path order, joined whole until the next one would
pass `--bytes` (`from __future__` lines dropped: they must come first). Pass DIR
twice or more to join several trees. `--keep FILE` keeps the module.
"""

from __future__ import annotations

import argparse
import ast
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def joined(roots: list[Path], limit: int) -> str:
    parts: list[str] = []
    total = 0
    for root in roots:
        for path in sorted(root.rglob("*.py")):
            try:
                text = path.read_text(encoding="utf-8")
            except (OSError, UnicodeDecodeError):
                continue
            if "torch" not in text:
                continue
            text = "".join(
                line
                for line in text.splitlines(keepends=True)
                if not line.startswith("from __future__")
            )
            text = text if text.endswith("\n") else text + "\n"
            try:
                ast.parse(text)
            except (SyntaxError, ValueError, RecursionError):
                continue
            size = len(text.encode("utf-8"))
            if total + size > limit:
                return "".join(parts)
            parts.append(text)
            total += size
    return "".join(parts)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("roots", nargs="+", type=Path)
    parser.add_argument("--bytes", type=int, default=5_000_000)
    parser.add_argument("--fix", action="store_true", help="time `fix` instead of `check`")
    parser.add_argument("--unsafe-fixes", action="store_true")
    parser.add_argument("--keep", type=Path)
    args = parser.parse_args()
    text = joined(args.roots, args.bytes)
    with tempfile.TemporaryDirectory() as scratch:
        module = args.keep or Path(scratch) / "big.py"
        module.write_text(text, encoding="utf-8")
        command = [sys.executable, "-m", "accel_lint", "fix" if args.fix else "check"]
        command += ["--no-cache", "--select", "ALL", "-q", str(module)]
        if args.unsafe_fixes:
            command.append("--unsafe-fixes")
        started = time.perf_counter()
        done = subprocess.run(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wall = time.perf_counter() - started
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    unit = 1 if sys.platform == "darwin" else 1024
    print(f"module: {len(text.encode('utf-8')):,} bytes, {text.count(chr(10)):,} lines")
    print(f"command: {' '.join(command[1:])}  (exit {done.returncode})")
    print(f"CPU user {usage.ru_utime:.1f} s, system {usage.ru_stime:.1f} s, wall {wall:.1f} s")
    print(f"peak RSS {usage.ru_maxrss * unit / 1e9:.2f} GB")
    if done.returncode not in (0, 1):
        print(done.stderr.decode(errors="replace")[-2000:], file=sys.stderr)


if __name__ == "__main__":
    main()
