"""Discovery, settings and output: .gitignore, --extend-exclude, `extend`,
--show-files, --show-settings, the "No Python files found" warning, --color and
NO_COLOR, piped `rules`, `clean`, `-V`."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from accel_lint import __version__
from accel_lint.gitignore import GitIgnore, parse
from tests.support import cli

LOADER = "from torch.utils.data import DataLoader\nloader = DataLoader(range(8))\n"


def _files(ran_stdout: str, root: Path) -> list[str]:
    return [os.path.relpath(line, root) for line in ran_stdout.splitlines()]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    (tmp_path / ".git" / "info" / "exclude").write_text("local_*.py\n")
    (tmp_path / ".gitignore").write_text(
        "# generated\n/build_out/\n*.gen.py\nnotebooks/scratch*\n!keep.gen.py\ndata/**/raw/\n"
    )
    for name in (
        "train.py",
        "local_try.py",
        "model.gen.py",
        "keep.gen.py",
        "build_out/x.py",
        "sub/build_out/y.py",
        "notebooks/scratch1.ipynb",
        "notebooks/real.ipynb",
        "data/a/b/raw/z.py",
        "data/a/keep.py",
        "sub/.gitignore",
        "sub/ignored_here.py",
    ):
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(LOADER if name.endswith(".py") else "{}")
    (tmp_path / "sub" / ".gitignore").write_text("ignored_here.py\n")
    return tmp_path


def test_gitignore_is_respected(repo: Path) -> None:
    ran = cli("check", "--show-files", ".", cwd=repo)
    assert ran.returncode == 0
    assert _files(ran.stdout, repo) == [
        "data/a/keep.py",
        "keep.gen.py",
        "notebooks/real.ipynb",
        "sub/build_out/y.py",
        "train.py",
    ]
    ran = cli("check", "--show-files", "--no-respect-gitignore", ".", cwd=repo)
    assert len(ran.stdout.splitlines()) == 11


def test_gitignore_needs_a_repository(repo: Path) -> None:
    (repo / ".git" / "info" / "exclude").unlink()
    (repo / ".git" / "info").rmdir()
    (repo / ".git").rmdir()
    ran = cli("check", "--show-files", ".", cwd=repo)
    assert len(ran.stdout.splitlines()) == 11


def test_named_file_is_linted_unless_force_exclude(repo: Path) -> None:
    ran = cli("check", "--show-files", "build_out/x.py", cwd=repo)
    assert _files(ran.stdout, repo) == ["build_out/x.py"]
    ran = cli("check", "--show-files", "--force-exclude", "build_out/x.py", "train.py", cwd=repo)
    assert _files(ran.stdout, repo) == ["train.py"]


def test_gitignore_patterns() -> None:
    patterns = parse(["a/**/b", "\\#hash", "foo/", "*.log", "!important.log", "trail\\ "])

    def match(path: str, is_dir: bool = False) -> bool:
        verdict = GitIgnore._match(patterns, path, is_dir)
        return bool(verdict)

    assert match("a/b") and match("a/x/y/b") and not match("xa/b")
    assert match("#hash") and match("foo", True) and not match("foo")
    assert match("x/y.log") and not match("important.log") and match("trail ")


def test_extend_exclude(repo: Path) -> None:
    ran = cli("check", "--show-files", "--extend-exclude", "data,*.ipynb", ".", cwd=repo)
    assert _files(ran.stdout, repo) == ["keep.gen.py", "sub/build_out/y.py", "train.py"]


def test_extend_inherits_another_file(tmp_path: Path) -> None:
    (tmp_path / "base.toml").write_text(
        'select = ["ACL1"]\nexclude = ["legacy"]\n\n[rules.ACL101]\nmax-workers = 4\n'
    )
    project = tmp_path / "project"
    (project / "legacy").mkdir(parents=True)
    (project / "legacy" / "old.py").write_text(LOADER)
    (project / "train.py").write_text(LOADER)
    (project / "pyproject.toml").write_text(
        '[tool.accel-lint]\nextend = "../base.toml"\nignore = ["ACL102"]\n'
    )
    ran = cli("check", "--show-settings", ".", cwd=project)
    assert ran.returncode == 0, ran.stderr
    out = ran.stdout
    assert f"Configuration file: {project / 'pyproject.toml'}" in out
    assert f"Extends: {tmp_path / 'base.toml'}" in out
    assert "Enabled rules: ACL101, ACL103, ACL104, ACL105, ACL106\n" in out  # ACL1 but ACL102
    assert "Rule option: ACL101.max-workers = 4" in out
    assert "train.py: every enabled rule" in out and "old.py" not in out
    (tmp_path / "base.toml").write_text('extend = "project/pyproject.toml"\n')
    ran = cli("check", ".", cwd=project)
    assert ran.returncode == 2 and "makes a cycle" in ran.stderr


def test_show_settings_per_file(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.accel-lint.per-file-ignores]\n"tests/*.py" = ["ACL101"]\n'
    )
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "t.py").write_text(LOADER)
    ran = cli("check", "--show-settings", ".", cwd=tmp_path)
    line = next(x for x in ran.stdout.splitlines() if x.startswith("tests/t.py: "))
    assert "ACL101" not in line and "ACL102" in line


def test_no_python_files_found(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    ran = cli("check", "empty", cwd=tmp_path)
    assert ran.returncode == 0
    assert "accel-lint: warning: No Python files found under empty" in ran.stderr
    ran = cli("fix", "empty", cwd=tmp_path)
    assert ran.returncode == 0 and "No Python files found" in ran.stderr


def test_color_option_and_no_color(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LOADER)
    plain = cli("check", "--output-format", "concise", "a.py", cwd=tmp_path)
    assert "\x1b[" not in plain.stdout
    forced = cli("check", "--output-format", "concise", "--color", "always", "a.py", cwd=tmp_path)
    assert "\x1b[1;31mACL101\x1b[0m" in forced.stdout
    env = {"NO_COLOR": None, "FORCE_COLOR": "1"}
    assert "\x1b[" in cli("check", "a.py", cwd=tmp_path, env=env).stdout
    never = cli("check", "--color", "never", "a.py", cwd=tmp_path, env=env)
    assert "\x1b[" not in never.stdout


def test_piped_rules_are_not_cut(tmp_path: Path) -> None:
    ran = cli("rules", cwd=tmp_path, env={"COLUMNS": "40"})
    lines = ran.stdout.splitlines()
    assert lines[0].split() == ["code", "name", "fix", "verifier", "default", "what", "it", "finds"]
    acl101 = next(line for line in lines if line.startswith("ACL101"))
    assert acl101.endswith("DataLoader without worker processes (num_workers absent or 0)")


def test_clean_and_version(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LOADER)
    env = {"ACCEL_LINT_CACHE_DIR": None}
    cli("check", "a.py", cwd=tmp_path, env=env)
    assert (tmp_path / ".accel_lint_cache").is_dir()
    ran = cli("clean", cwd=tmp_path, env=env)
    assert ran.returncode == 0 and not (tmp_path / ".accel_lint_cache").exists()
    assert "No cache" in cli("clean", cwd=tmp_path, env=env).stderr
    assert cli("-V", cwd=tmp_path).stdout == f"accel-lint, version {__version__}\n"


def test_target_torch_must_be_a_string(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(LOADER)
    (tmp_path / "pyproject.toml").write_text("[tool.accel-lint]\ntarget-torch = 1.10\n")
    ran = cli("check", "a.py", cwd=tmp_path)
    assert ran.returncode == 2
    assert '`target-torch` must be a string such as "2.1", not 1.1' in ran.stderr
