"""CI gate formats, checked against the real formats, through the real command line:
`--output-format github` lines parsed the way the GitHub runner parses them,
`--output-format sarif` validated against the official SARIF 2.1.0 schema with
its fixes applied as a SARIF consumer would, `check --diff` applied with
`git apply`, and the GitHub Actions jobs of docs/ci.md run step by step."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urljoin, urlsplit
from urllib.request import url2pathname

import jsonschema
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from accel_lint.pages import PAGES_URL
from accel_lint.report.github import escape_data, escape_property
from accel_lint.rules import RULES as RULE_TABLE
from tests.support import Ran, cli

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs" / "ci.md"
SCHEMA = json.loads((Path(__file__).parent / "data" / "sarif-schema-2.1.0.json").read_text())

TRAIN = """\
import torch
from torch.utils.data import DataLoader

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")
data = torch.utils.data.TensorDataset(torch.randn(64, 3))
loader = DataLoader(data, batch_size=8)
for (x,) in loader:
    x = x.to(device, non_blocking=True)
"""
# only ACL101 (an unsafe fix) applies: nothing for `fix` without --unsafe-fixes
TRAIN_UNSAFE_ONLY = TRAIN.replace("batch_size=8)", "batch_size=8, pin_memory=True)")
CLEAN = "import torch\n\nx = torch.ones(2)\n"
BROKEN = "def f(:\n    pass\n"
ODD_NAME = "odd, name: 100%.py"  # a comma, a colon and a percent sign to escape


def run(*args: str, cwd: Path) -> Ran:
    """The command line, in process, with the cache in its default place."""
    return cli(*args, cwd=cwd, env={"ACCEL_LINT_CACHE_DIR": None, "COLUMNS": "200"})


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / ODD_NAME).write_text(TRAIN)
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "clean.py").write_text(CLEAN)
    return tmp_path


# -- github -------------------------------------------------------------------------

# actions/runner src/Runner.Common/ActionCommand.cs, TryParseV2 and its unescaping:
# the replacements are undone in this order, `%25` last.
_DATA_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%25", "%"))
_PROPERTY_UNESCAPES = (("%0D", "\r"), ("%0A", "\n"), ("%3A", ":"), ("%2C", ","), ("%25", "%"))
_ISSUE_COMMANDS = {"warning", "error", "notice"}


def _unescape(text: str, table: tuple[tuple[str, str], ...]) -> str:
    for escaped, plain in table:
        text = text.replace(escaped, plain)
    return text


def runner_parse(line: str) -> tuple[str, dict[str, str], str] | None:
    """What the runner makes of one output line: (command, properties, data) or None."""
    message = line.lstrip()
    if not message.startswith("::"):
        return None
    end = message.find("::", 2)
    if end < 0:
        return None
    info = message[2:end]
    name, _, props_text = info.partition(" ")
    if name not in _ISSUE_COMMANDS:
        return None
    props: dict[str, str] = {}
    for prop in (p for p in props_text.strip().split(",") if p):
        key, sep, value = prop.partition("=")
        if sep and key and value:
            props[key] = _unescape(value, _PROPERTY_UNESCAPES)
    return name, props, _unescape(message[end + 2 :], _DATA_UNESCAPES)


def test_github_output_is_what_the_runner_parses_back(project: Path) -> None:
    gh = run("check", "--output-format", "github", ".", cwd=project)
    js = run("check", "--output-format", "json", ".", cwd=project)
    assert gh.returncode == js.returncode == 1
    findings = json.loads(js.stdout)
    assert sorted({f["filename"] for f in findings}) == ["broken.py", ODD_NAME, "train.py"]
    lines = gh.stdout.splitlines()
    assert len(lines) == len(findings) == 5
    for line, f in zip(lines, findings):
        parsed = runner_parse(line)
        assert parsed is not None, line
        command, props, data = parsed
        start, end = f["location"], f["end_location"]
        assert command == ("error" if f["code"] == "ACL000" else "warning")
        assert props == {
            "file": str(project / f["filename"]),
            "line": str(start["row"]),
            "col": str(start["column"]),
            "endLine": str(end["row"]),
            "endColumn": str(end["column"]),
            "title": f["code"],
        }
        assert (
            data == f"{f['filename']}:{start['row']}:{start['column']}: {f['code']} {f['message']}"
        )
    odd = [line for line in lines if "odd" in line]
    assert odd and all(f"file={project}/odd%2C name%3A 100%25.py," in line for line in odd)


def test_github_line_is_exactly_the_documented_shape(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    result = run(
        "check", "--output-format", "github", "--select", "ACL102", "train.py", cwd=tmp_path
    )
    assert result.returncode == 1
    assert result.stdout == (
        f"::warning file={tmp_path}/train.py,line=6,col=10,endLine=6,endColumn=40,title=ACL102::"
        "train.py:6:10: ACL102 DataLoader returns pageable memory, so every host-to-GPU copy is "
        "synchronous and staged: `pin_memory` is not set\n"
    )
    assert result.stderr == ""


def test_github_output_is_empty_without_findings(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(CLEAN)
    result = run("check", "--output-format", "github", ".", cwd=tmp_path)
    assert (result.returncode, result.stdout) == (0, "")


@given(st.text())
def test_github_escaping_round_trips_through_the_runner(text: str) -> None:
    assert _unescape(escape_data(text), _DATA_UNESCAPES) == text
    escaped = escape_property(text)
    assert "," not in escaped and "::" not in escaped and "\n" not in escaped
    assert _unescape(escaped, _PROPERTY_UNESCAPES) == text


# -- sarif --------------------------------------------------------------------------

# RFC 3986 URI-reference characters; the schema's "format": "uri" is not checked
# by jsonschema without extra packages, so check it here.
_URI = re.compile(r"^(?:[A-Za-z0-9\-._~:/?#\[\]@!$&'()*+,;=]|%[0-9A-Fa-f]{2})*$")


def sarif(*args: str, cwd: Path) -> tuple[dict[str, Any], Ran]:
    result = run("check", "--output-format", "sarif", *args, cwd=cwd)
    log = json.loads(result.stdout)
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    return log, result


def _uris(node: Any) -> list[str]:
    if isinstance(node, dict):
        found = [node["uri"]] if isinstance(node.get("uri"), str) else []
        return found + [u for value in node.values() for u in _uris(value)]
    if isinstance(node, list):
        return [u for value in node for u in _uris(value)]
    return []


def _resolve(run_: dict[str, Any], location: dict[str, str]) -> Path:
    uri = location["uri"]
    if "uriBaseId" in location:
        uri = urljoin(run_["originalUriBaseIds"][location["uriBaseId"]]["uri"], uri)
    parts = urlsplit(uri)
    assert parts.scheme == "file"
    return Path(url2pathname(parts.path))


def test_sarif_validates_and_has_one_rule_per_code(project: Path) -> None:
    log, result = sarif(".", cwd=project)
    assert result.returncode == 1
    assert log["version"] == "2.1.0"
    (run_,) = log["runs"]
    rules = run_["tool"]["driver"]["rules"]
    assert [r["id"] for r in rules] == ["ACL000", *(e.code for e in RULE_TABLE)]
    for descriptor, rule in zip(rules[1:], [e.rule for e in RULE_TABLE]):
        page = ROOT / "rules" / f"{rule.code}.md"
        assert descriptor["helpUri"] == f"{PAGES_URL}/{rule.code}.md"
        assert descriptor["helpUri"].endswith(f"/{page.relative_to(ROOT).as_posix()}")
        # a rule without its page yet is test_pages.py's failure; here: no stale help
        markdown = page.read_text(encoding="utf-8") if page.is_file() else None
        assert descriptor["help"].get("markdown") == markdown
        assert descriptor["help"]["text"] == f"{rule.summary}. See {descriptor['helpUri']}"
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["name"] == rule.name
    assert all(_URI.match(uri) for uri in _uris(log)), _uris(log)

    findings = json.loads(run("check", "--output-format", "json", ".", cwd=project).stdout)
    assert len(run_["results"]) == len(findings) == 5
    for res, f in zip(run_["results"], findings):
        assert rules[res["ruleIndex"]]["id"] == res["ruleId"] == f["code"]
        assert res["level"] == ("error" if f["code"] == "ACL000" else "warning")
        assert res["message"]["text"] == f["message"]
        (loc,) = res["locations"]
        physical = loc["physicalLocation"]
        assert physical["region"] == {
            "startLine": f["location"]["row"],
            "startColumn": f["location"]["column"],
            "endLine": f["end_location"]["row"],
            "endColumn": f["end_location"]["column"],
        }
        assert physical["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert unquote(physical["artifactLocation"]["uri"]) == f["filename"]
        assert _resolve(run_, physical["artifactLocation"]) == project / f["filename"]


def _apply_sarif_fix(text: str, fix: dict[str, Any]) -> str:
    """Apply one SARIF fix the way a consumer does: 1-based regions, exclusive end column."""
    lines = text.splitlines(keepends=True)
    starts = [0]
    for line in lines:
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return starts[row - 1] + column - 1

    (change,) = fix["artifactChanges"]
    spans = [
        (
            offset(r["deletedRegion"]["startLine"], r["deletedRegion"]["startColumn"]),
            offset(r["deletedRegion"]["endLine"], r["deletedRegion"]["endColumn"]),
            r["insertedContent"]["text"],
        )
        for r in change["replacements"]
    ]
    for start, end, new in sorted(spans, reverse=True):
        text = text[:start] + new + text[end:]
    return text


@pytest.mark.parametrize("code", ["ACL101", "ACL102"])
def test_sarif_fix_applies_to_what_the_fixer_writes(tmp_path: Path, code: str) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    log, _ = sarif("--select", code, "--unsafe-fixes", "train.py", cwd=tmp_path)
    (res,) = log["runs"][0]["results"]
    (fix,) = res["fixes"]
    assert _resolve(log["runs"][0], fix["artifactChanges"][0]["artifactLocation"]) == (
        tmp_path / "train.py"
    )
    via_sarif = _apply_sarif_fix(TRAIN, fix)
    fixed = run("fix", "--apply", "--unsafe-fixes", "--select", code, "train.py", cwd=tmp_path)
    assert fixed.returncode == 0, fixed.stderr
    assert via_sarif == (tmp_path / "train.py").read_text() != TRAIN


def test_sarif_uses_an_absolute_uri_outside_the_working_directory(tmp_path: Path) -> None:
    (tmp_path / "other").mkdir()
    (tmp_path / "here").mkdir()
    (tmp_path / "other" / "train.py").write_text(TRAIN)
    log, _ = sarif("--select", "ACL102", "../other/train.py", cwd=tmp_path / "here")
    (res,) = log["runs"][0]["results"]
    location = res["locations"][0]["physicalLocation"]["artifactLocation"]
    assert location == {"uri": (tmp_path / "other" / "train.py").as_uri()}


def test_sarif_without_findings_is_valid_and_empty(tmp_path: Path) -> None:
    (tmp_path / "clean.py").write_text(CLEAN)
    log, result = sarif(".", cwd=tmp_path)
    assert result.returncode == 0
    assert log["runs"][0]["results"] == []


# -- exit codes, --exit-zero, --statistics, check --diff ------------------------------


def test_exit_zero_still_prints_the_findings(project: Path) -> None:
    result = run("check", "--exit-zero", "--output-format", "concise", "train.py", cwd=project)
    assert result.returncode == 0
    assert result.stdout.splitlines()[:2] == [
        "train.py:6:10: ACL101 [~] DataLoader loads every batch in the training process: "
        "`num_workers` is not set (default 0)",
        "train.py:6:10: ACL102 [*] DataLoader returns pageable memory, so every host-to-GPU copy "
        "is synchronous and staged: `pin_memory` is not set",
    ]


def test_statistics_counts_per_rule(project: Path) -> None:
    result = run("check", "--statistics", "train.py", ODD_NAME, cwd=project)
    assert result.returncode == 1
    assert result.stdout.splitlines() == [
        "2\tACL101\t[~] dataloader-sync-loading  (2 unsafe fixes)",
        "2\tACL102\t[*] dataloader-unpinned-memory  (2 safe fixes)",
        "Found 4 findings: 2 with a safe fix, 2 with an unsafe fix.",
    ]


def _git_apply(diff: str, cwd: Path) -> None:
    subprocess.run(
        ["git", "apply", "--unsafe-paths", "-"], input=diff, text=True, cwd=cwd, check=True
    )


def test_check_diff_is_fix_without_apply_and_applies_cleanly(tmp_path: Path) -> None:
    for name in ("a", "b"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "train.py").write_text(TRAIN)
        (tmp_path / name / "clean.py").write_text(CLEAN)
    diff = run("check", "--diff", ".", cwd=tmp_path / "a")
    assert diff.returncode == 1
    assert diff.stdout == run("fix", ".", cwd=tmp_path / "a").stdout
    assert diff.stdout.startswith("--- a/train.py\n+++ b/train.py\n")
    assert (tmp_path / "a" / "train.py").read_text() == TRAIN  # nothing written
    _git_apply(diff.stdout, tmp_path / "a")
    applied = run("fix", "--apply", ".", cwd=tmp_path / "b")
    assert applied.returncode == 1  # ACL101's unsafe fix is not applied: it remains
    assert (tmp_path / "a" / "train.py").read_text() == (tmp_path / "b" / "train.py").read_text()
    again = run("check", "--diff", ".", cwd=tmp_path / "a")
    assert (again.returncode, again.stdout) == (0, "")


def test_check_diff_exit_codes(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN_UNSAFE_ONLY)
    assert run("check", "train.py", cwd=tmp_path).returncode == 1
    safe_only = run("check", "--diff", "train.py", cwd=tmp_path)
    assert (safe_only.returncode, safe_only.stdout) == (0, "")  # no safe fix is pending
    unsafe = run("check", "--diff", "--unsafe-fixes", "train.py", cwd=tmp_path)
    assert unsafe.returncode == 1 and "+loader = DataLoader(" in unsafe.stdout
    zero = run("check", "--diff", "--unsafe-fixes", "--exit-zero", "train.py", cwd=tmp_path)
    assert (zero.returncode, zero.stdout) == (0, unsafe.stdout)
    both = run("check", "--diff", "--statistics", "train.py", cwd=tmp_path)
    assert both.returncode == 2 and "--diff and --statistics" in both.stderr
    (tmp_path / "broken.py").write_text(BROKEN)
    broken = run("check", "--diff", "--exit-zero", "broken.py", cwd=tmp_path)
    assert broken.returncode == 0
    assert run("check", "--diff", "broken.py", cwd=tmp_path).returncode == 1


# -- docs/ci.md: the snippets are what runs ---------------------------------------------


def doc_yaml_blocks(path: Path = DOCS) -> list[str]:
    return re.findall(r"```yaml\n(.*?)```", path.read_text(encoding="utf-8"), re.DOTALL)


def _workflows() -> dict[str, dict[str, Any]]:
    jobs: dict[str, dict[str, Any]] = {}
    for block in doc_yaml_blocks():
        data = yaml.safe_load(block)
        if isinstance(data, dict) and "jobs" in data:
            jobs.update(data["jobs"])
    return jobs


def _run_step(command: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # the shell GitHub uses for `run:` on Linux runners
    bin_dir = str(Path(sys.executable).parent)
    assert shutil.which("accel-lint", path=bin_dir), "accel-lint is not installed in this venv"
    return subprocess.run(
        ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", command],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}", "NO_COLOR": "1"},
    )


def _steps_after_install(job: dict[str, Any]) -> list[dict[str, Any]]:
    steps = job["steps"]
    assert steps[0] == {"uses": "actions/checkout@v4"}
    assert steps[1]["uses"] == "actions/setup-python@v5"
    assert steps[2] == {"run": "pip install accel-lint"}
    return list(steps[3:])


def test_docs_github_annotations_job_runs(project: Path, tmp_path_factory: Any) -> None:
    job = _workflows()["accel-lint"]
    assert job["runs-on"] == "ubuntu-latest"
    (step,) = _steps_after_install(job)
    result = _run_step(step["run"], project)
    assert result.returncode == 1
    assert [runner_parse(line) is not None for line in result.stdout.splitlines()] == [True] * 5
    clean = tmp_path_factory.mktemp("clean")
    (clean / "clean.py").write_text(CLEAN)
    ok = _run_step(step["run"], clean)
    assert (ok.returncode, ok.stdout) == (0, "")


def test_docs_sarif_job_runs_and_uploads_what_it_wrote(project: Path) -> None:
    job = _workflows()["accel-lint-sarif"]
    assert job["permissions"] == {"contents": "read", "security-events": "write"}
    lint, upload = _steps_after_install(job)
    result = _run_step(lint["run"], project)
    assert result.returncode == 0  # --exit-zero: the upload step must run
    assert upload["uses"] == "github/codeql-action/upload-sarif@v3"
    log = json.loads((project / upload["with"]["sarif_file"]).read_text())
    jsonschema.Draft4Validator(SCHEMA).validate(log)
    assert len(log["runs"][0]["results"]) == 5


def test_docs_fixes_pending_step_runs(tmp_path: Path) -> None:
    steps = [yaml.safe_load(b) for b in doc_yaml_blocks()]
    (step,) = [s[0] for s in steps if isinstance(s, list) and "run" in s[0]]
    (tmp_path / "train.py").write_text(TRAIN)
    pending = _run_step(step["run"], tmp_path)
    assert pending.returncode == 1 and "+loader = DataLoader(" in pending.stdout
    run("fix", "--apply", "train.py", cwd=tmp_path)
    done = _run_step(step["run"], tmp_path)
    assert (done.returncode, done.stdout) == (0, "")


def test_readme_ci_snippets_are_the_tested_ones() -> None:
    """The README shows the snippets of docs/ci.md, never its own variants."""
    tested = set(doc_yaml_blocks())
    readme = [b for b in doc_yaml_blocks(ROOT / "README.md") if "accel-lint" in b]
    assert [b for b in readme if b not in tested] == []
    assert set(readme) == tested, "the README must show every snippet the tests run"
