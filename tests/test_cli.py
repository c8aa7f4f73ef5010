"""The command line: options, formats, exit codes, configuration, suppression, bad
input. In process through click's runner (`run`), and through a real subprocess
(`run_process`) where the process boundary matters: stdin bytes, encodings, the
console script itself."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import Ran, cli

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.load("records.pt")
loader = DataLoader(data, batch_size=8)
if __name__ == "__main__":
    for (x,) in loader:
        x = x.to(device, non_blocking=True)
"""


PIN = "torch.cuda.is_available()"  # the device test TRAIN picks its device with


def run(*args: str, cwd: Path, stdin: str | None = None) -> Ran:
    return cli(*args, cwd=cwd, stdin=stdin, env={"COLUMNS": "200"})


def run_process(
    *args: str, cwd: Path, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    return tmp_path


def test_check_concise_lists_each_finding_and_exits_1(project: Path) -> None:
    result = run_process("check", "train.py", "--output-format", "concise", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "train.py:6:10: ACL101 [~] DataLoader loads every batch in the training process: "
        "`num_workers` is not set (default 0)",
        "train.py:6:10: ACL102 [*] DataLoader returns pageable memory, so every host-to-GPU copy "
        "is synchronous and staged: `pin_memory` is not set",
        "Found 2 findings.",
        "[*] 1 fixable with `accel-lint fix --apply`.",
        "[~] 1 more fixable with `accel-lint fix --apply --unsafe-fixes` (unsafe: read each "
        "rule's Fix safety first).",
    ]


def test_check_counts_the_fixes_that_fix_makes_once_others_are_applied(tmp_path: Path) -> None:
    # cnn_bn: pin_memory on its two loaders makes their batches' `.to(device)` calls
    # candidates for non_blocking, found only once the loaders pin
    source = Path(__file__).resolve().parents[1] / "fixtures" / "cnn_bn" / "train.py"
    (tmp_path / "train.py").write_bytes(source.read_bytes())
    checked = run("check", "train.py", "--isolated", "--no-cache", cwd=tmp_path)
    assert "[*] 3 fixable (and 4 more after these are applied) with `accel-lint fix --apply`." in (
        checked.stdout
    )
    fixed = run("fix", "--apply", "--isolated", "--no-cache", "train.py", cwd=tmp_path)
    assert "Fixed 7 findings in 1 file." in fixed.stdout + fixed.stderr
    # nothing is left to reveal: the summary says no more than it fixes
    again = run("check", "train.py", "--isolated", "--no-cache", cwd=tmp_path)
    assert "more after these are applied" not in again.stdout
    # machine formats carry findings only: no fix pass is made for them
    as_json = run("check", "train.py", "--isolated", "--output-format", "json", cwd=tmp_path)
    assert "after these are applied" not in as_json.stdout


def test_unsafe_fixes_flag_changes_the_marker(project: Path) -> None:
    result = run("check", "train.py", "--output-format", "concise", "--unsafe-fixes", cwd=project)
    assert "ACL101 [*]" in result.stdout
    assert "[*] 2 fixable with `accel-lint fix --apply --unsafe-fixes`." in result.stdout


def test_exit_zero(project: Path) -> None:
    result = run("check", "train.py", "--exit-zero", cwd=project)
    assert result.returncode == 0
    assert "ACL101" in result.stdout


def test_clean_file_exits_0(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import torch\nx = torch.zeros(3)\n")
    result = run("check", "ok.py", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout.strip() == "All checks passed!"


@pytest.mark.parametrize(
    ("args", "codes"),
    [
        (["--select", "ACL102"], ["ACL102"]),
        (["--select", "ACL1"], ["ACL101", "ACL102"]),
        (["--ignore", "ACL101"], ["ACL102"]),
        (["--ignore", "ACL1"], []),
        (["--select", "ALL", "--ignore", "ACL102"], ["ACL101"]),
        (["--select", "ACL101", "--extend-select", "ACL102"], ["ACL101", "ACL102"]),
        (["--select", "ACL101", "--ignore", "ACL1"], ["ACL101"]),  # more specific wins
    ],
)
def test_selection(project: Path, args: list[str], codes: list[str]) -> None:
    result = run("check", "train.py", "--output-format", "json", *args, cwd=project)
    assert [d["code"] for d in json.loads(result.stdout)] == codes
    assert result.returncode == (1 if codes else 0)


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_is_a_usage_error(project: Path, option: str) -> None:
    result = run("check", "train.py", option, "ACL999", cwd=project)
    assert result.returncode == 2
    assert "ACL999" in result.stderr
    assert "Traceback" not in result.stderr


def test_json_format(project: Path) -> None:
    result = run("check", "train.py", "--output-format", "json", "--select", "ACL102", cwd=project)
    (finding,) = json.loads(result.stdout)
    assert finding == {
        "code": "ACL102",
        "name": "dataloader-unpinned-memory",
        "message": "DataLoader returns pageable memory, so every host-to-GPU copy is synchronous "
        "and staged: `pin_memory` is not set",
        "filename": "train.py",
        "location": {"row": 6, "column": 10},
        "end_location": {"row": 6, "column": 40},
        "url": "https://github.com/accel-lint/accel-lint/blob/main/rules/ACL102.md",
        "fix": {
            "applicability": "safe",
            "message": "Add `pin_memory=torch.cuda.is_available()`",
            "edits": [
                {
                    "content": ", pin_memory=torch.cuda.is_available()",
                    "location": {"row": 6, "column": 39},
                    "end_location": {"row": 6, "column": 39},
                }
            ],
        },
        "no_fix_reason": None,
    }


def _apply_edits(text: str, edits: list[dict[str, dict[str, int] | str]]) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line))

    def offset(loc: dict[str, int]) -> int:
        return offsets[loc["row"] - 1] + loc["column"] - 1

    for edit in sorted(edits, key=lambda e: offset(e["location"]), reverse=True):  # type: ignore[arg-type]
        start, end = offset(edit["location"]), offset(edit["end_location"])  # type: ignore[arg-type]
        text = text[:start] + str(edit["content"]) + text[end:]
    return text


def test_json_edits_reproduce_the_fix(project: Path) -> None:
    """Applying a finding's JSON edits gives exactly what `fix` writes for it."""
    result = run("check", "train.py", "--output-format", "json", "--select", "ACL101", cwd=project)
    (finding,) = json.loads(result.stdout)
    edited = _apply_edits(TRAIN, finding["fix"]["edits"])
    run("fix", "--apply", "--unsafe-fixes", "--select", "ACL101", "train.py", cwd=project)
    assert edited == (project / "train.py").read_text()
    assert "import os\n" in edited


def test_full_format_shows_the_source_line_with_a_marker(project: Path) -> None:
    result = run("check", "train.py", "--select", "ACL102", cwd=project)
    assert "\x1b[" not in result.stdout  # plain text when not writing to a terminal
    assert result.stdout.splitlines()[:9] == [
        "ACL102 [*] DataLoader returns pageable memory, so every host-to-GPU copy is "
        "synchronous and staged: `pin_memory` is not set",
        "  --> train.py:6:10",
        "  |",
        '5 | data = torch.load("records.pt")',
        "6 | loader = DataLoader(data, batch_size=8)",
        "  |          ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^ ACL102",
        '7 | if __name__ == "__main__":',
        "  |",
        "help: Add `pin_memory=torch.cuda.is_available()` (safe fix)",
    ]


def test_full_format_in_a_terminal_is_colored(project: Path) -> None:
    pytest.importorskip("pty")
    import pty

    out = b""
    pid, fd = pty.fork()
    if pid == 0:  # pragma: no cover - child
        os.chdir(project)
        env = {k: v for k, v in os.environ.items() if k not in ("NO_COLOR",)}
        env["TERM"] = "xterm-256color"
        env.pop("FORCE_COLOR", None)
        os.execve(sys.executable, [sys.executable, "-m", "accel_lint", "check", "train.py"], env)
    while True:
        try:
            chunk = os.read(fd, 4096)
        except OSError:
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    assert b"\x1b[" in out
    assert b"ACL101" in out


def test_statistics(project: Path) -> None:
    result = run("check", "train.py", "--statistics", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "1\tACL101\t[~] dataloader-sync-loading  (1 unsafe fix)",
        "1\tACL102\t[*] dataloader-unpinned-memory  (1 safe fix)",
        "Found 2 findings: 1 with a safe fix, 1 with an unsafe fix.",
    ]


def test_stdin_with_filename(project: Path) -> None:
    result = run(
        "check",
        "-",
        "--stdin-filename",
        "nested/train.py",
        "--output-format",
        "concise",
        "-q",
        cwd=project,
        stdin=TRAIN,
    )
    assert result.returncode == 1
    assert [line.split(": ")[0] for line in result.stdout.splitlines()] == [
        "nested/train.py:6:10",
        "nested/train.py:6:10",
    ]


def test_stdin_fix_prints_the_fixed_source(project: Path) -> None:
    result = run("fix", "--apply", "-", "--select", "ACL102", cwd=project, stdin=TRAIN)
    assert result.stdout == TRAIN.replace("batch_size=8)", f"batch_size=8, pin_memory={PIN})")


def test_noqa_and_skip_file(tmp_path: Path) -> None:
    lines = TRAIN.splitlines()
    lines[5] += "  # noqa: ACL102"
    (tmp_path / "one.py").write_text("\n".join(lines) + "\n")
    lines[5] = lines[5].replace("# noqa: ACL102", "# noqa")
    (tmp_path / "both.py").write_text("\n".join(lines) + "\n")
    (tmp_path / "skip.py").write_text("# accel-lint: skip-file\n" + TRAIN)
    result = run("check", ".", "--output-format", "json", cwd=tmp_path)
    codes = [(Path(d["filename"]).name, d["code"]) for d in json.loads(result.stdout)]
    assert codes == [("one.py", "ACL101")]


def test_noqa_is_never_fixed(tmp_path: Path) -> None:
    text = TRAIN.replace("batch_size=8)", "batch_size=8)  # noqa: ACL102")
    (tmp_path / "t.py").write_text(text)
    result = run("fix", "--apply", "--select", "ACL102", "t.py", cwd=tmp_path)
    assert result.returncode == 0
    assert (tmp_path / "t.py").read_text() == text


def test_config_in_pyproject(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        "[project]\nname = 'demo'\ndependencies = ['torch>=1.13']\n\n"
        "[tool.accel-lint]\n"
        'select = ["ACL1"]\n'
        'ignore = ["ACL102"]\n'
        'exclude = ["legacy"]\n'
        '[tool.accel-lint.per-file-ignores]\n"scripts/*.py" = ["ACL101"]\n'
        "[tool.accel-lint.rules.ACL101]\nnum-workers = 4\n"
    )
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "legacy").mkdir()
    (tmp_path / "legacy" / "old.py").write_text(TRAIN)
    (tmp_path / "scripts").mkdir()
    (tmp_path / "scripts" / "s.py").write_text(TRAIN)
    result = run("check", ".", "--output-format", "json", cwd=tmp_path)
    found = [(d["filename"], d["code"]) for d in json.loads(result.stdout)]
    assert found == [("train.py", "ACL101")]
    fixed = run("fix", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert "+loader = DataLoader(data, batch_size=8, num_workers=4)" in fixed.stdout
    # a subdirectory finds the project's configuration too
    sub = run("check", "scripts/s.py", cwd=tmp_path)
    assert sub.returncode == 0
    # a file named explicitly is linted even when excluded, unless --force-exclude
    assert run("check", "legacy/old.py", cwd=tmp_path).returncode == 1
    assert run("check", "legacy/old.py", "--force-exclude", cwd=tmp_path).returncode == 0


def test_accel_lint_toml_and_config_option(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "accel-lint.toml").write_text('select = ["ACL102"]\n')
    (tmp_path / "other.toml").write_text('[tool.accel-lint]\nselect = ["ACL101"]\n')
    found = run("check", "train.py", "--output-format", "json", cwd=tmp_path)
    assert [d["code"] for d in json.loads(found.stdout)] == ["ACL102"]
    given = run(
        "check", "train.py", "--output-format", "json", "--config", "other.toml", cwd=tmp_path
    )
    assert [d["code"] for d in json.loads(given.stdout)] == ["ACL101"]
    isolated = run("check", "train.py", "--output-format", "json", "--isolated", cwd=tmp_path)
    assert [d["code"] for d in json.loads(isolated.stdout)] == ["ACL101", "ACL102"]


@pytest.mark.parametrize(
    ("config", "named"),
    [
        ('[tool.accel-lint]\nselekt = ["ACL1"]\n', "selekt"),
        ('[tool.accel-lint]\nselect = ["ACL777"]\n', "ACL777"),
        ('[tool.accel-lint.per-file-ignores]\n"a.py" = ["ACL9"]\n', "ACL9"),
        ("[tool.accel-lint.rules.ACL101]\nworkers = 3\n", "workers"),
        ("[tool.accel-lint.rules.ACL555]\nx = 1\n", "ACL555"),
        ('[tool.accel-lint]\ntarget-torch = "latest"\n', "target-torch"),
        ('[tool.accel-lint]\ntarget-torch = "2.1garbage"\n', "target-torch"),
        ('[tool.accel-lint]\ntarget-torch = "3"\n', "target-torch"),
        ('[tool.accel-lint]\ntarget-torch = "0"\n', "target-torch"),
        ("[tool.accel-lint]\ntarget-torch = 1.10\n", "target-torch"),
        ('[tool.accel-lint]\nexclude = ["./legacy"]\n', "a path relative to the configuration"),
        ('[tool.accel-lint]\nexclude = ["!legacy"]\n', "negation"),
        ('[tool.accel-lint]\nexclude = ["legacy/[ab"]\n', "without its `]`"),
        ('[tool.accel-lint.per-file-ignores]\n"!tests/*.py" = ["ACL101"]\n', "negation"),
        ('[tool.accel-lint.per-file-ignores]\n"../x.py" = ["ACL101"]\n', "../x.py"),
        ("[tool.accel-lint\n", "invalid TOML"),
    ],
)
def test_bad_configuration_is_a_clear_error(tmp_path: Path, config: str, named: str) -> None:
    (tmp_path / "pyproject.toml").write_text(config)
    (tmp_path / "train.py").write_text(TRAIN)
    result = run("check", "train.py", cwd=tmp_path)
    assert result.returncode == 2
    assert named in result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_a_code_option_given_no_code_is_an_error(tmp_path: Path, option: str) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    result = run("check", "train.py", "--isolated", option, " , ", cwd=tmp_path)
    assert result.returncode == 2
    assert f"{option} needs at least one rule code" in result.stderr
    assert result.stdout == ""


@pytest.mark.parametrize("target", ["2.1", "1.13.1", " 2.0 "])
def test_target_torch_releases_are_accepted(tmp_path: Path, target: str) -> None:
    (tmp_path / "pyproject.toml").write_text(f'[tool.accel-lint]\ntarget-torch = "{target}"\n')
    (tmp_path / "train.py").write_text(TRAIN)
    assert run("check", "train.py", cwd=tmp_path).returncode == 1


def test_force_exclude_applies_to_standard_input(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[tool.accel-lint]\nexclude = ["legacy"]\n')
    name = ["--stdin-filename", "legacy/train.py"]
    checked = run("check", "--force-exclude", *name, "-", cwd=tmp_path, stdin=TRAIN)
    assert checked.returncode == 0, checked.stdout
    assert "ACL1" not in checked.stdout
    fixed = run("fix", "--apply", "--force-exclude", *name, "-", cwd=tmp_path, stdin=TRAIN)
    assert (fixed.returncode, fixed.stdout) == (0, TRAIN)
    diff = run("fix", "--force-exclude", *name, "-", cwd=tmp_path, stdin=TRAIN)
    assert (diff.returncode, diff.stdout) == (0, "")
    # without --force-exclude a named file is linted, as on the command line
    assert run("check", *name, "-", cwd=tmp_path, stdin=TRAIN).returncode == 1


def test_bad_input_files_become_acl000_and_the_run_goes_on(tmp_path: Path) -> None:
    (tmp_path / "a_syntax.py").write_text("import torch\ndef broken(:\n    pass\n")
    (tmp_path / "b_latin1.py").write_bytes(b"# caf\xe9\nimport torch\n")
    (tmp_path / "c_declared.py").write_bytes(
        b"# -*- coding: latin-1 -*-\n# caf\xe9\n" + TRAIN.encode()
    )
    (tmp_path / "d_empty.py").write_bytes(b"")
    (tmp_path / "e_link.py").symlink_to(tmp_path / "missing.py")
    (tmp_path / "f_nul.py").write_bytes(b"import torch\x00\n")
    result = run("check", ".", "--output-format", "json", "--select", "ACL102", cwd=tmp_path)
    assert result.returncode == 1
    assert "Traceback" not in result.stderr
    found = [(d["filename"], d["code"], d["location"]["row"]) for d in json.loads(result.stdout)]
    assert found == [
        ("a_syntax.py", "ACL000", 2),
        ("b_latin1.py", "ACL000", 1),
        ("c_declared.py", "ACL102", 8),
        ("e_link.py", "ACL000", 1),
        ("f_nul.py", "ACL000", 1),
    ]
    messages = {d["filename"]: d["message"] for d in json.loads(result.stdout)}
    assert "not valid UTF-8" in messages["b_latin1.py"]
    assert "no such file" in messages["e_link.py"]
    assert messages["a_syntax.py"].startswith("SyntaxError: invalid syntax")


def test_missing_path_is_reported(tmp_path: Path) -> None:
    result = run("check", "nope.py", "--output-format", "concise", cwd=tmp_path)
    assert result.returncode == 1
    assert result.stdout.startswith(
        "nope.py:1:1: ACL000 cannot read file: no such file or directory"
    )


def test_huge_file_is_refused_with_a_reason(tmp_path: Path) -> None:
    (tmp_path / "big.py").write_text("x = 1\n" * 1_000_000)
    result = run("check", "big.py", "--output-format", "concise", cwd=tmp_path)
    assert result.returncode == 1
    assert "too large to lint" in result.stdout


def test_fix_without_apply_prints_a_diff_and_exits_1(project: Path) -> None:
    result = run("fix", "train.py", cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines()[:2] == ["--- a/train.py", "+++ b/train.py"]
    assert "+loader = DataLoader(data, batch_size=8, pin_memory=torch.cuda.is_available())" in (
        result.stdout
    )
    assert (project / "train.py").read_text() == TRAIN  # nothing written
    assert "Would fix 1 finding in 1 file." in result.stderr


def test_fix_without_pending_changes_exits_0(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text("import torch\n")
    result = run("fix", "ok.py", cwd=tmp_path)
    assert result.returncode == 0
    assert result.stdout == ""


def test_fix_apply_writes_and_reports_what_remains(project: Path) -> None:
    result = run("fix", "--apply", "train.py", cwd=project)
    assert result.returncode == 1  # ACL101's fix is unsafe: the finding remains
    assert PIN in (project / "train.py").read_text()
    assert "Fixed 1 finding in 1 file." in result.stderr
    assert "ACL101" in result.stderr
    again = run("fix", "--apply", "--unsafe-fixes", "train.py", cwd=project)
    assert again.returncode == 0
    assert run("check", "train.py", cwd=project).returncode == 0


def test_fix_over_a_tree_in_workers_keeps_input_order(tmp_path: Path) -> None:
    # 12 files (enough to fork workers), every third one fixable, in nested folders
    expected = []
    for index in range(12):
        folder = tmp_path / f"pkg{index % 3}"
        folder.mkdir(exist_ok=True)
        path = folder / f"train_{index:02}.py"
        fixable = index % 3 == 0
        path.write_text(TRAIN if fixable else "import torch\nx = torch.zeros(3)\n")
        if fixable:
            expected.append(f"--- a/{path.relative_to(tmp_path).as_posix()}")
    expected.sort()
    before = {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.py")}
    result = run("fix", ".", "--select", "ACL102", "-j", "2", cwd=tmp_path)
    assert result.returncode == 1
    assert [line for line in result.stdout.splitlines() if line.startswith("--- ")] == expected
    assert "Would fix 4 findings in 4 files." in result.stderr
    assert {p: p.stat().st_mtime_ns for p in tmp_path.rglob("*.py")} == before

    applied = run("fix", ".", "--select", "ACL102", "-j", "2", "--apply", cwd=tmp_path)
    assert applied.returncode == 0, applied.stderr
    changed = sorted(p for p, t in before.items() if p.stat().st_mtime_ns != t)
    assert [f"--- a/{p.relative_to(tmp_path).as_posix()}" for p in changed] == expected
    assert all(PIN in p.read_text() for p in changed)


def test_fix_after_a_cached_check_still_fixes(project: Path) -> None:
    # `check` fills the cache; `fix` reads it to skip files with nothing to fix,
    # and must still find, fix and then re-lint the ones that do
    assert run("check", "train.py", cwd=project).returncode == 1
    result = run("fix", "--apply", "--unsafe-fixes", "train.py", cwd=project)
    assert result.returncode == 0, result.stderr
    assert "Fixed 2 findings in 1 file." in result.stderr
    assert run("check", "train.py", cwd=project).returncode == 0
    assert run("fix", "train.py", cwd=project).returncode == 0


def test_stdin_fix_passes_bytes_through(tmp_path: Path) -> None:
    # BOM and CRLF survive the round trip through standard input
    source = ("\ufeff" + TRAIN).replace("\n", "\r\n").encode("utf-8")
    result = subprocess.run(
        [sys.executable, "-m", "accel_lint", "fix", "--apply", "-", "--select", "ACL102"],
        cwd=tmp_path,
        input=source,
        capture_output=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == source.replace(
        b"batch_size=8)", b"batch_size=8, pin_memory=" + PIN.encode() + b")"
    )
    clean = subprocess.run(
        [sys.executable, "-m", "accel_lint", "fix", "--apply", "-", "--select", "ACL102"],
        cwd=tmp_path,
        input=result.stdout,
        capture_output=True,
        timeout=60,
    )
    assert clean.stdout == result.stdout


def test_exit_non_zero_on_fix(project: Path) -> None:
    result = run(
        "fix", "--apply", "--unsafe-fixes", "--exit-non-zero-on-fix", "train.py", cwd=project
    )
    assert result.returncode == 1
    result = run(
        "fix", "--apply", "--unsafe-fixes", "--exit-non-zero-on-fix", "train.py", cwd=project
    )
    assert result.returncode == 0


def test_rule_and_rules_commands(tmp_path: Path) -> None:
    page = run("rule", "acl101", cwd=tmp_path)
    assert page.returncode == 0
    assert page.stdout.startswith("# ACL101 · dataloader-sync-loading")
    listing = run("rules", "--output-format", "json", cwd=tmp_path)
    codes = [r["code"] for r in json.loads(listing.stdout)]
    assert codes[:3] == ["ACL001", "ACL101", "ACL102"] and codes == sorted(codes)
    table = run("rules", cwd=tmp_path)
    assert "dataloader-sync-loading" in table.stdout
    unknown = run("rule", "ACL999", cwd=tmp_path)
    assert unknown.returncode == 2 and "ACL999" in unknown.stderr


def test_version(tmp_path: Path) -> None:
    from accel_lint import __version__

    result = run("--version", cwd=tmp_path)
    assert result.stdout.strip() == f"accel-lint, version {__version__}"
