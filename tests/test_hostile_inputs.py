"""Inputs that once crashed, hung or fooled the linter, through real subprocess runs:
a FIFO or a device where a `.py` file should be, nesting that crashes libcst's native
parser, files that CPython rejects but libcst accepts (and the reverse)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cli

# ACL101 and ACL102: the loaded data is not known to be in memory (a TensorDataset
# built in the file would be, and ACL101 would not report it)
TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(torch.load("records.pt"), batch_size=8)
for (x,) in loader:
    x = x.to(device)
"""


def run(
    *args: str, cwd: Path, timeout: float = 60, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    return [(d["filename"], d["code"], d["message"]) for d in json.loads(result.stdout)]


# -- what is not a regular file is not read ---------------------------------------


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="named pipes are POSIX")
def test_a_fifo_named_like_a_python_file_does_not_hang(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "x.py")
    (tmp_path / "train.py").write_text(TRAIN)
    for args in (["x.py", "train.py"], ["."]):
        result = run(
            "check", "--no-cache", "--output-format", "json", *args, cwd=tmp_path, timeout=20
        )
        assert result.returncode == 1, result.stderr
        found = findings(result)
        assert ("x.py", "ACL000", "cannot read file: not a regular file (a named pipe)") in found
        assert any(name == "train.py" and code == "ACL101" for name, code, _ in found)
        assert "Traceback" not in result.stderr


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_link_to_an_endless_device_is_not_read(tmp_path: Path) -> None:
    (tmp_path / "zero.py").symlink_to("/dev/zero")
    (tmp_path / "train.py").write_text(TRAIN)
    for command in (["check", "--output-format", "json"], ["fix", "--apply"]):
        result = run(*command, "--no-cache", ".", cwd=tmp_path, timeout=30)
        assert "Traceback" not in result.stderr
        assert result.returncode == 1, result.stderr
        assert "zero.py" in result.stdout + result.stderr
        assert "not a regular file (a character device)" in result.stdout + result.stderr


def test_the_size_cap_is_checked_before_reading(tmp_path: Path) -> None:
    from accel_lint import files

    big = tmp_path / "big.py"
    with big.open("wb") as fh:
        fh.truncate(files.MAX_BYTES + 1)  # sparse: reading it would cost memory, fstat does not
    with pytest.raises(files.ReadError, match="too large"):
        files.read_bytes(str(big))


# -- nesting that crashes or stalls libcst's parser ---------------------------------

# a DataLoader built: the loader rules need libcst to parse the file
HEADER = "from torch.utils.data import DataLoader\nloader = DataLoader(range(8))\n"


def _sum(terms: int) -> str:
    return HEADER + "x = " + " + ".join(["a"] * terms) + "\n"


def _deep_tree(tmp_path: Path) -> list[str]:
    """Files that killed the run (a segfault in libcst's native parser) or took
    minutes, among ordinary ones; enough files for the parallel path."""
    (tmp_path / "brackets.py").write_text(HEADER + "x = " + "(" * 1500 + "1" + ")" * 1500 + "\n")
    (tmp_path / "sum10k.py").write_text(_sum(10_000))
    (tmp_path / "sum20k.py").write_text(_sum(20_000))
    (tmp_path / "train.py").write_text(TRAIN)
    for i in range(8):
        (tmp_path / f"ok{i}.py").write_text(f"import torch\nx{i} = torch.zeros({i})\n")
    return ["brackets.py", "sum10k.py", "sum20k.py"]


@pytest.mark.parametrize("jobs", ["1", "2"])
def test_a_deeply_nested_file_is_acl000_and_the_others_are_reported(
    tmp_path: Path, jobs: str
) -> None:
    deep = _deep_tree(tmp_path)
    result = run(
        "check", "--no-cache", "--output-format", "json", "--jobs", jobs, ".", cwd=tmp_path
    )
    assert result.returncode == 1, result.stderr[-2000:]
    found = findings(result)
    for name in deep:
        (message,) = [m for f, code, m in found if f == name and code == "ACL000"]
        assert "too deeply nested" in message
    assert any(name == "train.py" and code == "ACL101" for name, code, _ in found)


def test_fix_goes_on_past_a_deeply_nested_file(tmp_path: Path) -> None:
    deep = _deep_tree(tmp_path)
    before = {name: (tmp_path / name).read_bytes() for name in deep}
    result = run("fix", "--apply", "--no-cache", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    # pin_memory, and what other rules' safe fixes add to train.py (non_blocking copies)
    assert re.search(r"Fixed \d+ findings? in 1 file\.", result.stderr), result.stderr
    assert "pin_memory=True" in (tmp_path / "train.py").read_text()
    assert {name: (tmp_path / name).read_bytes() for name in deep} == before
    assert result.stderr.count("too deeply nested") == len(deep)


def test_nesting_within_the_limit_is_analysed_past_python_s_recursion_limit(
    tmp_path: Path,
) -> None:
    """A chain of a few hundred terms is valid code that CPython compiles: its
    findings are reported and fixed (libcst walks such trees recursively)."""
    from accel_lint.parse import DEPTH_LIMIT

    chain = "total = " + " + ".join(["a"] * (DEPTH_LIMIT - 20)) + "\n"
    (tmp_path / "long.py").write_text(TRAIN + chain)
    result = run("check", "--no-cache", "--output-format", "json", "long.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-2000:]
    assert sorted(code for _, code, _ in findings(result)) == ["ACL101", "ACL102"]
    result = run("fix", "--apply", "--no-cache", "long.py", cwd=tmp_path)
    assert "pin_memory=True" in (tmp_path / "long.py").read_text()
    assert "Traceback" not in result.stderr


def test_nesting_over_the_limit_names_the_place(tmp_path: Path) -> None:
    from accel_lint.parse import DEPTH_LIMIT

    chain = "total = " + ".b".join(["a"] * (DEPTH_LIMIT + 10)) + "\n"
    (tmp_path / "deep.py").write_text(TRAIN + chain)
    result = run("check", "--no-cache", "--output-format", "concise", "deep.py", cwd=tmp_path)
    assert result.returncode == 1
    assert "deep.py:8:9: ACL000 too deeply nested" in result.stdout
    assert f"the limit is {DEPTH_LIMIT}" in result.stdout


# -- CPython and libcst must both accept a file -------------------------------------


@pytest.mark.parametrize(
    ("code", "message"),
    [
        ('x = "\\N{NOT A REAL NAME}"\n', "unknown Unicode character name"),
        ('x = b"\xc3\xa9"\n', "bytes can only contain ASCII literal characters"),
        ("x = " + "(" * 500 + "1" + ")" * 500 + "\n", "too many nested parentheses"),
        ('x = b"a" "b"\n', "cannot mix bytes and nonbytes literals"),
    ],
    ids=["unknown-name-escape", "non-ascii-bytes", "500-parentheses", "bytes-and-str"],
)
def test_what_cpython_rejects_is_acl000_and_never_fixed(
    tmp_path: Path, code: str, message: str
) -> None:
    source = TRAIN + code
    (tmp_path / "bad.py").write_text(source, encoding="utf-8")
    result = run("check", "--no-cache", "--output-format", "json", "bad.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    ((_, code_, text),) = findings(result)
    assert code_ == "ACL000" and message in text
    assert "Traceback" not in result.stderr
    result = run("fix", "--apply", "--unsafe-fixes", "--no-cache", "bad.py", cwd=tmp_path)
    assert result.returncode == 1
    assert (tmp_path / "bad.py").read_text(encoding="utf-8") == source
    assert "Traceback" not in result.stderr


@pytest.mark.skipif(sys.version_info >= (3, 14), reason="t-strings compile on 3.14")
def test_a_libcst_logic_error_is_acl000_not_a_crash(tmp_path: Path) -> None:
    (tmp_path / "t.py").write_text(TRAIN + 'x = t"a" t"b"\n')
    result = run("check", "--no-cache", "--output-format", "json", "t.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert [code for _, code, _ in findings(result)] == ["ACL000"]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr


def test_valid_python_libcst_cannot_parse_is_acl000_at_the_statement(tmp_path: Path) -> None:
    code = (
        TRAIN
        + "\n\nclass Ok:\n    pass\n\n\ndef build():\n    class T(a=1, *A, **k):\n        pass\n"
    )
    (tmp_path / "cls.py").write_text(code)
    result = run("check", "--no-cache", "--output-format", "concise", "cls.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    (line,) = [line for line in result.stdout.splitlines() if "ACL000" in line]
    assert line.startswith("cls.py:15:5: ACL000 ")
    assert "libcst" in line and "CPython accepts" in line


@pytest.mark.skipif(sys.version_info >= (3, 12), reason="needs syntax newer than this Python")
def test_syntax_newer_than_the_running_python_is_checked_and_said(tmp_path: Path) -> None:
    (tmp_path / "new.py").write_text(TRAIN + "type Batch = list[int]\n")
    result = run("check", "--no-cache", "--output-format", "json", "new.py", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    assert sorted(code for _, code, _ in findings(result)) == ["ACL101", "ACL102"]
    assert "new.py: uses syntax newer than Python" in result.stderr
    assert "type alias statement" in result.stderr


# -- clear errors, exit 2, never a traceback (issue 9, item 10) ---------------------


@pytest.mark.parametrize(
    ("pyproject", "says"),
    [
        (b"tool = 5\n", b"`tool` must be a table"),
        (b"project = 5\n", b"`project` must be a table"),
        (b"[project]\ndependencies = 5\n", b"`project.dependencies` must be a list of strings"),
        (b'[project]\nname = "\xff"\n', b"invalid TOML: not UTF-8"),
    ],
)
def test_a_malformed_pyproject_on_the_search_path_is_a_clear_error(
    tmp_path: Path, pyproject: bytes, says: bytes
) -> None:
    (tmp_path / "pyproject.toml").write_bytes(pyproject)
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "train.py").write_text(TRAIN)
    (tmp_path / "train.py").write_text(TRAIN)
    # below it (found while looking for a configuration), and beside it (where the
    # project's torch requirement is read)
    for target in ("pkg/train.py", "train.py"):
        ran = cli("check", target, cwd=tmp_path)
        if target == "pkg/train.py" and b"project" in pyproject and b"name" not in pyproject:
            assert ran.returncode == 1, ran.stderr  # not the project's own file: not read
            continue
        assert ran.returncode == 2, ran.stderr
        assert says.decode(errors="replace") in ran.stderr
        assert "Traceback" not in ran.stderr


def test_closed_stdin_is_a_clear_error(tmp_path: Path) -> None:
    ran = subprocess.run(
        [sys.executable, "-m", "accel_lint", "check", "-"],
        cwd=tmp_path,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=60,
        preexec_fn=lambda: os.close(0),
    )
    assert ran.returncode == 2, ran.stderr
    assert "standard input is closed" in ran.stderr
    assert "Traceback" not in ran.stderr


def test_file_names_that_are_not_utf8_are_written_in_every_format(tmp_path: Path) -> None:
    """SARIF percent-encodes the name's bytes; a UTF-8 terminal gets the name's own
    bytes; PYTHONIOENCODING=ascii gets escapes. Exit 1 (findings) every time."""
    name = os.fsdecode(b"odd\xff.py")
    (tmp_path / name).write_text(TRAIN)
    sarif = run("check", "--output-format", "sarif", ".", cwd=tmp_path)
    assert sarif.returncode == 1, sarif.stderr
    uris = {
        r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"]
        for r in json.loads(sarif.stdout)["runs"][0]["results"]
    }
    assert uris == {"odd%FF.py"}
    raw = subprocess.run(
        [sys.executable, "-m", "accel_lint", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "utf-8"},
    )
    assert raw.returncode == 1, raw.stderr
    assert b"odd\xff.py:" in raw.stdout
    ascii_run = subprocess.run(
        [sys.executable, "-m", "accel_lint", "check", "."],
        cwd=tmp_path,
        capture_output=True,
        timeout=60,
        env={**os.environ, "NO_COLOR": "1", "PYTHONIOENCODING": "ascii"},
    )
    assert ascii_run.returncode == 1, ascii_run.stderr
    assert b"odd\\udcff.py:" in ascii_run.stdout
    assert b"Traceback" not in ascii_run.stderr


def test_ctrl_c_during_check_exits_130(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import accel_lint.cli.check

    def interrupted(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(accel_lint.cli.check, "lint_paths", interrupted)
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert ran.returncode == 130, ran.stderr
    assert "Traceback" not in ran.stderr


# A process inherits its parent's signal mask and ignored signals across exec, and
# Python leaves an ignored SIGINT ignored: what the test runner's process holds (an
# earlier test, a CI runner that ignores SIGINT for background jobs) must not decide
# whether the Ctrl-C tests' SIGINT arrives. This starts Python as a terminal would.
_DEFAULT_SIGINT = [
    sys.executable,
    "-c",
    "import os, signal, sys; signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT}); "
    "signal.signal(signal.SIGINT, signal.SIG_DFL); "
    "os.execv(sys.executable, [sys.executable, *sys.argv[1:]])",
]


@pytest.mark.skipif(not hasattr(os, "killpg"), reason="POSIX signals")
def test_ctrl_c_on_a_running_parallel_check_ends_it_at_once_with_130(tmp_path: Path) -> None:
    """The real thing: SIGINT to the process group (what a terminal's Ctrl-C does)
    of a check busy with two workers on a minute's work: it ends, interrupted (130,
    not the 1 of a finished run), and its workers with it (they were left running
    to the end of their files). No deadline: it waits on events (the workers exist;
    the process and then each worker is gone), so a loaded machine only makes it
    slower. The workers are born with SIGINT blocked, so the signal may come at any
    moment after they exist."""
    import signal
    import time

    for i in range(400):
        (tmp_path / f"train_{i}.py").write_text(TRAIN * 60)
    proc = subprocess.Popen(
        [*_DEFAULT_SIGINT, "-m", "accel_lint", "check", "--no-cache", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    workers: list[str] = []
    try:
        # the event: both workers forked (the run is inside the pool)
        while proc.poll() is None and len(workers) < 2:
            with contextlib.suppress(OSError):
                workers = children.read_text().split()
            time.sleep(0.01)
        assert proc.poll() is None, "the run ended before it could be interrupted"
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=600)  # a hang guard, not a measure
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err.decode()
    assert b"Traceback" not in err
    for pid in workers:  # terminated by the parent; reaped by init once they are gone
        while Path(f"/proc/{pid}").exists() and "State:\tZ" not in _status(pid):
            time.sleep(0.01)


# A check whose first worker is ending a file with a large report (the pipe to the
# parent holds 64 KB): the marker says the report is on its way.
_BIG_REPORT = """
import sys, time
from pathlib import Path
import accel_lint.lint as lint
from accel_lint.diagnostic import Diagnostic
from accel_lint.cli import main

marker = Path(sys.argv[1])

def slow_or_big(path, settings, with_edits, hashed=True):
    if path.endswith("a.py"):
        report = lint.FileReport(path, internal_error="x" * 300_000_000)
        marker.write_text("")
        return report, None
    time.sleep(120)
    return lint.FileReport(path), None

lint._lint_hashed = slow_or_big
sys.argv = ["accel-lint", "check", "--no-cache", "-j", "2", *sys.argv[2:]]
main()
"""


def test_ctrl_c_while_a_worker_sends_a_large_report_still_exits(tmp_path: Path) -> None:
    """A worker ended while it writes its result leaves the pool's manager thread
    waiting for the rest of it for good, and the interpreter joins that thread at
    exit: `accel-lint: interrupted` was printed and the process never ended. The
    run now leaves at once (130) once its pool is abandoned."""
    import signal
    import time

    files = []
    for name in ("a.py", *(f"b{i}.py" for i in range(9))):
        (tmp_path / name).write_text(TRAIN)
        files.append(name)
    marker = tmp_path / "marker"
    (tmp_path / "drive.py").write_text(_BIG_REPORT)
    proc = subprocess.Popen(
        [*_DEFAULT_SIGINT, "drive.py", str(marker), *files],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        start_new_session=True,
    )
    try:
        while proc.poll() is None and not marker.exists():
            time.sleep(0.01)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
        time.sleep(1.0)  # the 300 MB report is being pickled and written meanwhile
        os.killpg(proc.pid, signal.SIGINT)
        _, err = proc.communicate(timeout=120)  # a hang guard: it hung for good before
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
    assert proc.returncode == 130, err.decode()
    assert b"accel-lint: interrupted" in err and b"Traceback" not in err


def _status(pid: str) -> str:
    try:
        return Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return "State:\tZ"


def test_unexpected_errors_exit_2_not_the_findings_code(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import accel_lint.cli.check

    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a bug")

    monkeypatch.setattr(accel_lint.cli.check, "lint_paths", broken)
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert ran.returncode == 2
    assert "internal error" in ran.stderr and "RuntimeError: a bug" in ran.stderr
