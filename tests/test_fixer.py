"""Fixes never lose user data: bytes, encoding, BOM, line endings and mode are kept;
unchanged files are not touched; writes are atomic; results parse and converge."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import libcst as cst
import pytest

from accel_lint.fixer import fix_source
from accel_lint.rewrite import add_imports
from accel_lint.source import Source, decode
from accel_lint.writeback import write_fixed
from tests.support import fix, settings_for

SCRIPT = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "# the training data\n"
    "loader = DataLoader(torch.arange(8), batch_size=2)  # keep this comment\n"
    "model = torch.nn.Linear(1, 1).cuda()\n"
)
FIXED = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    "\n"
    "# the training data\n"
    "loader = DataLoader(torch.arange(8), batch_size=2, pin_memory=True)  # keep this comment\n"
    "model = torch.nn.Linear(1, 1).cuda()\n"
)


def _fix_cli(path: Path, *flags: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "accel_lint",
            "fix",
            "--apply",
            "--select",
            "ACL102",
            *flags,
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_fix_keeps_comments_and_layout() -> None:
    assert fix(SCRIPT, settings_for(("ACL102",))) == FIXED


@pytest.mark.parametrize(
    ("prefix", "newline"),
    [(b"", "\n"), (b"\xef\xbb\xbf", "\n"), (b"", "\r\n"), (b"\xef\xbb\xbf", "\r\n")],
    ids=["lf", "bom-lf", "crlf", "bom-crlf"],
)
def test_bytes_encoding_bom_and_line_endings_are_kept(
    tmp_path: Path, prefix: bytes, newline: str
) -> None:
    path = tmp_path / "train.py"
    path.write_bytes(prefix + SCRIPT.replace("\n", newline).encode())
    path.chmod(0o751)
    assert _fix_cli(path).returncode == 0
    assert path.read_bytes() == prefix + FIXED.replace("\n", newline).encode()
    assert stat.S_IMODE(path.stat().st_mode) == 0o751
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]  # no temporary left


def test_declared_encoding_is_kept(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    text = "# -*- coding: latin-1 -*-\n# données\n" + SCRIPT
    path.write_bytes(text.encode("latin-1"))
    assert _fix_cli(path).returncode == 0
    expected = "# -*- coding: latin-1 -*-\n# données\n" + FIXED
    assert path.read_bytes() == expected.encode("latin-1")


def test_file_without_applicable_fix_is_not_touched(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT.replace("batch_size=2)", "batch_size=2, pin_memory=True)"))
    os.utime(path, ns=(1_000_000_000, 1_000_000_000))
    before = path.read_bytes()
    assert _fix_cli(path).returncode == 0
    assert path.read_bytes() == before
    assert path.stat().st_mtime_ns == 1_000_000_000


def test_unsafe_fixes_need_the_flag(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    path.write_text(SCRIPT)
    subprocess.run(
        [sys.executable, "-m", "accel_lint", "fix", "--apply", "--select", "ACL101", str(path)],
        capture_output=True,
        timeout=60,
    )
    assert path.read_text() == SCRIPT


def test_file_with_syntax_error_gets_no_fix(tmp_path: Path) -> None:
    path = tmp_path / "train.py"
    broken = SCRIPT + "def oops(:\n"
    path.write_text(broken)
    result = _fix_cli(path)
    assert result.returncode == 1
    assert path.read_text() == broken
    assert "ACL000" in result.stderr


def test_atomic_write_leaves_the_original_when_the_rename_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "train.py"
    path.write_text("original\n")

    def boom(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        write_fixed(path, b"original\n", b"new\n")
    assert path.read_text() == "original\n"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["train.py"]


def test_a_fix_that_breaks_the_code_is_dropped(monkeypatch: pytest.MonkeyPatch) -> None:
    """The loop re-parses; a result that does not parse leaves the text as it was."""
    import accel_lint.fixer as fixer

    monkeypatch.setattr(fixer, "apply_fixes_once", lambda module, fixes: "def broken(:\n")
    settings = settings_for(("ACL102",))
    outcome = fix_source("t.py", Source(SCRIPT, "utf-8"), settings, settings.enabled, unsafe=False)
    assert outcome.fixed_text == SCRIPT
    assert outcome.error is not None and "does not parse" in outcome.error


def test_non_converging_fixes_are_reported_and_reverted(monkeypatch: pytest.MonkeyPatch) -> None:
    import accel_lint.fixer as fixer

    counter = iter(range(1000))
    monkeypatch.setattr(
        fixer, "apply_fixes_once", lambda module, fixes: module.code + f"# pass {next(counter)}\n"
    )
    settings = settings_for(("ACL102",))
    outcome = fix_source("t.py", Source(SCRIPT, "utf-8"), settings, settings.enabled, unsafe=False)
    assert outcome.fixed_text == SCRIPT
    assert outcome.error is not None and "did not converge" in outcome.error


@pytest.mark.parametrize(
    ("source", "imports", "expected"),
    [
        ("import torch\n\nx = 1\n", ["import os"], "import os\n\nimport torch\n\nx = 1\n"),
        (
            "import argparse\nimport sys\n\nimport torch\n",
            ["import os"],
            "import argparse\nimport os\nimport sys\n\nimport torch\n",
        ),
        (
            '"""Doc."""\nimport torch\n',
            ["import torch.distributed as dist"],
            '"""Doc."""\nimport torch\nimport torch.distributed as dist\n',
        ),
        ("x = 1\n", ["import os"], "import os\n\nx = 1\n"),
        ("import os\nimport torch\n", ["import os"], "import os\nimport torch\n"),
        (
            "from __future__ import annotations\n\nimport torch\n",
            ["import os"],
            "from __future__ import annotations\n\nimport os\n\nimport torch\n",
        ),
        (
            "import torch\nfrom torch.utils.data import DataLoader\n\nx = 1\n",
            ["from torch.utils.data.distributed import DistributedSampler"],
            "import torch\nfrom torch.utils.data import DataLoader\n"
            "from torch.utils.data.distributed import DistributedSampler\n\nx = 1\n",
        ),
    ],
    ids=[
        "new-stdlib-group",
        "sorted-in-stdlib",
        "after-docstring",
        "no-imports",
        "present",
        "future",
        "same-package",
    ],
)
def test_imports_go_where_isort_would_put_them(
    source: str, imports: list[str], expected: str
) -> None:
    assert add_imports(cst.parse_module(source), imports).code == expected


def test_decode_reports_the_bad_byte() -> None:
    from accel_lint.source import DecodeError

    with pytest.raises(DecodeError, match=r"byte 0xff at offset 7"):
        decode(b"x = 1\n#\xff\n")
    assert decode(b"\xef\xbb\xbfx = 1\n").encoding == "utf-8-sig"


def test_a_rule_a_fix_brings_in_runs_in_the_same_fix(tmp_path: Path) -> None:
    # The DataParallel migration (ACL401) makes the script distributed; only then does
    # its `torch.load` need map_location (ACL412), whose trigger words were not in the
    # original file. One `fix` must apply both: a second run changes nothing.
    from tests.support import cli

    script = tmp_path / "train.py"
    script.write_text(MIGRATED_LOAD, encoding="utf-8")
    first = cli(
        "fix",
        "--apply",
        "--unsafe-fixes",
        "--select",
        "ALL",
        "--isolated",
        "train.py",
        cwd=tmp_path,
    )
    assert first.returncode in (0, 1), first.stderr
    fixed = script.read_text(encoding="utf-8")
    assert "DistributedDataParallel" in fixed
    assert 'torch.load("./checkpoint/ckpt.pth", map_location="cpu")' in fixed
    again = cli(
        "fix",
        "--apply",
        "--unsafe-fixes",
        "--select",
        "ALL",
        "--isolated",
        "train.py",
        cwd=tmp_path,
    )
    assert "Fixed" not in again.stdout + again.stderr
    assert script.read_text(encoding="utf-8") == fixed


def test_a_fix_limited_to_some_codes_brings_in_only_those() -> None:
    # verify fixes one rule at a time to find which fix broke a run: the rule the DDP
    # migration newly triggers (ACL412) joins only when its code is among those asked for
    settings = settings_for(("ALL",), unsafe=True)
    only = fix_source(
        "t.py", Source(MIGRATED_LOAD, "utf-8"), settings, frozenset({"ACL401"}), unsafe=True
    )
    assert {a.code for a in only.applied} == {"ACL401"}
    assert 'torch.load("./checkpoint/ckpt.pth")' in only.fixed_text
    both = fix_source(
        "t.py",
        Source(MIGRATED_LOAD, "utf-8"),
        settings,
        frozenset({"ACL401", "ACL412"}),
        unsafe=True,
    )
    assert {a.code for a in both.applied} == {"ACL401", "ACL412"}


MIGRATED_LOAD = """\
import argparse
import os

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, Dataset


class Shards(Dataset):
    def __init__(self, root):
        self.files = sorted(os.listdir(root))
        self.root = root

    def __len__(self):
        return len(self.files)

    def __getitem__(self, index):
        return torch.load(os.path.join(self.root, self.files[index]))


parser = argparse.ArgumentParser()
parser.add_argument("--resume", action="store_true")
args = parser.parse_args()

device = "cuda" if torch.cuda.is_available() else "cpu"
trainset = Shards("data")
trainloader = DataLoader(trainset, batch_size=128, shuffle=True, num_workers=2)
net = nn.Linear(8, 2).to(device)
if device == "cuda":
    net = torch.nn.DataParallel(net)
if args.resume:
    checkpoint = torch.load("./checkpoint/ckpt.pth")
    net.load_state_dict(checkpoint["net"])
optimizer = torch.optim.SGD(net.parameters(), lr=0.1)

for epoch in range(10):
    for inputs, targets in trainloader:
        inputs, targets = inputs.to(device), targets.to(device)
        optimizer.zero_grad()
        F.cross_entropy(net(inputs), targets).backward()
        optimizer.step()
    torch.save({"net": net.state_dict()}, "./checkpoint/ckpt.pth")
"""
