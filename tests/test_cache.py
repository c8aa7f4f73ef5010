"""The result cache: same output with and without it, misses on every change that
matters (content, rules, settings, the tool itself), never an error from a bad
cache, and `--no-cache` really bypassing it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import accel_lint.engine
import accel_lint.lint
from accel_lint import cache as cache_module
from accel_lint.cache import CACHEDIR_TAG, MAX_AGE_DAYS, ResultCache, cache_dir, content_hash
from accel_lint.config import Selection, Settings, load_settings
from accel_lint.lint import FileReport, lint_paths
from tests.test_ci_formats import CLEAN, TRAIN, run


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.delenv(cache_module.CACHE_DIR_ENV, raising=False)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loader.py").write_text(TRAIN.replace("batch_size=8", "batch_size=4"))
    return tmp_path


def settings(root: Path, *select: str) -> Settings:
    return load_settings(search_from=root, isolated=True, cli=Selection(select=select or ("ALL",)))


def files(root: Path) -> list[str]:
    return ["train.py", "clean.py", "broken.py", "pkg/loader.py"]


class LintCounter:
    """Counts the files actually linted (cache misses), in this process (jobs=1)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.paths: list[str] = []
        real = accel_lint.lint.lint_bytes

        def counting(
            path: str, data: bytes, s: Settings, *, with_edits: bool = False
        ) -> FileReport:
            self.paths.append(path)
            return real(path, data, s, with_edits=with_edits)

        monkeypatch.setattr(accel_lint.lint, "lint_bytes", counting)

    def take(self) -> list[str]:
        paths, self.paths = self.paths, []
        return sorted(paths)


# -- through the command line -------------------------------------------------------


@pytest.mark.parametrize("fmt", ["json", "full", "github", "sarif"])
def test_output_is_the_same_with_and_without_cache_and_after_an_edit(
    project: Path, fmt: str
) -> None:
    args = ("check", "--output-format", fmt, ".")
    cold = run(*args, cwd=project)
    warm = run(*args, cwd=project)
    uncached = run(*args, "--no-cache", cwd=project)
    assert cold.returncode == warm.returncode == uncached.returncode == 1
    assert cold.stdout == warm.stdout == uncached.stdout
    assert "train.py" in warm.stdout and "broken.py" in warm.stdout

    (project / "train.py").write_text(
        TRAIN.replace("batch_size=8)", "batch_size=8, num_workers=2)")
    )
    (project / "broken.py").write_text(CLEAN)
    edited = run(*args, cwd=project)
    assert edited.stdout == run(*args, "--no-cache", cwd=project).stdout
    assert edited.stdout != warm.stdout and "broken.py" not in edited.stdout


def test_cache_directory_is_tagged_and_ignored_by_git(project: Path) -> None:
    run("check", ".", cwd=project)
    directory = project / ".accel_lint_cache"
    assert (directory / "CACHEDIR.TAG").read_text() == CACHEDIR_TAG
    assert CACHEDIR_TAG.startswith("Signature: 8a477f597d28d172789f06886806bc55\n")
    assert (directory / ".gitignore").read_text().splitlines()[-1] == "*"
    (entry,) = directory.glob("*.json")
    stored = json.loads(entry.read_text())["entries"]
    assert sorted(stored) == sorted(str(project / f) for f in files(project))
    subprocess.run(["git", "init", "-q"], cwd=project, check=True)
    status = subprocess.run(
        ["git", "status", "--porcelain", "--untracked-files=all"],
        cwd=project,
        capture_output=True,
        text=True,
        check=True,
    )
    assert ".accel_lint_cache" not in status.stdout


def test_no_cache_neither_reads_nor_writes(project: Path) -> None:
    run("check", "--no-cache", ".", cwd=project)
    assert not (project / ".accel_lint_cache").exists()
    # poison the entry of clean.py: a cached run reports the planted finding, --no-cache does not
    run("check", ".", cwd=project)
    (entry,) = (project / ".accel_lint_cache").glob("*.json")
    data = json.loads(entry.read_text())
    planted = ["ACL101", "dataloader-sync-loading", "planted", 3, 1, 3, 2, False]
    planted += [None, None, None, None, None]  # safety, fix message, fix, cell, no-fix reason
    data["entries"][str(project / "clean.py")][4] = [planted]
    entry.write_text(json.dumps(data))
    cached = run("check", "--output-format", "concise", "clean.py", cwd=project)
    assert cached.stdout.splitlines()[0] == "clean.py:3:1: ACL101 planted"
    bypass = run("check", "--no-cache", "--output-format", "concise", "clean.py", cwd=project)
    assert (bypass.returncode, bypass.stdout) == (0, "All checks passed!\n")
    assert json.loads(entry.read_text()) == data  # --no-cache did not write either


GARBAGE = [b"", b"{not json", b"[1, 2, 3]", b'{"format": 1, "entries": {"x": 1}}', b"\xff\xfe\x00"]


@pytest.mark.parametrize("garbage", GARBAGE)
def test_a_corrupt_cache_is_ignored_and_replaced(
    project: Path, monkeypatch: pytest.MonkeyPatch, garbage: bytes
) -> None:
    monkeypatch.setattr(cache_module, "tool_fingerprint", lambda: "this build")
    counter = LintCounter(monkeypatch)
    s = settings(project)
    first = lint_paths(files(project), s, jobs=1)
    cache = ResultCache.open(s)
    cache.path.write_bytes(garbage)
    counter.take()
    assert lint_paths(files(project), s, jobs=1) == first
    assert counter.take() == sorted(files(project))
    assert json.loads(cache.path.read_text())["format"] == cache_module.FORMAT
    assert lint_paths(files(project), s, jobs=1) == first
    assert counter.take() == []


def test_a_corrupt_cache_is_silent_on_the_command_line(project: Path) -> None:
    first = run("check", "--output-format", "json", ".", cwd=project)
    for entry in (project / ".accel_lint_cache").glob("*.json"):
        entry.write_bytes(b"{not json")
    again = run("check", "--output-format", "json", ".", cwd=project)
    assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, "")


def test_a_cache_that_cannot_be_written_is_not_an_error(project: Path) -> None:
    (project / "not-a-dir").write_text("")
    env_dir = str(project / "not-a-dir" / "cache")
    result = subprocess.run(
        [sys.executable, "-m", "accel_lint", "check", "--output-format", "concise", "clean.py"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, cache_module.CACHE_DIR_ENV: env_dir},
    )
    assert (result.returncode, result.stdout, result.stderr) == (0, "All checks passed!\n", "")


# -- in process: what is linted again ----------------------------------------------------


def test_a_warm_run_lints_nothing_and_an_edit_relints_one_file(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = LintCounter(monkeypatch)
    s = settings(project)
    cold = lint_paths(files(project), s, jobs=1)
    assert counter.take() == sorted(files(project))
    warm = lint_paths(files(project), s, jobs=1)
    assert counter.take() == []
    assert warm == cold
    (project / "pkg" / "loader.py").write_text(CLEAN)
    edited = lint_paths(files(project), s, jobs=1)
    assert counter.take() == ["pkg/loader.py"]
    assert edited[3].diagnostics == []
    assert edited[:3] == cold[:3]


def test_results_of_other_settings_or_another_build_are_not_reused(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = LintCounter(monkeypatch)
    lint_paths(files(project), settings(project), jobs=1)
    counter.take()
    only_102 = lint_paths(files(project), settings(project, "ACL102"), jobs=1)
    assert counter.take() == sorted(files(project))
    assert {d.code for r in only_102 for d in r.diagnostics} == {"ACL102", "ACL000"}

    ignoring = replace(settings(project), per_file_ignores=(("pkg/*", frozenset({"ACL101"})),))
    lint_paths(files(project), ignoring, jobs=1)
    assert counter.take() == sorted(files(project))

    monkeypatch.setattr(cache_module, "tool_fingerprint", lambda: "another accel-lint build")
    lint_paths(files(project), settings(project), jobs=1)
    assert counter.take() == sorted(files(project))


def test_per_file_codes_are_part_of_an_entry(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Per-file-ignores match relative to the project root: the same settings
    can enable other codes for the same file, and the entry must not be reused."""
    counter = LintCounter(monkeypatch)
    s = replace(settings(project), per_file_ignores=(("pkg/*", frozenset({"ACL101"})),))
    here = lint_paths(["pkg/loader.py"], s, jobs=1)
    assert [d.code for d in here[0].diagnostics] == ["ACL102"]
    moved = replace(s, root=project / "pkg")  # now "pkg/*" matches nothing
    there = lint_paths(["pkg/loader.py"], moved, jobs=1)
    assert counter.take() == ["pkg/loader.py", "pkg/loader.py"]
    assert [d.code for d in there[0].diagnostics] == ["ACL101", "ACL102"]


def test_edits_are_cached_for_the_formats_that_need_them(
    project: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    counter = LintCounter(monkeypatch)
    s = settings(project)
    plain = lint_paths(["train.py"], s, jobs=1)
    with_edits = lint_paths(["train.py"], s, jobs=1, with_edits=True)
    assert counter.take() == ["train.py", "train.py"]  # the plain entry has no edits
    assert plain[0].diagnostics[0].fix is None
    assert with_edits[0].diagnostics[0].fix is not None
    assert lint_paths(["train.py"], s, jobs=1, with_edits=True) == with_edits
    assert lint_paths(["train.py"], s, jobs=1) == plain  # an entry with edits serves both
    assert counter.take() == []
    uncached = lint_paths(["train.py"], s, jobs=1, with_edits=True, use_cache=False)
    assert uncached == with_edits


def test_internal_errors_are_not_cached(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def broken_analyze(*args: object, **kwargs: object) -> None:
        raise RuntimeError("a rule's bug")

    monkeypatch.setattr(accel_lint.engine, "analyze", broken_analyze)
    s = settings(project)
    (report,) = lint_paths(["train.py"], s, jobs=1)
    assert report.internal_error is not None and "a rule's bug" in report.internal_error
    monkeypatch.undo()
    monkeypatch.chdir(project)
    (report,) = lint_paths(["train.py"], s, jobs=1)
    assert report.internal_error is None
    assert [d.code for d in report.diagnostics] == ["ACL101", "ACL102"]


def test_unreadable_files_are_reported_not_cached(project: Path) -> None:
    s = settings(project)
    (report,) = lint_paths(["missing.py"], s, jobs=1)
    assert [d.message for d in report.diagnostics] == [
        "cannot read file: no such file or directory"
    ]
    (project / "missing.py").write_text(CLEAN)
    (report,) = lint_paths(["missing.py"], s, jobs=1)
    assert report.diagnostics == []


# -- the cache file ----------------------------------------------------------------------


def test_cache_location(project: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert cache_dir(settings(project)) == project / ".accel_lint_cache"
    (project / "sub").mkdir()
    (project / "sub" / "pyproject.toml").write_text("[tool.accel-lint]\n")
    configured = load_settings(search_from=project / "sub")
    assert cache_dir(configured) == project / "sub" / ".accel_lint_cache"
    monkeypatch.setenv(cache_module.CACHE_DIR_ENV, str(project / "elsewhere"))
    assert cache_dir(configured) == project / "elsewhere"


def test_concurrent_runs_merge_their_entries(project: Path) -> None:
    s = settings(project)
    first, second = ResultCache.open(s), ResultCache.open(s)
    first.put("train.py", content_hash(b"a"), s.enabled, [], with_edits=False)
    second.put("clean.py", content_hash(b"b"), s.enabled, [], with_edits=False)
    first.save()
    second.save()
    reread = ResultCache.open(s)
    assert reread.get("train.py", content_hash(b"a"), s.enabled, with_edits=False) == []
    assert reread.get("clean.py", content_hash(b"b"), s.enabled, with_edits=False) == []
    assert reread.get("clean.py", content_hash(b"c"), s.enabled, with_edits=False) is None


def test_entries_unseen_for_a_month_are_dropped(project: Path) -> None:
    s = settings(project)
    cache = ResultCache.open(s)
    cache.put("train.py", content_hash(b"a"), s.enabled, [], with_edits=False)
    cache.put("clean.py", content_hash(b"b"), s.enabled, [], with_edits=False)
    cache.save()
    data = json.loads(cache.path.read_text())
    data["entries"][str(project / "train.py")][3] -= MAX_AGE_DAYS + 1
    cache.path.write_text(json.dumps(data))
    later = ResultCache.open(s)
    later.put("broken.py", content_hash(b"c"), s.enabled, [], with_edits=False)
    later.save()
    kept = json.loads(later.path.read_text())["entries"]
    assert sorted(kept) == [str(project / "broken.py"), str(project / "clean.py")]


def _row_as_text(diags: Any) -> Any:
    return [[*d[:3], "row", *d[4:]] for d in diags]


def _code_as_number(diags: Any) -> Any:
    return [[1, *d[1:]] for d in diags]


WRONG_TYPES = [_row_as_text, _code_as_number, lambda _: None, lambda _: "diagnostics"]


@pytest.mark.parametrize("wrong", WRONG_TYPES)
def test_an_entry_of_valid_json_with_wrong_types_is_a_miss_not_a_crash(
    project: Path, wrong: Callable[[Any], Any]
) -> None:
    first = run("check", "--output-format", "json", ".", cwd=project)
    [entry_file] = (project / ".accel_lint_cache").glob("*.json")
    data = json.loads(entry_file.read_text())
    for entry in data["entries"].values():
        if entry[4]:
            entry[4] = wrong(entry[4])
    entry_file.write_text(json.dumps(data))
    for _ in range(2):  # the bad entry is replaced: later runs are fine too
        again = run("check", "--output-format", "json", ".", cwd=project)
        assert (again.returncode, again.stdout, again.stderr) == (1, first.stdout, "")
