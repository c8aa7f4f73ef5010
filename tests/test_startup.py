"""The table of compiled dataclass methods (`startup.py`, issue 26): a class built
from the table is the class `dataclasses` builds, a second run compiles nothing,
and a table that is not ours, or cannot be written, changes nothing."""

from __future__ import annotations

import dataclasses
import inspect
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from accel_lint import startup
from tests.support import ROOT


@pytest.fixture
def table(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """The table at a temporary path, `dataclasses` compiling through it."""
    path = tmp_path / "__pycache__" / "dataclass-methods.bin"
    monkeypatch.setattr(startup, "table_path", lambda: path)
    monkeypatch.setattr(startup, "_codes", {})
    monkeypatch.setattr(startup, "_compiled", 0)
    monkeypatch.setattr(sys, "dont_write_bytecode", False)
    monkeypatch.setattr(dataclasses, "exec", startup._exec, raising=False)
    yield path


def _classes() -> tuple[type, type]:
    @dataclasses.dataclass(frozen=True)
    class Point:
        x: int
        y: list[str] = dataclasses.field(default_factory=list)

    @dataclasses.dataclass(order=True)
    class Version:
        major: int
        minor: int = 0

    return Point, Version


def test_a_class_from_the_table_is_the_class_dataclasses_builds(table: Path) -> None:
    Point, _ = _classes()
    assert startup._compiled > 0
    startup.save()
    assert table.exists()

    startup._codes.clear()
    startup._codes.update(startup._read(table))
    compiled = startup._compiled
    Point2, Version2 = _classes()
    assert startup._compiled == compiled  # every method came from the table

    p = Point2(1)
    assert p == Point2(1, []) and p != Point2(2) and repr(p).endswith(".Point(x=1, y=[])")
    with pytest.raises(dataclasses.FrozenInstanceError):
        p.x = 3  # type: ignore[misc]
    assert Version2(1, 2) < Version2(1, 3)
    # compiled without this module's `from __future__ import annotations`, as
    # `dataclasses` itself compiles: the annotations are the objects, not strings
    assert inspect.signature(Point2.__init__) == inspect.signature(Point.__init__)
    assert Point2.__init__.__annotations__ == Point.__init__.__annotations__


def test_a_table_of_another_python_or_a_broken_one_is_ignored(table: Path) -> None:
    table.parent.mkdir()
    table.write_bytes(b"accel-lint dataclass methods 1\n2.7.18\n" + b"\x00" * 40)
    assert startup._read(table) == {}
    table.write_bytes(startup._MAGIC + b"\xff\x00garbage")
    assert startup._read(table) == {}
    _classes()  # builds as usual


def test_nothing_is_written_where_python_writes_no_bytecode(
    table: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _classes()
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    startup.save()
    assert not table.exists()


def test_a_place_that_cannot_be_written_leaves_the_run_as_it_was(table: Path) -> None:
    table.parent.write_text("not a directory")  # as a read-only install refuses
    _classes()
    startup.save()  # no error
    assert table.parent.read_text() == "not a directory"
    assert startup._compiled > 0  # still to be written, by a run that can


def test_a_second_check_compiles_no_dataclass_method(tmp_path: Path) -> None:
    """Real processes: the first run of `check` writes the table beside the package,
    the next one builds libcst's nodes and ours from it."""
    script = tmp_path / "train.py"
    script.write_text((ROOT / "fixtures" / "cnn_bn" / "train.py").read_text())
    probe = (
        "import sys\n"
        "from accel_lint import startup\n"
        "from accel_lint.cli import main\n"
        "sys.argv = ['accel-lint', 'check', '--no-cache', '-q', sys.argv[1]]\n"
        "try:\n"
        "    main()\n"
        "except SystemExit:\n"
        "    pass\n"
        "print('compiled', startup._compiled, 'held', len(startup._codes), file=sys.stderr)\n"
        "startup.save()\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}

    def run() -> tuple[int, int]:
        done = subprocess.run(
            [sys.executable, "-c", probe, str(script)],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            check=False,
        )
        line = [x for x in done.stderr.splitlines() if x.startswith("compiled ")][-1]
        _, compiled, _, held = line.split()
        return int(compiled), int(held)

    run()  # writes the table if this install had none
    compiled, held = run()
    assert compiled == 0
    assert held > 500  # libcst's node classes and ours
