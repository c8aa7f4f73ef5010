"""Runs never touch the user's files and leave nothing running: each run's working
directory is a copy (large files and folders too, links resolving as before), and
every process a run started is ended with it, including one that left its session.
Real subprocesses; the scripts here do not import torch, so the runner stays idle."""

from __future__ import annotations

import contextlib
import hashlib
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from accel_lint.verify.launch import RunResult, RunSpec, Target, run
from accel_lint.verify.workdir import copy_workdir
from tests.support import ROOT

MB = 2**20


def _tree(directory: Path) -> dict[str, str]:
    """Every entry under `directory` (links not followed): content hash, link text."""
    found: dict[str, str] = {}
    for root, dirs, files in os.walk(directory):
        for name in sorted(dirs + files):
            path = Path(root) / name
            rel = str(path.relative_to(directory))
            if path.is_symlink():
                found[rel] = "-> " + os.readlink(path)
            elif path.is_file():
                digest = hashlib.sha256()
                with open(path, "rb") as fh:
                    for block in iter(lambda: fh.read(MB), b""):
                        digest.update(block)
                found[rel] = digest.hexdigest()
            else:
                found[rel] = "dir"
    return found


def _write(path: Path, size: int, byte: bytes = b"x") -> None:
    """A file of `size` bytes: marked at both ends, sparse in between (cheap to make)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as fh:
        fh.write(byte * 4096)
        fh.truncate(size - 4096)
        fh.seek(0, os.SEEK_END)
        fh.write(byte * 4096)


def _run(project: Path, source: str, tmp_path: Path, timeout: float = 60.0) -> RunResult:
    text = textwrap.dedent(source)
    (project / "train.py").write_text(text, encoding="utf-8")
    scratch = tmp_path / "scratch"
    scratch.mkdir(exist_ok=True)
    target = Target(project, Path("train.py"), (), 3, 1, timeout)
    return run(target, RunSpec("run", text), scratch)


def _work(result: RunResult) -> Path:
    assert result.out_dir is not None
    return result.out_dir.parent / "work"


def test_a_run_that_writes_everywhere_leaves_the_users_tree_unchanged(tmp_path: Path) -> None:
    project = tmp_path / "project"
    _write(project / "big.bin", 17 * MB)  # over the old 16 MB limit for copying a file
    for i in range(3):  # a 270 MB folder: over the old 256 MB limit for a folder
        _write(project / "data" / f"shard{i}.bin", 90 * MB, b"%d" % i)
    _write(project / "checkpoints" / "last.pt", 17 * MB, b"c")
    (project / "train.py").write_text("", encoding="utf-8")
    before = _tree(project)
    result = _run(
        project,
        """
        with open("big.bin", "ab") as fh:
            fh.write(b"appended by the run")
        with open("data/new.txt", "w") as fh:
            fh.write("created by the run")
        with open("checkpoints/last.pt", "wb") as fh:
            fh.write(b"a 5-step state_dict")
        with open("data/shard0.bin", "r+b") as fh:
            fh.write(b"written in place")
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.output
    after = _tree(project)
    after.pop("train.py")
    before.pop("train.py")
    assert after == before
    # the writes happened, in the run's copy
    work = _work(result)
    assert (work / "big.bin").read_bytes().endswith(b"appended by the run")
    assert (work / "data" / "new.txt").read_text() == "created by the run"
    assert (work / "checkpoints" / "last.pt").read_bytes() == b"a 5-step state_dict"
    assert not (work / "data").is_symlink() and not (work / "big.bin").is_symlink()


def test_links_resolve_in_the_copy_as_in_the_tree(tmp_path: Path) -> None:
    shared = tmp_path / "shared_data"
    shared.mkdir()
    (shared / "records.txt").write_text("shared records", encoding="utf-8")
    project = tmp_path / "project"
    (project / "configs").mkdir(parents=True)
    (project / "configs" / "base.yaml").write_text("lr: 0.1", encoding="utf-8")
    os.symlink("../shared_data", project / "data")  # relative, out of the tree
    os.symlink("configs/base.yaml", project / "config.yaml")  # relative, inside
    os.symlink(project / "configs", project / "configs_abs")  # absolute, inside
    os.symlink("missing.txt", project / "dangling")
    before = _tree(project)
    result = _run(
        project,
        """
        print(open("data/records.txt").read())
        print(open("config.yaml").read())
        with open("configs_abs/written.yaml", "w") as fh:
            fh.write("through an absolute link")
        """,
        tmp_path,
    )
    assert result.returncode == 0, result.output
    assert "shared records" in result.output and "lr: 0.1" in result.output
    work = _work(result)
    # the absolute link into the tree points into the copy: the write landed there
    assert (work / "configs" / "written.yaml").exists()
    before.pop("train.py", None)
    after = _tree(project)
    after.pop("train.py")
    assert after == before
    assert os.readlink(work / "config.yaml") == "configs/base.yaml"
    assert os.readlink(work / "dangling") == "missing.txt"


def test_copy_leaves_out_caches_and_special_files(tmp_path: Path) -> None:
    source = tmp_path / "src"
    (source / ".git").mkdir(parents=True)
    (source / ".git" / "HEAD").write_text("ref", encoding="utf-8")
    (source / "pkg" / "__pycache__").mkdir(parents=True)
    (source / "pkg" / "mod.py").write_text("x = 1", encoding="utf-8")
    os.mkfifo(source / "pipe.py")
    copied = copy_workdir(source, tmp_path / "dest")
    assert copied == 5
    assert sorted(
        str(p.relative_to(tmp_path / "dest")) for p in (tmp_path / "dest").rglob("*")
    ) == [
        "pkg",
        "pkg/mod.py",
    ]


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


# the grandchild leaves the run's session itself, and says so once it has
GRANDCHILD = (
    "import os, sys, time; os.setsid(); "
    "open(sys.argv[1], 'w').write(str(os.getpid())); time.sleep(600)"
)
DETACH = """
    import os, subprocess, sys, time
    subprocess.Popen([sys.executable, "-c", {code!r}, {pidfile!r}])
    while not os.path.exists({pidfile!r}) or not open({pidfile!r}).read():
        time.sleep(0.01)
"""


def test_a_process_that_left_the_runs_session_is_ended_with_the_run(tmp_path: Path) -> None:
    pidfile = tmp_path / "grandchild.pid"
    project = tmp_path / "project"
    project.mkdir()
    result = _run(project, DETACH.format(code=GRANDCHILD, pidfile=str(pidfile)), tmp_path)
    assert result.returncode == 0, result.output
    pid = int(pidfile.read_text())
    # it had left the run's session (it may be gone and reaped by now: verify, its
    # subreaper, ends and reaps such orphans with the run)
    with contextlib.suppress(ProcessLookupError):
        assert os.getsid(pid) == pid
    deadline = time.monotonic() + 5
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid), "the detached grandchild survived the run"


@pytest.mark.slow
def test_sigterm_ends_every_run_and_removes_the_scratch(tmp_path: Path) -> None:
    """What a CI timeout sends: verify stops like on Ctrl-C, exit 128+15."""
    pytest.importorskip("torch")
    pids = tmp_path / "pids"
    grandchild = tmp_path / "grandchild.pid"
    run_tmpdir = tmp_path / "run_tmpdir"
    project = tmp_path / "project"
    project.mkdir()
    script = project / "train.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import os, subprocess, sys, time
            import torch
            from torch.utils.data import DataLoader, Dataset

            class Records(Dataset):
                def __len__(self):
                    return 8

                def __getitem__(self, index):
                    return torch.full((2,), float(index))

            def main():
                loader = DataLoader(Records(), batch_size=2)
                subprocess.Popen([sys.executable, "-c", {GRANDCHILD!r}, {str(grandchild)!r}])
                while not os.path.exists({str(grandchild)!r}):
                    time.sleep(0.01)
                with open({str(run_tmpdir)!r}, "w") as fh:
                    fh.write(os.environ["TMPDIR"])
                with open({str(pids)!r}, "w") as fh:
                    fh.write(str(os.getpid()))
                time.sleep(600)

            if __name__ == "__main__":
                main()
            """
        ),
        encoding="utf-8",
    )
    # a TMPDIR too long for DataLoader sockets: the runs get a short one, which goes too
    scratch = tmp_path / "tmp" / ("t" * 80)
    scratch.mkdir(parents=True)
    env = {**os.environ, "TMPDIR": str(scratch), "NO_COLOR": "1"}
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "accel_lint",
            "verify",
            str(script),
            "--unsafe-fixes",
            "--repeat",
            "0",
        ],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    deadline = time.monotonic() + 120
    while not pids.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert pids.exists(), "the script never started"
    time.sleep(0.2)
    script_pid, detached = int(pids.read_text()), int(grandchild.read_text())
    assert _alive(script_pid) and _alive(detached)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == 128 + signal.SIGTERM, err
    assert "verify terminated; every run was stopped" in err
    deadline = time.monotonic() + 5
    while (_alive(script_pid) or _alive(detached)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(script_pid) and not _alive(detached)
    left = [p.name for p in scratch.iterdir() if p.name.startswith("accel-lint-verify-")]
    assert left == []
    short = Path(run_tmpdir.read_text())
    assert len(os.fsencode(short)) < len(os.fsencode(scratch)) and not short.exists()


# a grandchild that leaves the session and sheds the environment (the run's marker)
# at once: by Popen, and by a double fork ending in execve with an empty environment
SHED = """
    import os, subprocess, sys, time
    token = {token!r}
    subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)", token],
        start_new_session=True,
        env={{}},
    )
    if os.fork() == 0:
        if os.fork() == 0:
            os.setsid()
            argv = [sys.executable, "-c", "import time; time.sleep(600)", token]
            os.execve(sys.executable, argv, {{}})
        os._exit(0)
    os.wait()
    time.sleep(0.5)
"""


def _marked(token: str) -> list[int]:
    """Live processes whose command line carries `token`."""
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        if token.encode() in cmdline and _alive(int(entry.name)):
            found.append(int(entry.name))
    return found


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="/proc, subreapers")
def test_grandchildren_that_shed_session_and_environment_are_ended(tmp_path: Path) -> None:
    """They survived, one per run: neither the run's group nor its environment marker
    reaches them."""
    import uuid

    token = f"acl-shed-{uuid.uuid4().hex}"
    project = tmp_path / "project"
    project.mkdir()
    try:
        result = _run(project, SHED.format(token=token), tmp_path)
        assert result.returncode == 0, result.output
        assert _marked(token) == []
    finally:
        for pid in _marked(token):
            os.kill(pid, signal.SIGKILL)


LINKED_WRITES = """
    import os
    print("dataset:", open("data/values.txt").read().strip())  # a read through a link
    with open("own.txt", "w") as fh:  # inside the copy: fine
        fh.write("mine")
    for attempt in (
        lambda: open("logs/run.log", "a"),
        lambda: open("out/model.pt", "wb"),
        lambda: os.open("out/new.bin", os.O_WRONLY | os.O_CREAT),
        lambda: os.makedirs("out/ckpt/epoch1"),
    ):
        try:
            attempt()
        except PermissionError as exc:
            print("refused:", exc.filename, "|", exc.strerror)
    open("out/model.pt", "wb").write(b"overwritten")
"""


def test_writes_through_a_link_out_of_the_copy_are_refused_and_reads_work(
    tmp_path: Path,
) -> None:
    """A log file and an output folder linked elsewhere: the user's files were
    written once per run. Reads through the dataset's link keep working."""
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "out").mkdir(parents=True)
    (elsewhere / "data").mkdir()
    (elsewhere / "data" / "values.txt").write_text("1 2 3\n")
    (elsewhere / "run.log").write_text("the user's log\n")
    (elsewhere / "out" / "model.pt").write_bytes(b"the user's model")
    project = tmp_path / "project"
    project.mkdir()
    (project / "logs").mkdir()
    os.symlink(elsewhere / "run.log", project / "logs" / "run.log")
    os.symlink(elsewhere / "out", project / "out")
    os.symlink(elsewhere / "data", project / "data")
    before = _tree(elsewhere)
    result = _run(project, LINKED_WRITES, tmp_path)
    assert _tree(elsewhere) == before  # the user's files are unchanged
    assert "dataset: 1 2 3" in result.output
    refused = [line for line in result.output.splitlines() if line.startswith("refused:")]
    assert [line.split(" | ")[0] for line in refused] == [
        "refused: logs/run.log",
        "refused: out/model.pt",
        "refused: out/new.bin",
        "refused: out/ckpt",  # makedirs stops at the first folder it would make
    ]
    assert all("the script writes outside its folder" in line for line in refused)
    assert result.returncode == 1  # the last, unguarded write ends the script
    assert "PermissionError" in result.output and "writes outside its folder" in result.output
    assert (_work(result) / "own.txt").read_text() == "mine"
    # each refusal reaches the parent, the caught ones too, with where it leads
    assert [(w["path"], w["resolves_to"]) for w in result.refused_writes] == [
        ("logs/run.log", str((elsewhere / "run.log").resolve())),
        ("out/model.pt", str((elsewhere / "out" / "model.pt").resolve())),
        ("out/new.bin", str((elsewhere / "out" / "new.bin").resolve())),
        ("out/ckpt", str((elsewhere / "out" / "ckpt").resolve())),
    ]  # the last write tried `out/model.pt` again: said once


CAUGHT_WRITE = """
    import sys
    try:
        with open("logs/run.log", "a") as log:
            log.write("epoch 1\\n")
    except PermissionError:
        print("no log file; going on")
    sys.exit(0)
"""


def test_a_refused_write_the_script_catches_still_reaches_the_parent(tmp_path: Path) -> None:
    """A try/except around a log write hid the refusal: the run ended with status 0
    and nothing said the script writes outside its folder."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "run.log").write_text("the user's log\n")
    project = tmp_path / "project"
    (project / "logs").mkdir(parents=True)
    os.symlink(elsewhere / "run.log", project / "logs" / "run.log")
    result = _run(project, CAUGHT_WRITE, tmp_path)
    assert result.returncode == 0 and "no log file; going on" in result.output
    assert (elsewhere / "run.log").read_text() == "the user's log\n"
    assert result.refused_writes == [
        {"path": "logs/run.log", "resolves_to": str((elsewhere / "run.log").resolve())}
    ]
