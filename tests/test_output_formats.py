"""The formats added for other consumers, each checked by its consumer's schema
or parser: reviewdog's rdjson schema (tests/data/schemas, with its source),
JUnit XML read by junitparser (what pytest plugins and CI importers use) and
by xml.etree, GitLab Code Quality's documented fields; plus grouped, json-lines,
pylint, `--output-file` and JSON statistics."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tests.support import ROOT, Ran, cli
from tests.test_ci_formats import BROKEN, CLEAN, TRAIN

SCHEMAS = ROOT / "tests" / "data" / "schemas"
UNICODE = (
    "import torch\n"
    "from torch.utils.data import DataLoader\n"
    'nom = "é"; loader = DataLoader(range(8))\n'
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "broken.py").write_text(BROKEN)
    (tmp_path / "clean.py").write_text(CLEAN)
    (tmp_path / "unicode.py").write_text(UNICODE, encoding="utf-8")
    return tmp_path


def run(fmt: str, cwd: Path, *args: str) -> Ran:
    return cli("check", "--no-cache", "--output-format", fmt, *args, ".", cwd=cwd)


def _json(cwd: Path) -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = json.loads(run("json", cwd).stdout)
    return found


def test_rdjson_validates_against_reviewdogs_schema(project: Path) -> None:
    ran = run("rdjson", project)
    assert ran.returncode == 1
    report = json.loads(ran.stdout)
    schema = json.loads((SCHEMAS / "rdjson-DiagnosticResult.json").read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(report)
    # reviewdog reads it with protojson, which refuses fields the schema does not name
    definitions = schema["definitions"]
    assert set(report) <= set(definitions["DiagnosticResult"]["properties"])
    for diag in report["diagnostics"]:
        assert set(diag) <= set(definitions["reviewdog.rdf.Diagnostic"]["properties"])
        assert diag["severity"] in ("ERROR", "WARNING")
    found = _json(project)
    assert [(d["location"]["path"], d["code"]["value"]) for d in report["diagnostics"]] == [
        (f["filename"], f["code"]) for f in found
    ]
    # columns are UTF-8 bytes: `é` takes two
    (uni,) = [d for d in report["diagnostics"] if d["location"]["path"] == "unicode.py"]
    (plain,) = [f for f in found if f["filename"] == "unicode.py"]
    assert uni["location"]["range"]["start"]["column"] == plain["location"]["column"] + 1


def test_rdjson_suggestions_are_the_fix(project: Path) -> None:
    report = json.loads(run("rdjson", project, "--select", "ACL102").stdout)
    (diag,) = [d for d in report["diagnostics"] if d["code"]["value"] == "ACL102"]
    (suggestion,) = diag["suggestions"]
    # TRAIN picks its device with torch.cuda.is_available(): pinning follows it
    assert suggestion["text"] == ", pin_memory=torch.cuda.is_available()"


def test_junit_is_read_by_junitparser_and_etree(project: Path) -> None:
    from xml.etree import ElementTree as ET

    junitparser = pytest.importorskip("junitparser")
    ran = run("junit", project)
    assert ran.returncode == 1
    path = project / "report.xml"
    path.write_text(ran.stdout, encoding="utf-8")
    xml = junitparser.JUnitXml.fromfile(str(path))
    found = _json(project)
    suites = list(xml)
    assert [s.name for s in suites] == sorted({f["filename"] for f in found})
    cases = [case for suite in suites for case in suite]
    assert len(cases) == len(found)
    for case, f in zip(cases, found):
        assert case.name == f"accel-lint.{f['code']}"
        assert case.classname == f["filename"]
        (result,) = case.result
        assert isinstance(result, junitparser.Failure)
        assert result.message == f["message"]
    root = ET.fromstring(ran.stdout)
    assert root.tag == "testsuites" and root.get("failures") == str(len(found))


def test_junit_without_findings_is_one_passing_case(tmp_path: Path) -> None:
    junitparser = pytest.importorskip("junitparser")
    (tmp_path / "clean.py").write_text(CLEAN)
    ran = run("junit", tmp_path)
    assert ran.returncode == 0
    (tmp_path / "r.xml").write_text(ran.stdout)
    xml = junitparser.JUnitXml.fromfile(str(tmp_path / "r.xml"))
    (suite,) = list(xml)
    (case,) = list(suite)
    assert case.is_passed


# GitLab publishes no JSON schema for Code Quality reports; this one is written from
# its documentation (https://docs.gitlab.com/ci/testing/code_quality/, "Code Quality
# report format"): the required fields, the severities, and a location given by
# `lines.begin` or `positions.begin.line`.
GITLAB_ISSUE = {
    "type": "object",
    "required": ["description", "check_name", "fingerprint", "severity", "location"],
    "properties": {
        "description": {"type": "string", "minLength": 1},
        "check_name": {"type": "string", "minLength": 1},
        "fingerprint": {"type": "string", "minLength": 1},
        "severity": {"enum": ["info", "minor", "major", "critical", "blocker"]},
        "location": {
            "type": "object",
            "required": ["path"],
            "properties": {
                "path": {"type": "string", "pattern": r"^[^/]"},
                "lines": {
                    "type": "object",
                    "required": ["begin"],
                    "properties": {"begin": {"type": "integer", "minimum": 1}},
                },
                "positions": {
                    "type": "object",
                    "required": ["begin"],
                    "properties": {
                        "begin": {
                            "type": "object",
                            "required": ["line"],
                            "properties": {"line": {"type": "integer", "minimum": 1}},
                        }
                    },
                },
            },
            "oneOf": [{"required": ["lines"]}, {"required": ["positions"]}],
        },
    },
}


def test_gitlab_code_quality_report(project: Path) -> None:
    ran = run("gitlab", project)
    assert ran.returncode == 1
    report = json.loads(ran.stdout)
    jsonschema.Draft7Validator({"type": "array", "items": GITLAB_ISSUE}).validate(report)
    found = _json(project)
    assert [(i["location"]["path"], i["check_name"]) for i in report] == [
        (f["filename"], f["code"]) for f in found
    ]
    fingerprints = [i["fingerprint"] for i in report]
    assert len(set(fingerprints)) == len(fingerprints)
    assert {i["severity"] for i in report} == {"major", "blocker"}  # blocker: ACL000
    # a finding keeps its fingerprint when code moves above it
    (project / "train.py").write_text("\n\n" + TRAIN)
    moved = json.loads(run("gitlab", project).stdout)
    assert [i["fingerprint"] for i in moved] == fingerprints


def test_json_lines_are_the_json_objects(project: Path) -> None:
    ran = run("json-lines", project)
    assert [json.loads(line) for line in ran.stdout.splitlines()] == _json(project)


def test_pylint_lines(project: Path) -> None:
    ran = run("pylint", project)
    found = _json(project)
    assert ran.stdout.splitlines() == [
        f"{f['filename']}:{f['location']['row']}: [{f['code']}] {f['message']}" for f in found
    ]
    pattern = re.compile(r"^(?P<path>.+?):(?P<line>\d+): \[(?P<code>[A-Z]+\d+)\] (?P<msg>.+)$")
    assert all(pattern.match(line) for line in ran.stdout.splitlines())


def test_grouped(tmp_path: Path) -> None:
    (tmp_path / "train.py").write_text(TRAIN)
    (tmp_path / "broken.py").write_text(BROKEN)
    ran = run("grouped", tmp_path)
    assert ran.returncode == 1
    assert ran.stdout == (
        "broken.py:\n"
        "  1:7 ACL000 SyntaxError: invalid syntax\n"
        "\n"
        "train.py:\n"
        "  6:10 ACL101 [~] DataLoader loads every batch in the training process: "
        "`num_workers` is not set (default 0)\n"
        "  6:10 ACL102 [*] DataLoader returns pageable memory, so every host-to-GPU copy is "
        "synchronous and staged: `pin_memory` is not set\n"
        "\n"
        "Found 3 findings.\n"
        "[*] 1 fixable with `accel-lint fix --apply`.\n"
        "[~] 1 more fixable with `accel-lint fix --apply --unsafe-fixes` (unsafe: read each "
        "rule's Fix safety first).\n"
    )


@pytest.mark.parametrize("fmt", ["full", "json", "junit", "gitlab", "rdjson", "sarif"])
def test_output_file(project: Path, fmt: str) -> None:
    plain = run(fmt, project)
    ran = run(fmt, project, "--output-file", "out.txt")
    assert ran.returncode == plain.returncode == 1
    assert ran.stdout == ""
    assert (project / "out.txt").read_text(encoding="utf-8") == plain.stdout


def test_statistics_as_json(project: Path) -> None:
    ran = run("json", project, "--statistics")
    assert ran.returncode == 1
    rows = json.loads(ran.stdout)
    assert [(r["code"], r["count"], r["fixable"]) for r in rows] == [
        ("ACL101", 2, False),
        ("ACL000", 1, False),
        ("ACL102", 1, True),
    ]
    # train.py's loader has an unsafe fix; unicode.py's, built at import in a script
    # without a `__main__` guard, has none
    assert rows[0]["url"].endswith("/rules/ACL101.md") and rows[0]["unsafe_fixes"] == 1


def test_format_modules_load_only_when_used() -> None:
    import subprocess
    import sys

    probe = (
        "import sys\n"
        "from accel_lint.cli import main\n"
        "try:\n"
        "    main(['check', '--no-cache', '--output-format', 'concise', sys.argv[1]])\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(sorted(m for m in sys.modules if m.startswith('accel_lint.report.')))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe, str(ROOT / "fixtures")],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.stdout.strip().splitlines()[-1] == "['accel_lint.report.text']"
