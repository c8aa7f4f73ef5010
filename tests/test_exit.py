"""How the `accel-lint` program ends (`cli.run`, issue 26): without the interpreter's
teardown, yet with everything a normal exit would still have done that someone can
see: the exit status, all of the output, the `atexit` handlers, a thread's work.
And the cyclic collector: off while the command's modules are imported, on while
files are checked. Real processes throughout: what is tested is the exit."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from tests.support import ROOT, cli

FIXTURES = ROOT / "fixtures"


def _program(tmp_path: Path, *args: str, probe: str = "") -> subprocess.CompletedProcess[str]:
    """`accel-lint ARGS` as the installed program runs it (`run`), after `probe`."""
    script = (
        "import sys\n"
        f"{probe}\n"
        "from accel_lint.cli import run\n"
        "sys.argv = ['accel-lint', *sys.argv[1:]]\n"
        "run()\n"
    )
    return subprocess.run(
        [sys.executable, "-c", script, *args],
        cwd=tmp_path,
        env={**os.environ, "NO_COLOR": "1"},
        capture_output=True,
        text=True,
        check=False,
    )


def _tree(tmp_path: Path) -> Path:
    tree = tmp_path / "tree"
    shutil.copytree(FIXTURES, tree)  # 95 scripts, about 100 kB of findings as JSON
    return tree


def test_the_status_and_every_byte_of_the_output_survive_the_exit(tmp_path: Path) -> None:
    """More output than a pipe holds, written through Python's buffer: all of it
    arrives, and the status says there are findings, as in the same run in process."""
    tree = _tree(tmp_path)
    ran = _program(tmp_path, "check", str(tree), "--no-cache", "--output-format", "json")
    same = cli("check", str(tree), "--no-cache", "--output-format", "json", cwd=tmp_path)
    assert ran.returncode == same.returncode == 1
    assert len(ran.stdout) > 65_536
    assert json.loads(ran.stdout) == json.loads(same.stdout)

    clean = tmp_path / "clean.py"
    clean.write_text("print('hello')\n")
    ran = _program(tmp_path, "check", str(clean), "--no-cache")
    assert (ran.returncode, ran.stdout.strip()) == (0, "All checks passed!")
    ran = _program(tmp_path, "chek")
    assert ran.returncode == 2 and "Did you mean 'check'?" in ran.stderr


def test_atexit_handlers_run_before_the_exit(tmp_path: Path) -> None:
    marker = tmp_path / "marker"
    probe = f"import atexit\natexit.register(lambda: open({str(marker)!r}, 'w').write('ran'))"
    ran = _program(tmp_path, "check", str(FIXTURES / "cnn_bn" / "train.py"), "-q", probe=probe)
    assert ran.returncode == 1
    assert marker.read_text() == "ran"


def test_a_thread_still_running_makes_the_exit_a_normal_one(tmp_path: Path) -> None:
    """Python's exit waits for a thread that is not a daemon; a skipped teardown would
    kill it. The thread finishes its work only once `run` has seen it alive, so the
    work is done only if `run` then waited for it."""
    marker = tmp_path / "marker"
    probe = (
        "import threading\n"
        "import accel_lint.cli as cli\n"
        "seen = threading.Event()\n"
        "looked = cli._threads_alive\n"
        "def spy():\n"
        "    alive = looked()\n"
        "    seen.set()\n"
        "    return alive\n"
        "cli._threads_alive = spy\n"
        "def work():\n"
        "    seen.wait()\n"
        f"    open({str(marker)!r}, 'w').write('done')\n"
        "threading.Thread(target=work).start()\n"
    )
    ran = _program(tmp_path, "check", str(FIXTURES / "cnn_bn" / "train.py"), "-q", probe=probe)
    assert ran.returncode == 1
    assert marker.read_text() == "done"


def test_the_collector_is_on_while_files_are_checked_and_the_imports_are_frozen(
    tmp_path: Path,
) -> None:
    probe = (
        "import atexit, gc\n"
        "import accel_lint.lint as lint\n"
        "checked = lint._lint_source\n"
        "states = []\n"
        "def spy(*args, **kwargs):\n"
        "    states.append(gc.isenabled())\n"
        "    return checked(*args, **kwargs)\n"
        "lint._lint_source = spy\n"
        "atexit.register(lambda: print('states', states, 'frozen', gc.get_freeze_count(),"
        " 'on', gc.isenabled(), file=sys.stderr))\n"
    )
    tree = _tree(tmp_path)
    ran = _program(tmp_path, "check", str(tree), "--no-cache", "-q", "--jobs", "1", probe=probe)
    assert ran.returncode == 1
    line = [x for x in ran.stderr.splitlines() if x.startswith("states ")][-1]
    states, _, rest = line.removeprefix("states ").partition(" frozen ")
    frozen, _, on = rest.partition(" on ")
    checked = json.loads(states.replace("True", "true").replace("False", "false"))
    assert len(checked) >= 3 and all(checked)
    # libcst, the engine and the rules, frozen too: far more objects than the command
    assert int(frozen) > 50_000  # the command's own: about 24,000
    assert on == "True"
