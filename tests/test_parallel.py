"""Parallel linting: worker processes, results in input order, the same reports as
linting in this process, and no lost file when a worker dies."""

from __future__ import annotations

import contextlib
import faulthandler
import io
import json
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from accel_lint import parallel
from accel_lint.config import Selection, load_settings
from accel_lint.lint import PARALLEL_MIN_FILES, lint_paths
from accel_lint.parallel import available_cpus, chunked, map_ordered
from tests.test_ci_formats import BROKEN, CLEAN, TRAIN, run

_PARENT = os.getpid()


def _square_with_pid(n: int) -> tuple[int, int]:
    return n * n, os.getpid()


def _die_in_worker_on_7(n: int) -> int:
    if n == 7 and os.getpid() != _PARENT:
        os._exit(3)  # a worker killed mid-task: the pool breaks
    return n * n


def _segfault() -> None:
    faulthandler.disable()  # pytest's handler would print the worker's stack
    os.kill(os.getpid(), signal.SIGSEGV)


def _segfault_in_worker_on_7(n: int) -> int:
    if n == 7 and os.getpid() != _PARENT:
        _segfault()  # what libcst's native parser did on deep input
    return n * n


def _crashed(n: int, why: str) -> int:
    assert "SIGSEGV" in why, why
    return -n


_initialized: list[str] = []


def _init(tag: str) -> None:
    _initialized.append(tag)


def _read_init(_: int) -> list[str]:
    return list(_initialized)


@pytest.fixture(params=["forked", "pooled"], autouse=True)
def implementation(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Every test here runs on both pools: the forked one Linux uses, and
    `ProcessPoolExecutor` (what spawning platforms get), forking here."""
    if request.param == "pooled":
        monkeypatch.setattr(parallel, "_forked", parallel._pooled)
        # a pool stopped by an exception is abandoned for the rest of the process
        # (`exit_if_abandoned`): not this test process's later in-process runs
        monkeypatch.setattr(parallel, "abandoned", False)
    return str(request.param)


def _square_or_raise(n: int) -> int:
    if n == 5:
        raise ValueError(f"item {n} is bad")
    return n * n


def _pid_or_die_on_7(n: int) -> int:
    if n == 7 and os.getpid() != _PARENT:
        os._exit(3)
    return os.getpid()


def _children() -> set[str]:
    """This process's children, exited but not reaped ones included (Linux)."""
    found: set[str] = set()
    for task in Path(f"/proc/{os.getpid()}/task").iterdir():
        with contextlib.suppress(FileNotFoundError):  # a thread that ended meanwhile
            found.update((task / "children").read_text().split())
    return found


needs_proc = pytest.mark.skipif(not Path("/proc/self/task").is_dir(), reason="Linux's /proc")


@needs_proc
def test_an_exception_in_a_worker_reaches_the_caller_and_ends_the_workers(
    implementation: str,
) -> None:
    before = _children()
    with pytest.raises(ValueError, match="item 5 is bad") as raised:
        map_ordered(_square_or_raise, list(range(20)), [1] * 20, jobs=2)
    assert "_square_or_raise" in str(raised.value.__cause__)  # the worker's traceback
    if implementation == "forked":  # the executor's are ended, not waited for
        assert _children() <= before  # ended and reaped


@needs_proc
def test_the_workers_are_reaped_after_a_run() -> None:
    before = _children()
    assert map_ordered(_square_with_pid, list(range(20)), [1] * 20, jobs=2)[0][0] == 0
    assert _children() <= before


def test_only_a_dead_workers_chunk_runs_again_one_item_per_process(implementation: str) -> None:
    """The items of the chunk a worker died on run again, each in a process of its
    own. The forked pool hands the chunks the dead worker would have had to the
    others; a broken `ProcessPoolExecutor` leaves every chunk still pending to that."""
    items = list(range(40))
    chunks = chunked([1] * 40, jobs=2)
    dead = next(chunk for chunk in chunks if 7 in chunk)
    pids = map_ordered(_pid_or_die_on_7, items, [1] * 40, jobs=2)
    assert pids[7] == os.getpid()  # it killed its own process too: run here (no on_crash)
    alone = {pids[i] for i in dead if i != 7}
    assert len(alone) == len(dead) - 1 and os.getpid() not in alone  # a process each
    others = {pid for i, pid in enumerate(pids) if i not in dead}
    assert not others & alone and os.getpid() not in others
    if implementation == "forked":  # the executor's depend on when it saw the death
        assert len(others) <= 2  # the two workers


def test_results_come_back_in_input_order_from_worker_processes() -> None:
    items = list(range(40))
    weights = [(n * 37) % 11 + 1 for n in items]  # uneven: heaviest-first reorders them
    results = map_ordered(_square_with_pid, items, weights, jobs=2)
    assert [value for value, _ in results] == [n * n for n in items]
    assert os.getpid() not in {pid for _, pid in results}


def test_initializer_runs_in_each_worker() -> None:
    assert (
        map_ordered(_read_init, [0, 1, 2], [1, 1, 1], jobs=2, initargs=("x",), initializer=_init)
        == [["x"]] * 3
    )
    assert _initialized == []  # not in this process


def test_a_dead_worker_loses_no_result() -> None:
    items = list(range(12))
    assert map_ordered(_die_in_worker_on_7, items, [1] * 12, jobs=2) == [n * n for n in items]


def test_an_item_that_kills_its_worker_is_isolated_and_the_rest_finish() -> None:
    """A crash in native code must not take the run with it: the items of the dead
    worker run again one per process, and the one that kills its process again gets
    `on_crash`'s result, never a retry in this process."""
    items = list(range(40))
    results = map_ordered(_segfault_in_worker_on_7, items, [1] * 40, jobs=2, on_crash=_crashed)
    assert results == [-7 if n == 7 else n * n for n in items]


def test_a_file_that_kills_its_worker_is_an_internal_error_of_that_file(
    tree: list[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from accel_lint import lint

    real = lint._lint_hashed

    def crash_on_train_03(path: str, *args: object) -> object:
        if path == "train_03.py" and os.getpid() != _PARENT:
            _segfault()
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(lint, "_lint_hashed", crash_on_train_03)  # workers are forked
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    reports = {r.path: r for r in lint_paths(tree, settings, jobs=2, use_cache=False)}
    assert reports.keys() == set(tree)
    crashed = reports["train_03.py"]
    assert crashed.internal_error is not None and "SIGSEGV" in crashed.internal_error
    assert [d.code for d in reports["train_04.py"].diagnostics] == ["ACL101", "ACL102"]


def test_chunks_cover_every_index_once_heaviest_first() -> None:
    weights = [5, 100, 1, 1, 1, 1, 40, 1, 1, 1, 1, 1]
    chunks = chunked(weights, jobs=2)
    assert sorted(i for chunk in chunks for i in chunk) == list(range(len(weights)))
    assert chunks[0] == [1]  # the heaviest file alone, first
    loads = [sum(weights[i] for i in chunk) for chunk in chunks]
    assert loads[:2] == [100, 40]
    assert chunked([], jobs=2) == []


@pytest.mark.parametrize(("cpu_max", "expected"), [("150000 100000\n", 2), ("max 100000\n", 64)])
def test_a_cgroup_cpu_quota_caps_the_workers(
    monkeypatch: pytest.MonkeyPatch, cpu_max: str, expected: int
) -> None:
    def fake_open(path: str, *args: object, **kwargs: object) -> io.StringIO:
        assert path == "/sys/fs/cgroup/cpu.max"
        return io.StringIO(cpu_max)

    monkeypatch.setattr(os, "sched_getaffinity", lambda pid: set(range(64)), raising=False)
    monkeypatch.setattr(parallel, "open", fake_open, raising=False)
    assert available_cpus() == expected


@pytest.fixture
def tree(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Enough files to go parallel: findings, clean, broken, undecodable, missing, skipped."""
    monkeypatch.chdir(tmp_path)
    names: list[str] = []
    for i in range(PARALLEL_MIN_FILES + 4):
        name = f"train_{i:02d}.py"
        (tmp_path / name).write_text(TRAIN.replace("batch_size=8", f"batch_size={i + 1}"))
        names.append(name)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "latin.py").write_bytes(b'x = "\xff"\n')
    (tmp_path / "skipped.py").write_text("# accel-lint: skip-file\n" + TRAIN)
    names += ["clean.py", "broken.py", "latin.py", "missing.py", "skipped.py"]
    return names[::-1]  # not sorted: order must follow the input


def test_parallel_reports_equal_serial_ones_in_input_order(tree: list[str]) -> None:
    settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
    serial = lint_paths(tree, settings, jobs=1, use_cache=False, with_edits=True)
    parallel = lint_paths(tree, settings, jobs=2, use_cache=False, with_edits=True)
    assert [r.path for r in parallel] == tree
    assert parallel == serial
    codes = {r.path: [d.code for d in r.diagnostics] for r in parallel}
    assert codes["train_00.py"] == ["ACL101", "ACL102"]
    assert codes["broken.py"] == codes["latin.py"] == codes["missing.py"] == ["ACL000"]
    assert codes["clean.py"] == codes["skipped.py"] == []


def test_jobs_option_gives_the_same_output(tree: list[str], tmp_path: Path) -> None:
    def check(*args: str) -> subprocess.CompletedProcess[str]:
        return run("check", "--no-cache", *args, "--output-format=json", ".", cwd=tmp_path)

    one, two = check("-j", "1"), check("--jobs", "2")
    assert one.returncode == two.returncode == 1
    assert one.stdout == two.stdout and '"code": "ACL101"' in one.stdout
    bad = check("--jobs", "0")
    assert bad.returncode == 2 and "--jobs" in bad.stderr


def test_fast_exclusion_agrees_with_glob_matching(tmp_path: Path) -> None:
    """`Settings.is_excluded` short-cuts literal names (discovery's hot path);
    it must decide exactly as matching every pattern with `path_matches`."""
    from dataclasses import replace

    from accel_lint.config import path_matches

    patterns = ("build", "build/", ".venv", "legacy*", "tests/*.py", "*_test.py", "a/b", "[ab]c")
    base = load_settings(isolated=True, search_from=tmp_path)
    settings = replace(base, exclude=patterns, root=tmp_path)
    paths = [
        "build",
        "src/build/x.py",
        "src/builder/x.py",
        "legacy_code/x.py",
        "tests/test_x.py",
        "pkg/tests/test_x.py",
        "pkg/x_test.py",
        "a/b/c.py",
        "x/a/b.py",
        "ac/x.py",
        "src/.venv/lib.py",
        "/elsewhere/build/x.py",
        "/elsewhere/ok.py",
    ]
    for path in paths:
        full = path if path.startswith("/") else str(tmp_path / path)
        expected = any(path_matches(full, p, tmp_path) for p in patterns)
        assert settings.is_excluded(full) == expected, path
    checked = ("src/build/x.py", "pkg/x_test.py", "src/builder/x.py", "pkg/x.py")
    assert [settings.is_excluded(str(tmp_path / p)) for p in checked] == [True, True, False, False]


def test_workers_start_warm(tree: list[str], tmp_path: Path) -> None:
    """The workers are forked after the parent imported the engine and the rules the
    files need (and froze them out of the collector): no worker imports them again.
    In a fresh process, so that nothing was imported before `lint_paths`."""
    probe = textwrap.dedent(
        """
        import gc, json, os, sys
        from accel_lint import lint
        from accel_lint.config import Selection, load_settings

        real = lint._lint_hashed
        seen = []  # this worker's pid, and what it had before its first file

        def observed(path, *args):
            if not seen:
                warm = "accel_lint.rules.dataloader_sync_loading" in sys.modules
                seen.append((os.getpid(), warm, gc.get_freeze_count() > 0))
            report, digest = real(path, *args)
            report.note = json.dumps(seen[0])
            return report, digest

        assert "accel_lint.engine" not in sys.modules
        lint._lint_hashed = observed
        settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
        reports = lint.lint_paths(sys.argv[1:], settings, jobs=2, use_cache=False)
        print(json.dumps([r.note for r in reports]))
        print(json.dumps(sorted(m for m in sys.modules if m.startswith("accel_lint.rules."))))
        pools = ("concurrent.futures", "multiprocessing")
        print(json.dumps([m for m in pools if m in sys.modules]))
        """
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, *tree],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr
    notes_line, rules_line, pools_line = result.stdout.strip().splitlines()[-3:]
    # plain forks on Linux: neither pool library is imported (a third of what the
    # workers cost beyond one process, in instructions)
    if sys.platform.startswith("linux"):
        assert json.loads(pools_line) == []
    seen = {tuple(json.loads(note)) for note in json.loads(notes_line) if note}
    assert len({pid for pid, _, _ in seen}) == 2  # two workers linted
    assert all(warm and frozen for _, warm, frozen in seen)
    # the parent imported the rules the files' words name, and only those
    rules = json.loads(rules_line)
    assert "accel_lint.rules.dataloader_sync_loading" in rules
    assert not any("data_parallel" in module for module in rules)


def test_warm_start_reads_a_bounded_part_of_a_large_tree(tmp_path: Path) -> None:
    """`warm_start` looks for trigger words in the files up to `WARM_BYTES` only: a
    rule named only further on is left to the worker that needs it (on a large tree,
    looking for a word no file spells costs more than importing a rule), and one
    named within the budget is imported. In a fresh process, as above."""
    first = tmp_path / "a_train.py"
    first.write_text("from torch.utils.data import DataLoader\nloader = DataLoader(ds)\n")
    filler = tmp_path / "b_filler.py"
    filler.write_text("x = 1\n" * 200)
    late = tmp_path / "c_late.py"
    late.write_text("import torch\ntorch.backends.cuda.matmul.allow_tf32 = True\n")
    probe = textwrap.dedent(
        """
        import gc, json, sys
        from accel_lint import lint
        from accel_lint.config import Selection, load_settings

        lint.WARM_BYTES = int(sys.argv[1])
        settings = load_settings(isolated=True, cli=Selection(select=("ALL",)))
        lint.warm_start(sys.argv[2:], settings)
        rules = sorted(m for m in sys.modules if m.startswith("accel_lint.rules."))
        print(json.dumps([rules, gc.get_freeze_count() > 0]))
        """
    )
    paths = [str(first), str(filler), str(late)]

    def imported(budget: int) -> tuple[list[str], bool]:
        result = subprocess.run(
            [sys.executable, "-c", probe, str(budget), *paths],
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert result.returncode == 0, result.stderr
        rules, frozen = json.loads(result.stdout.strip().splitlines()[-1])
        assert frozen
        return rules, frozen

    # the first two files reach the budget: the third is never read
    small, _ = imported(first.stat().st_size + filler.stat().st_size)
    assert "accel_lint.rules.dataloader_sync_loading" in small
    assert "accel_lint.rules.tf32_legacy_api" not in small
    whole, _ = imported(1 << 20)
    assert "accel_lint.rules.dataloader_sync_loading" in whole
    assert "accel_lint.rules.tf32_legacy_api" in whole
    assert not any("data_parallel" in module for module in whole)
