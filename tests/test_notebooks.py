"""Notebooks: the code cells checked and fixed as one program, magics masked,
findings at `cell N:row:col`, fixes spliced into the notebook's own bytes.

tests/data/notebooks holds notebooks written the way Jupyter writes them
(nbformat 4.5: one-space indentation, sorted keys, cell ids, outputs with a
PNG image, execution counts, Colab metadata): `train.ipynb` (shell and line
magics, a `%%bash` cell, a DataLoader built in cell 4 and iterated in cell 6),
its exact fixed form `train.fixed.ipynb` (with or without unsafe fixes: in a
notebook ACL101 offers no fix, since workers may not load what the notebook defines),
`broken_cell.ipynb` (a cell that does not parse, with the error output Jupyter
saved) and `not_json.ipynb`.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.support import ROOT, cli

DATA = ROOT / "tests" / "data" / "notebooks"


def _copy(tmp_path: Path, *names: str) -> Path:
    for name in names:
        shutil.copy(DATA / name, tmp_path / name)
    return tmp_path


# ACL101's reason for giving no fix in a notebook: workers may not load what the
# notebook defines (a notebook has no `__main__` guard to speak of)
AT_IMPORT = (
    "(no fix: in a notebook, workers started with `spawn` or `forkserver` (macOS, Windows, "
    "Linux from Python 3.14) cannot load a dataset, transform or collate function that the "
    "notebook itself defines; set `num_workers` by hand once they come from an importable "
    "module)"
)


def _concise(tmp_path: Path, *args: str) -> list[str]:
    ran = cli("check", "--no-cache", "--output-format", "concise", *args, cwd=tmp_path)
    return [line for line in ran.stdout.splitlines() if ".ipynb:" in line]


def test_findings_across_cells_at_cell_and_row(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    assert _concise(tmp_path, "train.ipynb") == [
        "train.ipynb:cell 4:2:10: ACL101 DataLoader loads every batch in the training "
        f"process: `num_workers` is not set (default 0) {AT_IMPORT}",
        "train.ipynb:cell 4:2:10: ACL102 [*] DataLoader returns pageable memory, so every "
        "host-to-GPU copy is synchronous and staged: `pin_memory` is not set",
        "train.ipynb:cell 6:3:10: ACL304 [*] `torch.cuda.amp.GradScaler` is deprecated since "
        'torch 2.4 (it warns on every use): use `torch.amp.GradScaler` with device type "cuda"',
    ]


def test_full_format_shows_the_cells_own_lines(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    ran = cli("check", "--no-cache", "--select", "ACL304", "train.ipynb", cwd=tmp_path)
    assert ran.returncode == 1
    assert "  --> train.ipynb:cell 6:3:10" in ran.stdout
    assert "3 | scaler = torch.cuda.amp.GradScaler()" in ran.stdout
    assert "4 | %time" in ran.stdout  # the magic as the user wrote it


def test_json_and_sarif_carry_the_cell(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    ran = cli("check", "--no-cache", "--output-format", "json", "train.ipynb", cwd=tmp_path)
    found = json.loads(ran.stdout)
    assert [(d["code"], d["cell"], d["location"]) for d in found] == [
        ("ACL101", 4, {"row": 2, "column": 10}),
        ("ACL102", 4, {"row": 2, "column": 10}),
        ("ACL304", 6, {"row": 3, "column": 10}),
    ]
    assert list(found[0])[:6] == ["code", "name", "message", "filename", "cell", "location"]
    edit = found[2]["fix"]["edits"][0]
    assert edit["cell"] == 6 and edit["location"]["row"] == 3
    ran = cli("check", "--no-cache", "--output-format", "sarif", "train.ipynb", cwd=tmp_path)
    results = json.loads(ran.stdout)["runs"][0]["results"]
    assert [r["properties"]["cell"] for r in results] == [4, 4, 6]


def test_safe_fixes_write_only_the_changed_sources(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    ran = cli("fix", "--apply", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert ran.returncode == 1  # ACL101 (no fix in a notebook) remains
    # ACL102 and ACL304, then ACL103 twice: the copies of cell 6 from the loader now pinned
    assert "Fixed 4 findings in 1 file." in ran.stderr
    assert "train.ipynb:cell 4:2:10: ACL101 DataLoader loads every batch" in ran.stderr
    assert AT_IMPORT in ran.stderr
    assert (tmp_path / "train.ipynb").read_bytes() == (DATA / "train.fixed.ipynb").read_bytes()


def test_unsafe_fixes_and_a_second_run_changes_nothing(tmp_path: Path) -> None:
    """The unsafe fixes add nothing: the only unsafe one, ACL101's, is withheld."""
    _copy(tmp_path, "train.ipynb")
    ran = cli("fix", "--apply", "--unsafe-fixes", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert ran.returncode == 1, ran.stderr
    assert "Fixed 4 findings in 1 file." in ran.stderr
    assert "train.ipynb:cell 4:2:10: ACL101 DataLoader loads every batch" in ran.stderr
    assert AT_IMPORT in ran.stderr
    fixed = (tmp_path / "train.ipynb").read_bytes()
    assert fixed == (DATA / "train.fixed.ipynb").read_bytes()
    again = cli("fix", "--apply", "--unsafe-fixes", "--no-cache", "train.ipynb", cwd=tmp_path)
    # nothing fixed: only the finding that remains is reported
    assert again.returncode == 1 and "Fixed" not in again.stderr
    assert "train.ipynb:cell 4:2:10: ACL101" in again.stderr and "Found 1 finding." in again.stderr
    assert (tmp_path / "train.ipynb").read_bytes() == fixed


def test_fixed_notebook_keeps_everything_else() -> None:
    """Outputs (the image), metadata, ids, the magics and the untouched cells are
    identical; the JSON layout is the one Jupyter writes; nbformat validates it."""
    nbformat = pytest.importorskip("nbformat")
    before = json.loads((DATA / "train.ipynb").read_text(encoding="utf-8"))
    text = (DATA / "train.fixed.ipynb").read_text(encoding="utf-8")
    after = json.loads(text)
    assert text == json.dumps(after, indent=1, sort_keys=True, ensure_ascii=False) + "\n"
    nbformat.validate(nbformat.reads(text, as_version=4))
    assert after["metadata"] == before["metadata"]
    for old, new in zip(before["cells"], after["cells"]):
        assert {k: v for k, v in old.items() if k != "source"} == {
            k: v for k, v in new.items() if k != "source"
        }
    changed = [i for i, (o, n) in enumerate(zip(before["cells"], after["cells"]), 1) if o != n]
    assert changed == [4, 6]
    # the magics are the user's, never rewritten
    assert after["cells"][1]["source"][-2:] == [
        "!pip install -q torchvision\n",
        "%matplotlib inline",
    ]
    assert after["cells"][7] == before["cells"][7]  # %%bash


def test_diff_names_the_cells(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    ran = cli("fix", "--no-cache", "train.ipynb", cwd=tmp_path)
    assert ran.returncode == 1
    assert ran.stdout.startswith("--- a/train.ipynb:cell 4\n+++ b/train.ipynb:cell 4\n")
    assert '+scaler = torch.amp.GradScaler("cuda")\n' in ran.stdout
    assert (tmp_path / "train.ipynb").read_bytes() == (DATA / "train.ipynb").read_bytes()


def test_a_cell_that_does_not_parse(tmp_path: Path) -> None:
    """ACL000 at the cell; the other cells are still checked (the DataLoader of
    cell 2), but the notebook gets no fixes, as a file with a syntax error."""
    _copy(tmp_path, "broken_cell.ipynb")
    assert _concise(tmp_path, "broken_cell.ipynb") == [
        # the rule's own reason comes first: it would give no fix were every cell to parse
        "broken_cell.ipynb:cell 2:1:10: ACL101 DataLoader loads every batch in the training "
        f"process: `num_workers` is not set (default 0) {AT_IMPORT}",
        "broken_cell.ipynb:cell 3:1:16: ACL000 SyntaxError: expected ':'",
        "broken_cell.ipynb:cell 4:1:10: ACL304 `torch.cuda.amp.GradScaler` is deprecated since "
        'torch 2.4 (it warns on every use): use `torch.amp.GradScaler` with device type "cuda" '
        "(no fix: a cell of the notebook does not parse)",
    ]
    ran = cli("fix", "--apply", "--unsafe-fixes", "--no-cache", "broken_cell.ipynb", cwd=tmp_path)
    assert ran.returncode == 1
    assert (tmp_path / "broken_cell.ipynb").read_bytes() == (
        DATA / "broken_cell.ipynb"
    ).read_bytes()


def test_invalid_json_is_acl000(tmp_path: Path) -> None:
    _copy(tmp_path, "not_json.ipynb")
    (line,) = _concise(tmp_path, "not_json.ipynb")
    assert line.startswith("not_json.ipynb:1:1: ACL000 not a valid notebook: invalid JSON (")


def test_directories_find_notebooks_but_not_checkpoints(tmp_path: Path) -> None:
    _copy(tmp_path, "train.ipynb")
    (tmp_path / ".ipynb_checkpoints").mkdir()
    shutil.copy(DATA / "train.ipynb", tmp_path / ".ipynb_checkpoints" / "train-checkpoint.ipynb")
    lines = _concise(tmp_path, ".")
    assert len(lines) == 3 and all(line.startswith("train.ipynb:cell ") for line in lines)


def test_other_kernels_and_skip_file(tmp_path: Path) -> None:
    doc = json.loads((DATA / "train.ipynb").read_text(encoding="utf-8"))
    doc["metadata"]["kernelspec"]["language"] = "R"
    doc["metadata"]["language_info"]["name"] = "R"
    (tmp_path / "r.ipynb").write_text(json.dumps(doc, indent=1))
    doc = json.loads((DATA / "train.ipynb").read_text(encoding="utf-8"))
    doc["cells"][2]["source"].insert(0, "# accel-lint: skip-file\n")
    (tmp_path / "skipped.ipynb").write_text(json.dumps(doc, indent=1))
    assert _concise(tmp_path, "r.ipynb", "skipped.ipynb") == []


def test_noqa_in_a_cell(tmp_path: Path) -> None:
    doc = json.loads((DATA / "train.ipynb").read_text(encoding="utf-8"))
    source = doc["cells"][5]["source"]
    source[2] = source[2].replace("\n", "  # noqa: ACL304\n")
    (tmp_path / "nb.ipynb").write_text(json.dumps(doc, indent=1))
    assert [line.split(": ")[1][:6] for line in _concise(tmp_path, "nb.ipynb")] == [
        "ACL101",
        "ACL102",
    ]


def test_standard_input_notebook() -> None:
    data = (DATA / "train.ipynb").read_bytes()
    ran = cli(
        "check",
        "--output-format",
        "concise",
        "--stdin-filename",
        "nb.ipynb",
        "-",
        cwd=DATA,
        stdin=data,
    )
    assert ran.returncode == 1
    assert "nb.ipynb:cell 6:3:10: ACL304" in ran.stdout


def test_a_source_held_as_one_string_stays_one_string(tmp_path: Path) -> None:
    """nbformat accepts a cell's source as a string as well as a list of lines."""
    doc = {
        "cells": [
            {
                "cell_type": "code",
                "execution_count": None,
                "metadata": {},
                "outputs": [],
                "source": "import torch\nscaler = torch.cuda.amp.GradScaler()\n!nvidia-smi",
            }
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 4,
    }
    text = json.dumps(doc, indent=2)
    (tmp_path / "nb.ipynb").write_text(text)
    ran = cli("fix", "--apply", "--no-cache", "nb.ipynb", cwd=tmp_path)
    assert ran.returncode == 0, ran.stderr
    assert (tmp_path / "nb.ipynb").read_text() == text.replace(
        "torch.cuda.amp.GradScaler()", 'torch.amp.GradScaler(\\"cuda\\")'
    )


def test_line_based_formats_point_at_the_notebooks_own_lines(tmp_path: Path) -> None:
    """GitHub, SARIF, GitLab and reviewdog annotate lines of the `.ipynb` file: the
    line that holds the cell's row (Jupyter writes one source row per JSON line), not
    the row within the cell, which is some other line of the JSON."""
    _copy(tmp_path, "train.ipynb")
    lines = (tmp_path / "train.ipynb").read_text().splitlines()
    assert '"scaler = torch.cuda.amp.GradScaler()\\n",' in lines[91 - 1]
    assert lines[58 - 1].strip().startswith('"loader = DataLoader(train_set')

    def run(fmt: str) -> str:
        ran = cli("check", "--no-cache", "--output-format", fmt, "train.ipynb", cwd=tmp_path)
        assert ran.returncode == 1, ran.stderr
        return ran.stdout

    github = run("github").splitlines()
    where = [line.split("::")[1].split(",title=")[0] for line in github]
    path = tmp_path / "train.ipynb"
    assert where == [
        f"warning file={path},line=58,endLine=58",
        f"warning file={path},line=58,endLine=58",
        f"warning file={path},line=91,endLine=91",
    ]
    assert "train.ipynb:cell 6:3:10: ACL304" in github[2]

    results = json.loads(run("sarif"))["runs"][0]["results"]
    assert [r["locations"][0]["physicalLocation"]["region"] for r in results] == [
        {"startLine": 58, "endLine": 58},
        {"startLine": 58, "endLine": 58},
        {"startLine": 91, "endLine": 91},
    ]
    assert results[2]["properties"]["cell"] == 6
    assert results[2]["properties"]["cellRegion"]["startLine"] == 3

    gitlab = json.loads(run("gitlab"))
    assert [g["location"]["positions"]["begin"]["line"] for g in gitlab] == [58, 58, 91]
    rdjson = json.loads(run("rdjson"))["diagnostics"]
    assert [d["location"]["range"]["start"]["line"] for d in rdjson] == [58, 58, 91]


def test_a_cell_written_as_one_string_maps_each_row_to_that_line(tmp_path: Path) -> None:
    from accel_lint.notebook import file_line, source_lines

    text = json.dumps(
        {
            "cells": [
                {"cell_type": "markdown", "metadata": {}, "source": ["# title\n", "text"]},
                {
                    "cell_type": "code",
                    "metadata": {"source": ["not", "this"]},
                    "outputs": [{"text": ["x\n"]}],
                    "source": "import torch\nx = 1\n",
                },
            ]
        },
        indent=1,
    )
    lines = source_lines(text)
    string_line = next(i for i, t in enumerate(text.splitlines(), 1) if "import torch" in t)
    assert lines[2] == [string_line, string_line]
    assert file_line(lines, 2, 2) == string_line
    assert file_line(lines, 3, 1) is None
