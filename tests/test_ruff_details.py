"""The details a ruff user notices in the first hour: a closed pipe, `--isolated`,
ACL000 in a selection, `fix --diff`, "did you mean", where the target torch came from."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import ROOT, cli

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


def _into_a_closed_pipe(
    args: list[str], cwd: Path, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    """`accel-lint ARGS | true`, made certain: the reading process has already exited
    (waited for, not timed) when accel-lint starts, so its first write meets a pipe
    nobody reads - what `| head -1` does once it has its line."""
    read_end, write_end = os.pipe()
    reader = subprocess.Popen(["true"], stdin=read_end)
    reader.wait()
    os.close(read_end)
    try:
        return subprocess.run(
            [sys.executable, "-m", "accel_lint", *args],
            cwd=cwd,
            input=stdin,
            stdout=write_end,
            stderr=subprocess.PIPE,
            timeout=120,
            env={**os.environ, "NO_COLOR": "1"},
        )
    finally:
        os.close(write_end)


@pytest.mark.parametrize(
    "args",
    [
        ["rules"],
        ["rules", "--output-format", "json"],
        ["rule", "ACL101"],
        ["check", "."],
        ["check", "--output-format", "json", "."],
        ["check", "--output-format", "sarif", "."],
        ["check", "--statistics", "."],
        ["check", "--show-settings", "."],
        ["check", "--show-files", "."],
        ["check", "--diff", "."],
        ["fix", "."],
        ["fix", "--apply", "-", "--stdin-filename", "train.py"],
        ["-V"],
        ["--help"],
    ],
    ids=lambda a: " ".join(a),
)
def test_a_closed_pipe_ends_every_command_quietly(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    if args[0] in ("check", "fix"):
        args = [*args, "--no-cache"]
    ran = _into_a_closed_pipe(args, tmp_path, stdin=TRAIN.encode())
    assert b"Traceback" not in ran.stderr
    assert b"internal error" not in ran.stderr
    assert b"Exception ignored" not in ran.stderr
    assert ran.returncode == 0, ran.stderr.decode()


PYPROJECT_WITH_TORCH = """\
[project]
name = "trainer"
version = "0"
dependencies = ["torch>=2.1"]
"""


def test_isolated_reads_not_even_the_projects_torch_requirement(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(PYPROJECT_WITH_TORCH)
    (tmp_path / "train.py").write_text(TRAIN)
    plain = cli("check", "--show-settings", ".", cwd=tmp_path)
    assert f"Target torch: 2.1 (from the torch requirement in {tmp_path / 'pyproject.toml'})" in (
        plain.stdout
    )
    isolated = cli("check", "--isolated", "--show-settings", ".", cwd=tmp_path)
    assert "Configuration file: (none: defaults)" in isolated.stdout
    assert "Target torch: latest (from default: the latest torch)" in isolated.stdout


def test_show_settings_names_the_key_that_set_the_target_torch(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        PYPROJECT_WITH_TORCH + '\n[tool.accel-lint]\ntarget-torch = "1.13"\n'
    )
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli("check", "--show-settings", ".", cwd=tmp_path)
    assert f"Target torch: 1.13 (from `target-torch` in {tmp_path / 'pyproject.toml'})" in (
        ran.stdout
    )


def test_acl000_can_be_selected_and_ignored_but_stays_reported(tmp_path: Path) -> None:
    (tmp_path / "broken.py").write_text("def f(:\n")
    (tmp_path / "train.py").write_text(TRAIN)
    selected = cli("check", "--select", "ACL000", "--output-format", "concise", ".", cwd=tmp_path)
    assert selected.returncode == 1, selected.stderr
    assert [line.split()[1] for line in selected.stdout.splitlines() if ": ACL" in line] == [
        "ACL000"
    ]
    ignored = cli("check", "--ignore", "ACL000", "--output-format", "concise", ".", cwd=tmp_path)
    assert ignored.returncode == 1, ignored.stderr
    assert "broken.py:1:7: ACL000" in ignored.stdout
    assert "ACL000 (parse-error) cannot be turned off" in ignored.stderr
    (tmp_path / "pyproject.toml").write_text('[tool.accel-lint]\nextend-select = ["ACL000"]\n')
    configured = cli("check", "--output-format", "concise", ".", cwd=tmp_path)
    assert configured.returncode == 1, configured.stderr
    assert "unknown rule code" not in configured.stderr


def test_fix_diff_is_the_default_diff(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    plain = cli("fix", "--no-cache", "train.py", cwd=tmp_path)
    diff = cli("fix", "--diff", "--no-cache", "train.py", cwd=tmp_path)
    assert plain.returncode == diff.returncode == 1
    assert diff.stdout == plain.stdout and diff.stdout.startswith("--- a/train.py")
    assert (tmp_path / "train.py").read_text() == TRAIN
    both = cli("fix", "--diff", "--apply", "train.py", cwd=tmp_path)
    assert both.returncode == 2
    assert "cannot be combined with --apply" in both.stderr


def test_a_mistyped_command_gets_did_you_mean(tmp_path: Path) -> None:
    ran = cli("chek", ".", cwd=tmp_path)
    assert ran.returncode == 2
    assert "No such command 'chek'. Did you mean 'check'?" in ran.stderr
    far = cli("xyzzy", cwd=tmp_path)
    assert far.returncode == 2
    assert "No such command 'xyzzy'." in far.stderr and "Did you mean" not in far.stderr


def test_the_output_format_environment_variable_is_documented_and_works(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    ran = cli(
        "check", "--no-cache", "train.py", cwd=tmp_path, env={"ACCEL_LINT_OUTPUT_FORMAT": "json"}
    )
    assert ran.stdout.lstrip().startswith("[")
    assert "ACCEL_LINT_OUTPUT_FORMAT" in (ROOT / "README.md").read_text()


ZERO_GRAD = """\
import torch

model = torch.nn.Linear(2, 2)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    model(torch.ones(2)).sum().backward()
    opt.step()
"""


def _repository(root: Path) -> Path:
    """A repository whose root config selects ACL302 (torch latest: nothing to report)
    and a sub-project whose own pyproject.toml says it runs on torch 1.13."""
    (root / "pyproject.toml").write_text('[tool.accel-lint]\nselect = ["ACL302"]\n')
    sub = root / "legacy"
    sub.mkdir()
    (sub / "pyproject.toml").write_text(
        '[project]\nname = "legacy"\nversion = "0"\n\n'
        '[tool.accel-lint]\nselect = ["ACL302"]\ntarget-torch = "1.13"\n'
    )
    (root / "train.py").write_text(ZERO_GRAD)
    (sub / "train.py").write_text(ZERO_GRAD)
    return sub


def _codes(ran_stdout: str) -> list[str]:
    return [line.split(": ACL")[0] for line in ran_stdout.splitlines() if ": ACL" in line]


def test_each_file_gets_the_closest_configuration_above_it(tmp_path: Path) -> None:
    sub = _repository(tmp_path)
    concise = ("--no-cache", "--output-format", "concise")
    at_root = cli("check", *concise, ".", cwd=tmp_path)
    assert at_root.returncode == 1, at_root.stderr
    assert _codes(at_root.stdout) == ["legacy/train.py:6:5"]
    # the same from inside the sub-project, and for files named one by one (pre-commit)
    assert _codes(cli("check", *concise, ".", cwd=sub).stdout) == ["train.py:6:5"]
    named = cli("check", *concise, "train.py", "legacy/train.py", cwd=tmp_path)
    assert _codes(named.stdout) == ["legacy/train.py:6:5"]
    # fix follows the same settings: only the sub-project's file has a (unsafe) fix
    diff = cli("fix", "--unsafe-fixes", "--no-cache", ".", cwd=tmp_path)
    assert diff.returncode == 1
    assert "+++ b/legacy/train.py" in diff.stdout and "+++ b/train.py" not in diff.stdout
    shown = cli("check", "--show-settings", ".", cwd=tmp_path).stdout
    assert f"Configuration file: {tmp_path / 'pyproject.toml'}" in shown
    assert f"Configuration file: {sub / 'pyproject.toml'}" in shown
    assert f"Target torch: 1.13 (from `target-torch` in {sub / 'pyproject.toml'})" in shown


def test_config_and_isolated_override_the_hierarchy_for_every_file(tmp_path: Path) -> None:
    _repository(tmp_path)
    concise = ("--no-cache", "--output-format", "concise", "--select", "ACL302")
    isolated = cli("check", *concise, "--isolated", ".", cwd=tmp_path)
    assert isolated.returncode == 0 and _codes(isolated.stdout) == []
    one = cli("check", *concise, "--config", "legacy/pyproject.toml", ".", cwd=tmp_path)
    assert _codes(one.stdout) == ["legacy/train.py:6:5", "train.py:6:5"]


def test_a_bad_sub_configuration_is_a_clear_error(tmp_path: Path) -> None:
    sub = _repository(tmp_path)
    (sub / "pyproject.toml").write_text('[tool.accel-lint]\nselect = ["ACL999"]\n')
    ran = cli("check", "--no-cache", ".", cwd=tmp_path)
    assert ran.returncode == 2
    assert "unknown rule code or prefix 'ACL999'" in ran.stderr and "Traceback" not in ran.stderr


def _sub_project_with_exclusions(root: Path) -> Path:
    """`_repository`, its sub-project excluding its own `generated/` and `tools/*.py`
    (patterns relative to the sub-project), and the same names at the root."""
    sub = _repository(root)
    (sub / "pyproject.toml").write_text(
        '[project]\nname = "legacy"\nversion = "0"\n\n[tool.accel-lint]\nselect = ["ACL302"]\n'
        'target-torch = "1.13"\nexclude = ["generated/", "tools/*.py"]\n'
    )
    for directory in (sub / "generated", sub / "tools", root / "tools"):
        directory.mkdir()
    (sub / "generated" / "x.py").write_text(ZERO_GRAD)
    (sub / "tools" / "x.py").write_text(ZERO_GRAD)
    (root / "tools" / "x.py").write_text(ZERO_GRAD)
    return sub


def _shown(ran_stdout: str, root: Path) -> list[str]:
    """`--show-files` output (absolute paths), relative to `root`."""
    return [Path(line).relative_to(root).as_posix() for line in ran_stdout.split()]


def test_a_sub_project_excludes_its_own_files_when_the_root_is_checked(tmp_path: Path) -> None:
    _sub_project_with_exclusions(tmp_path)
    concise = ("--no-cache", "--output-format", "concise")
    shown = cli("check", "--show-files", ".", cwd=tmp_path)
    assert _shown(shown.stdout, tmp_path) == [
        "legacy/train.py",
        "tools/x.py",  # the sub-project's `tools/*.py` is its own tools/, not the root's
        "train.py",
    ], shown.stderr
    at_root = cli("check", *concise, ".", cwd=tmp_path)
    # legacy/train.py with the sub-project's target-torch 1.13; its generated/ unread
    assert at_root.returncode == 1 and _codes(at_root.stdout) == ["legacy/train.py:6:5"]
    fixed = cli("fix", "--unsafe-fixes", "--no-cache", ".", cwd=tmp_path)
    assert "+++ b/legacy/train.py" in fixed.stdout and "generated" not in fixed.stdout
    # --isolated and --config replace every configuration, its exclusions with it
    isolated = _shown(
        cli("check", "--show-files", "--isolated", ".", cwd=tmp_path).stdout, tmp_path
    )
    assert "legacy/generated/x.py" in isolated and "legacy/tools/x.py" in isolated
    one = cli("check", "--show-files", "--config", "pyproject.toml", ".", cwd=tmp_path)
    assert "legacy/generated/x.py" in _shown(one.stdout, tmp_path)


def test_a_named_file_a_sub_project_excludes_follows_force_exclude(tmp_path: Path) -> None:
    _sub_project_with_exclusions(tmp_path)
    concise = ("--no-cache", "--output-format", "concise")
    named = ("legacy/generated/x.py", "train.py")
    # named on the command line, an excluded file is linted (with its own settings)...
    linted = cli("check", *concise, *named, cwd=tmp_path)
    assert _codes(linted.stdout) == ["legacy/generated/x.py:6:5"], linted.stderr
    # ...unless --force-exclude (pre-commit), by the closest configuration above it,
    # whatever configuration the other named paths share
    forced = cli("check", *concise, "--force-exclude", *named, cwd=tmp_path)
    assert forced.returncode == 0 and _codes(forced.stdout) == [], forced.stderr
    hook = cli("check", "--show-files", "--force-exclude", *named, "legacy/train.py", cwd=tmp_path)
    assert _shown(hook.stdout, tmp_path) == ["legacy/train.py", "train.py"]
    alone = cli("check", "--show-files", "--force-exclude", "legacy/generated", cwd=tmp_path)
    assert alone.stdout.split() == []


def test_a_linked_folder_leading_out_of_the_project_gets_the_defaults(tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    _repository(repo)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "x.py").write_text(ZERO_GRAD)
    (repo / "link").symlink_to(outside, target_is_directory=True)
    concise = ("--no-cache", "--output-format", "concise", "--select", "ACL302")
    # link/x.py has no configuration above its real folder: the defaults (the latest
    # torch, no ACL302), where it used to end in a traceback
    for named, expected in (
        ((".", "link"), ["legacy/train.py:6:5"]),
        (("link/x.py", "train.py"), []),
    ):
        ran = cli("check", *concise, *named, cwd=repo)
        assert "Traceback" not in ran.stderr and ran.returncode == (1 if expected else 0)
        assert _codes(ran.stdout) == expected
    shown = cli("check", "--show-settings", ".", "link", cwd=repo).stdout
    assert f"Project root: {outside}" in shown and "link/x.py: every enabled rule" in shown


def test_a_sub_project_decides_whether_gitignore_applies_to_its_files(tmp_path: Path) -> None:
    sub = _repository(tmp_path)
    (tmp_path / ".git").mkdir()
    (tmp_path / ".gitignore").write_text("vendored/\n")
    with (sub / "pyproject.toml").open("a") as config:
        config.write("respect-gitignore = false\n")
    for directory in (tmp_path / "vendored", sub / "vendored"):
        directory.mkdir()
        (directory / "v.py").write_text(ZERO_GRAD)
    shown = cli("check", "--show-files", ".", cwd=tmp_path)
    assert _shown(shown.stdout, tmp_path) == [
        "legacy/train.py",
        "legacy/vendored/v.py",
        "train.py",
    ], shown.stderr
    # --respect-gitignore on the command line is every configuration's
    forced = cli("check", "--show-files", "--respect-gitignore", ".", cwd=tmp_path)
    assert _shown(forced.stdout, tmp_path) == ["legacy/train.py", "train.py"]
