"""No input makes accel-lint crash, and no fix ever produces code that does not parse
or that a second pass changes: property tests over generated and mutated sources,
and a fix run over real PyTorch sources."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import hypothesmith
import libcst as cst
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from accel_lint.config import Settings
from accel_lint.fixer import fix_source
from accel_lint.lint import lint_bytes
from accel_lint.source import Source, decode
from tests.support import ROOT, read_page, settings_for, strip_markers

ALL_UNSAFE: Settings = settings_for(("ALL",), unsafe=True)


def _seeds() -> list[str]:
    """Every example of every rule page and every case file: code that triggers rules."""
    seeds: list[str] = []
    for page_path in sorted((ROOT / "rules").glob("ACL*.md")):
        page = read_page(page_path)
        for heading in ("Example", "Use instead", "Not flagged"):
            seeds.extend(strip_markers(b.code)[0] for b in page.blocks(heading))
    cases = [c for c in sorted((ROOT / "tests/cases").glob("ACL*.py")) if ".fixed" not in c.name]
    seeds.extend(strip_markers(c.read_text(encoding="utf-8"))[0] for c in cases)
    return seeds


SEEDS = _seeds()


def _indent(text: str, prefix: str) -> str:
    return "".join(
        prefix + line if line.strip() else line for line in text.splitlines(keepends=True)
    )


@st.composite
def mutated_sources(draw: st.DrawFn) -> str:
    text = draw(st.sampled_from(SEEDS))
    if draw(st.booleans()):
        text = text + "\n" + draw(st.sampled_from(SEEDS))
    mutation = draw(
        st.sampled_from(
            ["none", "function", "method", "if", "tabs", "comments", "crlf", "noqa", "noqa"]
        )
    )
    if mutation == "function":
        text = "def main():\n" + _indent(text, "    ") + "\n\nmain()\n"
    elif mutation == "method":
        text = "class Runner:\n    def run(self):\n" + _indent(text, "        ")
    elif mutation == "if":
        text = "import sys\nif len(sys.argv) > 0:\n" + _indent(text, "    ")
    elif mutation == "tabs":
        text = "def main():\n" + _indent(text, "\t")
    elif mutation == "comments":
        lines = text.splitlines()
        marks = draw(st.lists(st.integers(0, max(0, len(lines) - 1)), max_size=5))
        for i in marks:
            if lines and not lines[i].rstrip().endswith(("\\", ",")) and '"""' not in lines[i]:
                lines[i] = lines[i] + "  # note"
        text = "\n".join(lines) + "\n"
    elif mutation == "noqa":
        text = _suppressed_long_calls(text, draw(st.sampled_from(_NOQAS)))
    elif mutation == "crlf":
        text = text.replace("\n", "\r\n")
    return text


_NOQAS = ["# noqa", "# noqa: ACL102", "# noqa: ACL101", "# noqa:ACL102,ACL101", "# NOQA: ACL102"]
_ONE_LINE_CALL = re.compile(r"^(?P<head>[ \t]*\S.*\b\w+\()(?P<args>[^()\n]*)\)(?P<tail>:?)[ \t]*$")


_NOQA_ON_CLOSING = re.compile(r"^\s*[)\]}][^#]*#.*\bnoqa\b", re.IGNORECASE)


def _suppressed_long_calls(text: str, noqa: str) -> str:
    """Calls on one line (DataLoader(...), Conv2d(...), zero_grad(...)) made long
    enough that a fix pushes them past the width, with a suppression comment: the
    layout splits them, and the comment must stay on the reported line."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = _ONE_LINE_CALL.match(line)
        if m and m.group("args").strip():
            args = m.group("args") + ", prefetch_factor_or_other_long_keyword=None"
            lines[i] = f"{m.group('head')}{args}){m.group('tail')}  {noqa}"
    return "\n".join(lines) + "\n"


def _check_fix_invariants(text: str) -> None:
    report = lint_bytes("gen.py", text.encode(), ALL_UNSAFE, with_edits=True)
    assert report.internal_error is None, report.internal_error
    try:
        compile(text, "gen.py", "exec", dont_inherit=True)
    except SyntaxError:
        return  # the mutation produced invalid Python: only the no-crash property applies
    codes = ALL_UNSAFE.enabled
    outcome = fix_source("gen.py", Source(text, "utf-8"), ALL_UNSAFE, codes, unsafe=True)
    assert outcome.error is None, outcome.error
    cst.parse_module(outcome.fixed_text)
    compile(outcome.fixed_text, "gen.py", "exec", dont_inherit=True)
    again = fix_source(
        "gen.py", Source(outcome.fixed_text, "utf-8"), ALL_UNSAFE, codes, unsafe=True
    )
    assert again.fixed_text == outcome.fixed_text, "a second pass changed the fixed code"
    for line in outcome.fixed_text.splitlines():
        # a split call's suppression stays on its first line, the reported one
        assert not _NOQA_ON_CLOSING.match(line), f"a noqa moved off its line: {line!r}"


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(mutated_sources())
def test_fixes_of_mutated_rule_examples_parse_and_converge(text: str) -> None:
    _check_fix_invariants(text)


@settings(max_examples=80, deadline=None, suppress_health_check=list(HealthCheck))
@given(hypothesmith.from_grammar())
def test_any_valid_python_lints_without_crashing(text: str) -> None:
    report = lint_bytes("gen.py", ("import torch\n" + text).encode(), ALL_UNSAFE)
    assert report.internal_error is None, report.internal_error


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=400))
def test_any_bytes_give_findings_or_acl000_never_a_crash(data: bytes) -> None:
    report = lint_bytes("gen.py", b"import torch\n" + data, ALL_UNSAFE)
    assert report.internal_error is None, report.internal_error
    for diag in report.diagnostics:
        assert diag.row >= 1 and diag.column >= 1


def _torch_sources(limit: int) -> list[Path]:
    torch = pytest.importorskip("torch")
    root = Path(torch.__file__).parent
    files = sorted(p for p in root.rglob("*.py") if p.stat().st_size < 400_000)
    step = max(1, len(files) // limit)
    chosen = files[::step][:limit]
    # files that mention the patterns our fixes rewrite, so the fix path really runs
    pattern = re.compile(
        rb"DataLoader|zero_grad|DataParallel|Conv[123]d|DistributedSampler|torch\.save"
    )
    extra = [p for p in files if pattern.search(p.read_bytes())][:150]
    return sorted(set(chosen) | set(extra))


@pytest.mark.slow
def test_fixing_real_pytorch_sources_parses_and_is_idempotent(tmp_path: Path) -> None:
    sources = _torch_sources(300)
    work = tmp_path / "corpus"
    for i, src in enumerate(sources):
        dest = work / f"{i:04d}_{src.name}"
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(src, dest)
    cmd = [
        sys.executable,
        "-m",
        "accel_lint",
        "fix",
        "--apply",
        "--unsafe-fixes",
        "--select",
        "ALL",
    ]
    first = subprocess.run([*cmd, str(work)], capture_output=True, text=True, timeout=1800)
    assert first.returncode in (0, 1), first.stderr[-3000:]
    changed = [
        p for i, p in enumerate(sorted(work.iterdir())) if p.read_bytes() != sources[i].read_bytes()
    ]
    for path in sorted(work.iterdir()):
        compile(decode(path.read_bytes()).text, str(path), "exec", dont_inherit=True)
    snapshot = {p: p.read_bytes() for p in work.iterdir()}
    second = subprocess.run([*cmd, str(work)], capture_output=True, text=True, timeout=1800)
    assert second.returncode in (0, 1), second.stderr[-3000:]
    assert {p: p.read_bytes() for p in work.iterdir()} == snapshot
    assert len(sources) >= 300
    print(
        f"\n{len(sources)} torch files, {len(changed)} changed by the first pass, 0 by the second"
    )
