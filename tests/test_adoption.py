"""Adopting accel-lint on an existing codebase: `check --add-noqa`, ACL001
unused-noqa and its fix, the file-level `# accel-lint: noqa: CODES`, `check --fix`."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from tests.support import ROOT, cli, lint

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda")
loader = DataLoader(range(8), batch_size=2)  # noqa: E501
model = torch.nn.DataParallel(torch.nn.Linear(2, 2)).to(device)
text = \"\"\"a DataLoader(range(8))
\"\"\"
for batch in loader:
    pass
"""


def _codes(ran_stdout: str) -> list[tuple[int, str]]:
    return [(d["location"]["row"], d["code"]) for d in json.loads(ran_stdout)]


def test_add_noqa_then_check_passes_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    before = cli("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert _codes(before.stdout) == [
        (5, "ACL101"),
        (5, "ACL102"),
        (6, "ACL401"),
    ]
    ran = cli("check", "--add-noqa", "--no-cache", ".", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert ran.stderr == "Added `# noqa` to 2 lines in 1 file.\n"
    assert (tmp_path / "train.py").read_text() == TRAIN.replace(
        "# noqa: E501", "# noqa: E501, ACL101, ACL102"
    ).replace(".to(device)\n", ".to(device)  # noqa: ACL401\n")
    assert cli("check", "--no-cache", ".", cwd=tmp_path).returncode == 0
    again = cli("check", "--add-noqa", "--no-cache", ".", cwd=tmp_path)
    assert again.stderr == "Added `# noqa` to 0 lines in 0 files.\n"


def test_add_noqa_keeps_line_endings_and_skips_string_continuations(tmp_path: Path) -> None:
    text = (
        'from torch.utils.data import DataLoader\r\ns = """x\r\n""" + str(DataLoader(range(3)),\r\n'
        "    DataLoader(range(4)))\r\n"
    )
    (tmp_path / "a.py").write_bytes(text.encode())
    ran = cli("check", "--add-noqa", "--no-cache", "--select", "ACL101", "a.py", cwd=tmp_path)
    assert ran.returncode == 0
    assert (tmp_path / "a.py").read_bytes() == text.replace(
        "(range(3)),\r\n", "(range(3)),  # noqa: ACL101\r\n"
    ).replace("(range(4)))\r\n", "(range(4)))  # noqa: ACL101\r\n").encode()


def test_add_noqa_in_a_notebook(tmp_path: Path) -> None:
    shutil.copy(ROOT / "tests" / "data" / "notebooks" / "train.ipynb", tmp_path / "nb.ipynb")
    ran = cli("check", "--add-noqa", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert ran.stderr == "Added `# noqa` to 2 lines in 1 file.\n"
    doc = json.loads((tmp_path / "nb.ipynb").read_text())
    assert doc["cells"][3]["source"][1].endswith("shuffle=True)  # noqa: ACL101, ACL102")
    assert doc["cells"][5]["source"][2] == "scaler = torch.cuda.amp.GradScaler()  # noqa: ACL304\n"
    assert cli("check", "--no-cache", "nb.ipynb", cwd=tmp_path).returncode == 0


def test_unused_and_unknown_codes() -> None:
    text = (
        "from torch.utils.data import DataLoader\n"
        "a = DataLoader(range(8))  # noqa: ACL101\n"  # used
        "b = 1  # noqa: ACL101, E501\n"  # unused ACL101
        "c = 2  # noqa: ACL999\n"  # unknown
        "d = 3  # noqa\n"  # bare: left alone
        "e = 4  # noqa: E501\n"  # another tool's code
    )
    assert lint(text) == [(3, "ACL001"), (4, "ACL001")]


def test_codes_not_enabled_are_not_judged() -> None:
    from tests.support import settings_for

    text = "x = 1  # noqa: ACL101, ACL998\n"
    assert lint(text, settings_for(("ACL001",))) == [(1, "ACL001")]  # only ACL998 is judged


def test_unused_noqa_fix(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_text(
        "x = 1  # noqa: ACL101\n"
        "y = 2  # type: ignore  # noqa: ACL101, E501\n"
        "# noqa: ACL999\n"
        "z = 3\n"
    )
    # off by default (like ruff's RUF100): the default run leaves the comments alone
    ran = cli("check", "--fix", "--no-cache", "a.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "# noqa: ACL999" in (tmp_path / "a.py").read_text()
    ran = cli("check", "--fix", "--extend-select", "ACL001", "--no-cache", "a.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert "Fixed 3 findings in 1 file." in ran.stderr
    assert (tmp_path / "a.py").read_text() == "x = 1\ny = 2  # type: ignore  # noqa: E501\nz = 3\n"


def test_file_level_noqa(tmp_path: Path) -> None:
    body = (
        "import torch\nfrom torch.utils.data import DataLoader\n\nloader = DataLoader(range(8))\n"
    )
    torch_cuda = 'device = torch.device("cuda")\n'
    (tmp_path / "a.py").write_text("# accel-lint: noqa: ACL101, ACL102\n" + body + torch_cuda)
    (tmp_path / "b.py").write_text("# accel-lint: noqa: ACL102\n" + body + torch_cuda)
    ran = cli("check", "--no-cache", "--output-format", "json", ".", cwd=tmp_path)
    assert [(d["filename"], d["code"]) for d in json.loads(ran.stdout)] == [("b.py", "ACL101")]


def test_check_fix_is_fix_apply(tmp_path: Path) -> None:
    code = 'import torch\nfrom torch.utils.data import DataLoader\ndevice = torch.device("cuda")\n'
    (tmp_path / "a.py").write_text(code + "loader = DataLoader(range(8), num_workers=2)\n")
    ran = cli("check", "--fix", "--no-cache", "a.py", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "a.py").read_text().endswith("num_workers=2, pin_memory=True)\n")
    # a script whose loader is built under the guard: ACL101's fix is offered there
    guarded = 'if __name__ == "__main__":\n    loader = DataLoader(range(8))\n'
    (tmp_path / "b.py").write_text(code + guarded)
    ran = cli("check", "--fix", "--no-cache", "b.py", cwd=tmp_path)
    assert ran.returncode == 1  # ACL101's fix is unsafe: it remains
    ran = cli("check", "--fix", "--unsafe-fixes", "--no-cache", "b.py", cwd=tmp_path)
    assert ran.returncode == 0
    assert "num_workers=" in (tmp_path / "b.py").read_text()


def test_add_noqa_refuses_combinations(tmp_path: Path) -> None:
    ran = cli("check", "--add-noqa", "--fix", ".", cwd=tmp_path)
    assert ran.returncode == 2
