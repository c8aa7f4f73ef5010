"""The defects of the third stress test (issue 23), each through a real run: inputs
that took the whole run down, wrong results, what was left running or written where
it must not be."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(torch.load("records.pt"), batch_size=8)
for (x,) in loader:
    x = x.to(device)
"""


def run(
    *args: str, cwd: Path, timeout: float = 120, prefix: tuple[str, ...] = ()
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [*prefix, sys.executable, "-m", "accel_lint", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, "NO_COLOR": "1", "COLUMNS": "200"},
    )


def findings(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str, str]]:
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    return sorted((d["filename"], d["code"], d["message"]) for d in json.loads(result.stdout))


def codes(result: subprocess.CompletedProcess[str]) -> list[tuple[str, str]]:
    return [(name, code) for name, code, _ in findings(result)]


def notebook(cells: list[dict[str, Any]], metadata: str = "{}") -> str:
    """An nbformat 4.5 notebook's text, with `metadata` as raw JSON."""
    body = json.dumps(cells, indent=1)
    return (
        '{\n "cells": ' + body + ',\n "metadata": ' + metadata + ",\n"
        ' "nbformat": 4,\n "nbformat_minor": 5\n}\n'
    )


def code_cell(source: Any, number: int = 1) -> dict[str, Any]:
    return {
        "cell_type": "code",
        "execution_count": None,
        "id": f"cell-{number}",
        "metadata": {},
        "outputs": [],
        "source": source,
    }


def valid(text: str) -> None:
    nbformat = pytest.importorskip("nbformat")
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(10_000)  # nbformat's own json.loads, for the deep case
    try:
        nbformat.validate(nbformat.reads(text, as_version=4))
    finally:
        sys.setrecursionlimit(limit)


# -- whole-run crashes -----------------------------------------------------------------


def test_a_notebook_nesting_1000_brackets_is_read_and_deeper_is_acl000(tmp_path: Path) -> None:
    """Metadata 1,000 lists deep is a valid notebook (its code is linted); 20,000 deep
    is one ACL000 for that notebook; the run goes on either way (it was a
    RecursionError, exit 2, the other files' findings lost)."""
    for name, depth in (("deep.ipynb", 1000), ("deeper.ipynb", 20_000)):
        text = notebook([code_cell(TRAIN)], '{"deep": ' + "[" * depth + "]" * depth + "}")
        if depth == 1000:
            valid(text)
        (tmp_path / name).write_text(text)
    (tmp_path / "train.py").write_text(TRAIN)
    for jobs in ("1", "2"):
        result = run(
            "check", "--no-cache", "--output-format", "json", "-j", jobs,
            "deep.ipynb", "deeper.ipynb", "train.py", cwd=tmp_path,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert findings(result) == [
            ("deep.ipynb", "ACL101", findings(result)[0][2]),
            ("deep.ipynb", "ACL102", findings(result)[1][2]),
            (
                "deeper.ipynb",
                "ACL000",
                "not a valid notebook: its JSON nests deeper than Python's recursion limit",
            ),
            ("train.py", "ACL101", findings(result)[3][2]),
            ("train.py", "ACL102", findings(result)[4][2]),
        ]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_a_symlink_loop_named_on_the_command_line_is_that_file_s_error(
    tmp_path: Path, command: str
) -> None:
    (tmp_path / ".git").mkdir()  # the gitignore lookup runs inside a repository
    os.symlink("s.py", tmp_path / "s.py")
    (tmp_path / "train.py").write_text(TRAIN)
    result = run(command, "--no-cache", "--output-format", "json", "s.py", "train.py",
                 cwd=tmp_path) if command == "check" else run(
        command, "--no-cache", "s.py", "train.py", cwd=tmp_path)  # fmt: skip
    assert result.returncode == 1, result.stderr[-3000:]
    assert "Traceback" not in result.stderr and "internal error" not in result.stderr
    if command == "check":
        assert codes(result) == [
            ("s.py", "ACL000"), ("train.py", "ACL101"), ("train.py", "ACL102")
        ]  # fmt: skip
        assert "Too many levels of symbolic links" in findings(result)[0][2]
    else:
        assert "pin_memory=True" in result.stdout
        assert "2 findings would remain" in result.stderr  # s.py's ACL000 among them


def _unprivileged() -> tuple[str, ...]:
    """A prefix that runs a command without the power to ignore permissions: as
    root, root without CAP_DAC_OVERRIDE and CAP_DAC_READ_SEARCH (the interpreter
    under /root stays readable, by its owner); otherwise nothing."""
    if os.geteuid() != 0:
        return ()
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root without setpriv: permissions cannot be enforced")
    prefix = (setpriv, "--bounding-set", "-dac_override,-dac_read_search")
    probe = subprocess.run([*prefix, "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip(f"setpriv cannot drop capabilities here: {probe.stderr!r}")
    return prefix


def test_a_named_file_in_a_directory_without_search_permission(tmp_path: Path) -> None:
    prefix = _unprivileged()
    locked = tmp_path / "locked"
    (locked / "sub").mkdir(parents=True)
    (locked / "sub" / "train.py").write_text(TRAIN)
    (tmp_path / "train.py").write_text(TRAIN)
    locked.chmod(0)
    try:
        result = run(
            "check", "--no-cache", "--output-format", "json", "locked/sub/train.py", "train.py",
            cwd=tmp_path, prefix=prefix,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert findings(result) == [
            ("locked/sub/train.py", "ACL000", "cannot read file: permission denied"),
            ("train.py", "ACL101", findings(result)[1][2]),
            ("train.py", "ACL102", findings(result)[2][2]),
        ]
        # and from inside a directory that cannot be searched (the configuration lookup)
        result = run(
            "check", "--no-cache", "--output-format", "json", str(tmp_path / "train.py"),
            cwd=locked, prefix=prefix,
        )  # fmt: skip
        assert result.returncode == 1, result.stderr[-3000:]
        assert [c for _, c in codes(result)] == ["ACL101", "ACL102"]
    finally:
        locked.chmod(0o755)


# -- wrong results ---------------------------------------------------------------------


def test_a_percent_continuation_inside_brackets_is_python_not_a_magic(tmp_path: Path) -> None:
    """`%` at the start of a line that continues a bracket is the modulo operator:
    a magic starts a logical line only (it was masked, a false ACL000 that blocked
    every fix of the notebook)."""
    cells = [
        code_cell("%matplotlib inline\n", 1),
        code_cell(
            TRAIN
            + 'print("%d steps"\n      % 3)\nrows = [\n    "%s"\n    % x,\n]\n'
            + 'text = """\n%not a magic\n"""\ntotal = 7 \\\n% 2\n',
            2,
        ),
        code_cell("!nvidia-smi\n%time y = 1\nz = (y\n     % 2)\n", 3),
    ]
    text = notebook(cells)
    valid(text)
    (tmp_path / "nb.ipynb").write_text(text)
    result = run("check", "--no-cache", "--output-format", "json", "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    assert codes(result) == [("nb.ipynb", "ACL101"), ("nb.ipynb", "ACL102")]
    result = run("fix", "--apply", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert "Traceback" not in result.stderr
    fixed = json.loads((tmp_path / "nb.ipynb").read_text())
    source = "".join(fixed["cells"][1]["source"])
    assert "pin_memory=True" in source
    assert 'print("%d steps"\n      % 3)\n' in source and "%not a magic" in source
    assert "".join(fixed["cells"][2]["source"]) == "!nvidia-smi\n%time y = 1\nz = (y\n     % 2)\n"


def test_a_magic_runs_to_the_end_of_its_logical_line_and_an_indented_cell_is_no_error(
    tmp_path: Path,
) -> None:
    """IPython reads a magic to the end of its logical line (a backslash, an open
    bracket) and runs a cell indented as a whole with the indentation taken off
    (`leading_indent`): each was a false ACL000 in public notebooks
    (`!saved_model_cli ... \\`, `%timeit np.fromiter((...),` over two lines, a cell
    whose every line starts with a space), and a false ACL000 blocks every fix."""
    shell = "!saved_model_cli show --dir '{model_path}' --tag_set serve \\\n"
    shell += "                      --signature_def serving_default\n"
    timeit = "%timeit np.fromiter((xi + yi for xi, yi in zip(x, y)),\n"
    timeit += "                    dtype=x.dtype, count=len(x))\n"
    indented = ' # Make sure we have a GPU\n device = "cuda"\n device\n'
    cells = [
        code_cell(shell, 1),
        code_cell(timeit, 2),
        code_cell(indented, 3),
        code_cell(TRAIN, 4),
        code_cell("print((1,\n", 5),  # a real error stays one
    ]
    text = notebook(cells)
    valid(text)
    (tmp_path / "nb.ipynb").write_text(text)
    result = run("check", "--no-cache", "--output-format", "json", "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    assert codes(result) == [("nb.ipynb", "ACL000"), ("nb.ipynb", "ACL101"), ("nb.ipynb", "ACL102")]
    assert [d["cell"] for d in json.loads(result.stdout) if d["code"] == "ACL000"] == [5]
    cells.pop()
    (tmp_path / "nb.ipynb").write_text(notebook(cells))
    result = run("fix", "--apply", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert result.returncode in (0, 1) and "Traceback" not in result.stderr, result.stderr
    fixed = json.loads((tmp_path / "nb.ipynb").read_text())
    sources = ["".join(c["source"]) for c in fixed["cells"]]
    assert sources[:3] == [shell, timeit, indented]  # kept as they were, byte for byte
    assert "pin_memory=True" in sources[3]


@pytest.mark.parametrize("command", ["check", "fix"])
def test_naming_excluded_directories_behaves_the_same_for_one_or_several(
    tmp_path: Path, command: str
) -> None:
    for name in ("a", "b"):
        (tmp_path / name / "build" / "build").mkdir(parents=True)
        (tmp_path / name / "build" / "train.py").write_text(TRAIN)
        (tmp_path / name / "build" / "build" / "nested.py").write_text(TRAIN)  # excluded
    args = ["--no-cache", "--output-format", "json"] if command == "check" else ["--no-cache"]
    one = run(command, *args, "a/build", cwd=tmp_path)
    both = run(command, *args, "a/build", "b/build", cwd=tmp_path)
    assert one.returncode == both.returncode == 1, both.stderr
    assert "No Python files found" not in both.stderr
    if command == "check":
        assert codes(one) == [("a/build/train.py", "ACL101"), ("a/build/train.py", "ACL102")]
        assert codes(both) == [
            *codes(one), ("b/build/train.py", "ACL101"), ("b/build/train.py", "ACL102")
        ]  # fmt: skip
    else:
        assert "a/build/train.py" in both.stdout and "b/build/train.py" in both.stdout
        assert "nested.py" not in both.stdout
    # pre-commit's --force-exclude: an excluded directory named is left out, one or several
    forced = run(command, *args, "--force-exclude", "a/build", "b/build", cwd=tmp_path)
    assert forced.returncode == 0 and "No Python files found" in forced.stderr


PY2 = """\
import torch
from torch.utils.data import DataLoader

try:
    import cPickle as pickle
except ImportError, e:
    print(e)
loader = DataLoader(torch.load("records.pt"), batch_size=8)
"""

# PEP 701 (Python 3.12+) f-strings, as CPython 3.13's own test_fstring.py writes them
FSTRINGS = (
    TRAIN
    + """\
names = ["a", "b"]
print(f"{"\\n".join(names)}")
print(f"{f"{f"{names[0]}"}"}")
print(f"{'\\t'.join(names)!r:>{10}}")
total = f"{(
    1 +  # a comment inside the replacement field
    2
)}"
"""
)

PY314_EXCEPT = """\
try:
    import foo
except ImportError, ModuleNotFoundError:
    pass
"""


def test_python2_except_is_acl000_and_newer_f_strings_are_linted(tmp_path: Path) -> None:
    (tmp_path / "old.py").write_text(PY2)
    (tmp_path / "fstrings.py").write_text(FSTRINGS)
    (tmp_path / "except314.py").write_text(PY314_EXCEPT + TRAIN)
    result = run("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    found = findings(result)
    if sys.version_info < (3, 12):
        # read with libcst's grammar, said so; never a false ACL000
        assert "fstrings.py: uses syntax newer than Python 3.11 (f-string" in result.stderr
    assert [(f, c) for f, c, _ in found if f == "fstrings.py"] == [
        ("fstrings.py", "ACL101"), ("fstrings.py", "ACL102")
    ]  # fmt: skip
    if sys.version_info < (3, 14):
        # Python 3.14 reads `except E, e:` as `except (E, e):`; `e` is no exception class
        assert [(f, c, m) for f, c, m in found if f == "old.py"] == [
            (
                "old.py",
                "ACL000",
                "SyntaxError: multiple exception types must be parenthesized: Python 2's "
                "`except E, e:` (Python 3 writes `except E as e:`)",
            )
        ]
        # CapWords classes: the 3.14 form, linted and said so
        assert [c for f, c, _ in found if f == "except314.py"] == ["ACL101", "ACL102"]
        assert "except314.py: uses syntax newer" in result.stderr


def test_a_cell_source_that_is_not_text_is_acl000_for_that_cell(tmp_path: Path) -> None:
    """nbformat rejects such a notebook; it was linted as `str(42)` (or crashed on a
    list holding a number)."""
    nbformat = pytest.importorskip("nbformat")
    text = notebook([code_cell(42, 1), code_cell(["import torch\n", 7], 2), code_cell(TRAIN, 3)])
    with pytest.raises(nbformat.ValidationError):
        nbformat.validate(json.loads(text))
    (tmp_path / "nb.ipynb").write_text(text)
    before = (tmp_path / "nb.ipynb").read_bytes()
    result = run("check", "--no-cache", "--output-format", "json", "nb.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr[-3000:]
    rows = [(d["cell"], d["code"], d["message"]) for d in json.loads(result.stdout)]
    assert rows[:2] == [
        (1, "ACL000", "not a valid notebook: the cell's `source` is not text (found int)"),
        (
            2,
            "ACL000",
            "not a valid notebook: the cell's `source` is not text (found a list of int, str)",
        ),
    ]
    assert [c for _, c, _ in rows[2:]] == ["ACL101", "ACL102"]
    run("fix", "--apply", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert (tmp_path / "nb.ipynb").read_bytes() == before  # no fixes in a broken notebook


def test_a_notebook_large_only_by_its_outputs_is_linted(tmp_path: Path) -> None:
    """8 MB of a PNG output and 300 bytes of code: linted and fixed (it was refused as
    "too large"); a notebook with 6 MB of code is still refused, by its code's size."""
    import base64

    image = base64.b64encode(os.urandom(6_000_000)).decode()
    cell = code_cell(TRAIN, 1)
    cell["execution_count"] = 1
    cell["outputs"] = [
        {
            "output_type": "display_data",
            "data": {"image/png": image, "text/plain": ["<Figure>"]},
            "metadata": {},
        }
    ]
    text = notebook([cell])
    valid(text)
    assert len(text) > 8_000_000
    (tmp_path / "big.ipynb").write_text(text)
    (tmp_path / "code.ipynb").write_text(notebook([code_cell("x = 1\n" * 1_000_000, 1)]))
    result = run("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert findings(result) == [
        ("big.ipynb", "ACL101", findings(result)[0][2]),
        ("big.ipynb", "ACL102", findings(result)[1][2]),
        (
            "code.ipynb",
            "ACL000",
            "the notebook's code is too large to lint (6.0 MB; the limit is 5 MB)",
        ),
    ]  # fmt: skip
    result = run("fix", "--apply", "--no-cache", "big.ipynb", cwd=tmp_path)
    assert result.returncode == 1, result.stderr
    fixed = json.loads((tmp_path / "big.ipynb").read_text())
    assert "pin_memory=True" in "".join(fixed["cells"][0]["source"])
    assert fixed["cells"][0]["outputs"][0]["data"]["image/png"] == image


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
def test_a_configuration_that_is_a_device_is_said_so(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    result = run("check", "--config", "/dev/zero", "train.py", cwd=tmp_path, timeout=30)
    assert result.returncode == 2
    assert result.stderr == (
        "accel-lint: error: /dev/zero: not a regular file (a character device), "
        "so not a configuration file\n"
    )
    missing = run("check", "--config", "nowhere.toml", "train.py", cwd=tmp_path)
    assert missing.stderr == "accel-lint: error: nowhere.toml: configuration file not found\n"


# -- left running ----------------------------------------------------------------------


def _children(pid: int) -> list[int]:
    path = Path(f"/proc/{pid}/task/{pid}/children")
    return [int(p) for p in path.read_text().split()] if path.exists() else []


def _wait_gone(pids: list[int], timeout: float = 30) -> list[int]:
    """The pids still alive once each has ended or `timeout` passed, waiting on the
    kernel's exit event (a pidfd), not polling."""
    import select

    alive = []
    for pid in pids:
        try:
            fd = os.pidfd_open(pid)
        except ProcessLookupError:
            continue
        try:
            ready, _, _ = select.select([fd], [], [], timeout)
            if not ready:
                alive.append(pid)
        finally:
            os.close(fd)
    return alive


@pytest.mark.skipif(
    not sys.platform.startswith("linux") or not hasattr(os, "pidfd_open"), reason="Linux /proc"
)
@pytest.mark.parametrize("sig", ["SIGTERM", "SIGKILL"])
def test_a_signal_to_the_main_check_process_alone_ends_its_workers(
    tmp_path: Path, sig: str
) -> None:
    """What systemd, `docker stop` and CI runners send: SIGTERM to the main process,
    not its group. It exits 143 and its workers end with it (they ran on at full
    CPU); SIGKILL, which no handler sees, ends them too (the kernel, on the parent's
    death)."""
    import signal
    import time

    for i in range(400):
        (tmp_path / f"train_{i}.py").write_text(TRAIN * 60)
    proc = subprocess.Popen(
        [sys.executable, "-m", "accel_lint", "check", "--no-cache", "-j", "2", "."],
        cwd=tmp_path,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    try:
        workers: list[int] = []
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and proc.poll() is None and len(workers) < 2:
            workers = _children(proc.pid)
            time.sleep(0.05)
        assert proc.poll() is None and len(workers) == 2, "no two workers to stop"
        proc.send_signal(getattr(signal, sig))
        _, err = proc.communicate(timeout=30)
        assert proc.returncode == (143 if sig == "SIGTERM" else -signal.SIGKILL), err.decode()
        assert b"Traceback" not in err
        assert _wait_gone(workers) == []
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for pid in workers:  # what a failure of this test would otherwise leave running
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)


# -- written where it must not be, or lost ---------------------------------------------


def _xattrs_supported(path: Path) -> bool:
    probe = path / "probe"
    probe.write_text("")
    try:
        os.setxattr(probe, "user.probe", b"1")
    except (OSError, AttributeError):
        return False
    finally:
        probe.unlink()
    return True


def test_fix_apply_keeps_extended_attributes(tmp_path: Path) -> None:
    if not _xattrs_supported(tmp_path):
        pytest.skip("no user extended attributes on this file system")
    train = tmp_path / "train.py"
    train.write_text(TRAIN)
    os.setxattr(train, "user.origin", b"https://example.org/train.py")
    os.setxattr(train, "user.checksum", b"\x00\x01binary")
    result = run("fix", "--apply", "--no-cache", "train.py", cwd=tmp_path)
    assert "Traceback" not in result.stderr and "error" not in result.stderr, result.stderr
    assert "pin_memory=True" in train.read_text()
    assert sorted(os.listxattr(train)) == ["user.checksum", "user.origin"]
    assert os.getxattr(train, "user.origin") == b"https://example.org/train.py"
    assert os.getxattr(train, "user.checksum") == b"\x00\x01binary"
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]


@pytest.mark.parametrize("how", ["hard link", "linked folder"])
def test_the_same_file_reached_twice_is_fixed_once(tmp_path: Path, how: str) -> None:
    """It was fixed through the first path, then reported as "changed on disk while
    accel-lint was fixing it" through the second, exit 2."""
    (tmp_path / "src").mkdir()
    train = tmp_path / "src" / "train.py"
    train.write_text(TRAIN)
    if how == "hard link":
        os.link(train, tmp_path / "src" / "same.py")
        paths = ["."]
    else:
        os.symlink("src", tmp_path / "linked")
        paths = ["src", "linked"]  # a walk does not follow links; named, both are read
    result = run("fix", "--apply", "--no-cache", *paths, cwd=tmp_path)
    assert result.returncode in (0, 1), result.stderr
    assert "changed on disk" not in result.stderr and "error" not in result.stderr
    assert "in 1 file." in result.stderr, result.stderr
    fixed = train.read_text()
    assert fixed.count("pin_memory=True") == 1
    again = run("fix", "--apply", "--no-cache", *paths, cwd=tmp_path)
    assert train.read_text() == fixed and "Fixed" not in again.stderr
