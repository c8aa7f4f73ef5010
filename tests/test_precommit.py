"""The pre-commit hooks, installed by the real `pre-commit` tool from a git
repository holding this checkout's current files, with the configurations
that docs/ci.md shows. pre-commit builds the hook's own virtualenv and installs
accel-lint into it from that repository (libcst, click and rich from PyPI), so
the first test takes a minute; the environment is shared by the tests here."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.test_ci_formats import TRAIN as CI_TRAIN
from tests.test_ci_formats import doc_yaml_blocks

ROOT = Path(__file__).resolve().parents[1]
PROJECT_URL = "https://github.com/accel-lint/accel-lint"
# what `pip install` of the hook repository needs
PACKAGE_FILES = ("pyproject.toml", "README.md", ".pre-commit-hooks.yaml", "accel_lint", "rules")

# one finding, ACL102, whose fix is safe: `accel-lint fix --apply` removes it
TRAIN = CI_TRAIN.replace("batch_size=8)", "batch_size=8, num_workers=2)")
TRAIN_FIXED = TRAIN.replace(
    "loader = DataLoader(data, batch_size=8, num_workers=2)",
    "loader = DataLoader(\n"
    "    data, batch_size=8, num_workers=2, pin_memory=torch.cuda.is_available()\n"
    ")",
)


def _notebook(code: str) -> str:
    """`code` as a notebook of two code cells (split at its first blank line) after
    a markdown cell, in Jupyter's layout."""
    import json

    first, _, second = code.partition("\n\n")
    cells: list[dict[str, Any]] = [
        {"cell_type": "markdown", "id": "m1", "metadata": {}, "source": ["# Training"]}
    ]
    for number, text in enumerate((first, second), start=1):
        cells.append(
            {
                "cell_type": "code",
                "execution_count": number,
                "id": f"c{number}",
                "metadata": {},
                "outputs": [],
                "source": text.rstrip("\n").splitlines(keepends=True),
            }
        )
    doc = {"cells": cells, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}
    return json.dumps(doc, indent=1, sort_keys=True) + "\n"


NOTEBOOK, NOTEBOOK_FIXED = _notebook(TRAIN), _notebook(TRAIN_FIXED)

pytestmark = pytest.mark.skipif(shutil.which("git") is None, reason="needs git")


def _env(home: Path) -> dict[str, str]:
    # no outer git state (GIT_DIR, GIT_INDEX_FILE when run from a hook) and no user config
    env = {k: v for k, v in os.environ.items() if not k.startswith(("GIT_", "PRE_COMMIT"))}
    (home / "gitconfig").touch()
    return {
        **env,
        "GIT_CONFIG_GLOBAL": str(home / "gitconfig"),
        "GIT_CONFIG_NOSYSTEM": "1",
        "PRE_COMMIT_HOME": str(home / "pre-commit"),
        "PRE_COMMIT_COLOR": "never",
        "NO_COLOR": "1",
    }


def _git(*args: str, cwd: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=60, check=True
    )


def _init_repo(path: Path, env: dict[str, str]) -> None:
    _git("init", "-q", "-b", "main", cwd=path, env=env)
    for key, value in (
        ("user.name", "accel-lint tests"),
        ("user.email", "tests@accel-lint.invalid"),
        ("commit.gpgsign", "false"),
    ):
        _git("config", key, value, cwd=path, env=env)


@pytest.fixture(scope="module")
def home(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("home")


@pytest.fixture(scope="module")
def hook_repo(home: Path) -> tuple[Path, str]:
    """This checkout's working tree (not its HEAD: uncommitted work is what is
    tested) committed into a fresh repository; returns its path and commit."""
    env = _env(home)
    repo = home / "accel-lint-repo"
    repo.mkdir()
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "_pages")
    for name in PACKAGE_FILES:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, repo / name, ignore=ignore)
        else:
            shutil.copy2(source, repo / name)
    _init_repo(repo, env)
    _git("add", "-A", cwd=repo, env=env)
    _git("commit", "-q", "-m", "accel-lint under test", cwd=repo, env=env)
    sha = _git("rev-parse", "HEAD", cwd=repo, env=env).stdout.strip()
    return repo, sha


def precommit_configs() -> list[dict[str, Any]]:
    """The `.pre-commit-config.yaml` snippets of docs/ci.md, in order."""
    configs = []
    for block in doc_yaml_blocks():
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "repos" in data:
            configs.append(data)
    return configs


def _user_repo(tmp_path: Path, home: Path, config: dict[str, Any], hook: tuple[Path, str]) -> Path:
    env = _env(home)
    user = tmp_path / "user"
    user.mkdir()
    _init_repo(user, env)
    (repo_entry,) = config["repos"]
    # `rev: main` until `pre-commit autoupdate` pins it (the test below); here the sha
    assert repo_entry["repo"] == PROJECT_URL and repo_entry["rev"] == "main"
    local = {**config, "repos": [{**repo_entry, "repo": str(hook[0]), "rev": hook[1]}]}
    (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local, sort_keys=False))
    subprocess.run(
        [sys.executable, "-m", "pre_commit", "install"],
        cwd=user,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    (user / "train.py").write_text(TRAIN)
    (user / "train.ipynb").write_text(NOTEBOOK)
    _git("add", "train.py", "train.ipynb", ".pre-commit-config.yaml", cwd=user, env=env)
    return user


def _commit(user: Path, home: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["git", "commit", "-m", "add training script"],
        cwd=user,
        env=_env(home),
        capture_output=True,
        text=True,
        timeout=900,  # the first commit builds the hook's environment
    )


def _commits(user: Path, home: Path) -> int:
    result = subprocess.run(
        ["git", "rev-list", "--count", "HEAD"], cwd=user, env=_env(home), capture_output=True
    )
    return int(result.stdout) if result.returncode == 0 else 0


def test_hooks_manifest_is_valid_for_pre_commit() -> None:
    from pre_commit.clientlib import load_manifest

    hooks = {hook["id"]: hook for hook in load_manifest(ROOT / ".pre-commit-hooks.yaml")}
    assert sorted(hooks) == ["accel-lint", "accel-lint-fix"]
    assert hooks["accel-lint"]["entry"] == "accel-lint check --force-exclude"
    assert hooks["accel-lint-fix"]["entry"] == "accel-lint fix --apply --force-exclude"
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types_or"] == ["python", "jupyter"]
        assert hook["pass_filenames"] and hook["require_serial"]


def test_check_hook_blocks_the_commit_until_fixed(
    tmp_path: Path, home: Path, hook_repo: tuple[Path, str]
) -> None:
    config = precommit_configs()[0]
    assert [h["id"] for h in config["repos"][0]["hooks"]] == ["accel-lint"]
    user = _user_repo(tmp_path, home, config, hook_repo)

    blocked = _commit(user, home)
    output = blocked.stdout + blocked.stderr
    assert blocked.returncode == 1, output
    assert _commits(user, home) == 0
    lines = output.splitlines()
    assert any(line.startswith("accel-lint.") and line.endswith("Failed") for line in lines)
    assert (
        "ACL102 [*] DataLoader returns pageable memory, so every host-to-GPU copy is synchronous "
        "and staged: `pin_memory` is not set" in lines
    )
    assert "  --> train.py:6:10" in lines
    assert "  --> train.ipynb:cell 3:3:10" in lines

    fixed = subprocess.run(
        [sys.executable, "-m", "accel_lint", "fix", "--apply", "train.py", "train.ipynb"],
        cwd=user,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert fixed.returncode == 0, fixed.stderr
    assert (user / "train.py").read_text() == TRAIN_FIXED
    assert (user / "train.ipynb").read_text() == NOTEBOOK_FIXED
    _git("add", "train.py", "train.ipynb", cwd=user, env=_env(home))
    passed = _commit(user, home)
    assert passed.returncode == 0, passed.stdout + passed.stderr
    assert any(
        line.startswith("accel-lint.") and line.endswith("Passed")
        for line in (passed.stdout + passed.stderr).splitlines()
    )
    assert _commits(user, home) == 1


def test_fix_hook_applies_safe_fixes_and_fails_the_commit_once(
    tmp_path: Path, home: Path, hook_repo: tuple[Path, str]
) -> None:
    config = precommit_configs()[1]
    # one hook, not both: the fix hook lists what remains, so each finding prints once
    assert [h["id"] for h in config["repos"][0]["hooks"]] == ["accel-lint-fix"]
    user = _user_repo(tmp_path, home, config, hook_repo)

    first = _commit(user, home)
    output = first.stdout + first.stderr
    assert first.returncode == 1, output
    assert "- files were modified by this hook" in output
    assert "Fixed 2 findings in 2 files." in output
    assert (user / "train.py").read_text() == TRAIN_FIXED
    assert (user / "train.ipynb").read_text() == NOTEBOOK_FIXED
    assert _commits(user, home) == 0

    _git("add", "train.py", "train.ipynb", cwd=user, env=_env(home))
    second = _commit(user, home)
    assert second.returncode == 0, second.stdout + second.stderr
    output = second.stdout + second.stderr  # git shows a hook's output on stderr
    statuses = [line for line in output.splitlines() if line.startswith("accel-lint")]
    assert len(statuses) == 1 and statuses[0].endswith("Passed")
    assert _commits(user, home) == 1


def test_autoupdate_pins_the_snippets_rev_to_a_commit(
    tmp_path: Path, home: Path, hook_repo: tuple[Path, str]
) -> None:
    """The documented `rev: main`, then `pre-commit autoupdate`, as docs/ci.md says: with
    no release tag in the hook repository, the rev becomes the commit `main` points at."""
    env = _env(home)
    assert _git("tag", cwd=hook_repo[0], env=env).stdout == ""  # no tag to pin
    user = tmp_path / "user"
    user.mkdir()
    _init_repo(user, env)
    for config in precommit_configs():
        (repo_entry,) = config["repos"]
        assert repo_entry["rev"] == "main"
        local = {**config, "repos": [{**repo_entry, "repo": str(hook_repo[0])}]}
        (user / ".pre-commit-config.yaml").write_text(yaml.safe_dump(local, sort_keys=False))
        ran = subprocess.run(
            [sys.executable, "-m", "pre_commit", "autoupdate"],
            cwd=user,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert ran.returncode == 0, ran.stdout + ran.stderr
        pinned = yaml.safe_load((user / ".pre-commit-config.yaml").read_text())
        assert pinned["repos"][0]["rev"] == hook_repo[1]
