"""`--output-format sarif`: SARIF 2.1.0 (OASIS), as GitHub code scanning reads it.

One `reportingDescriptor` per code (ACL000 for files that cannot be parsed, then
every rule), with its summary, the "What it does" text of its page, the whole
page as help Markdown and a `helpUri` to the page. Results point into the
rule list by `ruleIndex` and carry the fix as `fixes[].artifactChanges`.
Regions are 1-based with an exclusive end column, in Unicode code points, which
is what accel-lint's own columns are. Files under the working directory get a
relative URI against `%SRCROOT%` (GitHub resolves it against the repository
root, so run from there); others an absolute `file:` URI.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, TextIO
from urllib.parse import quote

from accel_lint import __version__
from accel_lint.diagnostic import PARSE_ERROR, PARSE_ERROR_NAME, Diagnostic
from accel_lint.notebook import NotebookLines
from accel_lint.pages import page_url, read_page
from accel_lint.rules import RULES

SCHEMA = (
    "https://docs.oasis-open.org/sarif/sarif/v2.1.0/errata01/os/schemas/sarif-schema-2.1.0.json"
)
TOOL_URI = "https://github.com/accel-lint/accel-lint"
SRCROOT = "%SRCROOT%"

_WHAT_IT_DOES = re.compile(r"^## What it does\n+(.*?)(?=\n## |\Z)", re.MULTILINE | re.DOTALL)


def artifact_location(path: str) -> dict[str, str]:
    absolute = os.path.abspath(path)
    relative = os.path.relpath(absolute)
    if relative == os.pardir or relative.startswith(os.pardir + os.sep):
        return {"uri": PurePath(absolute).as_uri()}
    # the path's own bytes, percent-encoded: a name that is not UTF-8 is still a URI
    return {"uri": quote(os.fsencode(PurePath(relative).as_posix())), "uriBaseId": SRCROOT}


def _what_it_does(page: str | None) -> str | None:
    match = _WHAT_IT_DOES.search(page or "")
    if match is None:
        return None
    return " ".join(match.group(1).split())


def rule_descriptors() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {
            "id": PARSE_ERROR,
            "name": PARSE_ERROR_NAME,
            "shortDescription": {"text": "The file could not be read, decoded or parsed"},
            "fullDescription": {
                "text": "accel-lint reports a file it cannot read, decode or parse as ACL000; "
                "no rule can check it until it parses."
            },
            "help": {"text": "Fix the syntax or encoding error named in the message."},
            "defaultConfiguration": {"level": "error"},
        }
    ]
    for entry in RULES:
        rule = entry.rule
        equivalence = rule.equivalence()
        page = read_page(rule.code)
        url = page_url(rule.code)
        help_entry: dict[str, str] = {"text": f"{rule.summary}. See {url}"}
        if page:
            help_entry["markdown"] = page
        entries.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": _what_it_does(page) or rule.summary},
                "help": help_entry,
                "helpUri": url,
                "defaultConfiguration": {"level": "warning", "enabled": entry.default_enabled},
                "properties": {
                    "fix": rule.fix_safety.value,
                    "equivalence": equivalence.value if equivalence else None,
                },
            }
        )
    return entries


def _region(row: int, column: int, end_row: int, end_column: int) -> dict[str, int]:
    return {"startLine": row, "startColumn": column, "endLine": end_row, "endColumn": end_column}


def _result(diag: Diagnostic, index: dict[str, int], notebooks: NotebookLines) -> dict[str, Any]:
    location = artifact_location(diag.filename)
    physical: dict[str, Any] = {"artifactLocation": location}
    if diag.cell is None:
        physical["region"] = _region(diag.row, diag.column, diag.end_row, diag.end_column)
    else:
        # a notebook: the region names the `.ipynb` file's own lines (where the cell's
        # source rows are written); a column there would count JSON quotes and escapes
        start = notebooks.line(diag.filename, diag.cell, diag.row)
        end = notebooks.line(diag.filename, diag.cell, diag.end_row)
        if start is not None:
            physical["region"] = {"startLine": start, "endLine": max(end or start, start)}
    result: dict[str, Any] = {
        "ruleId": diag.code,
        "ruleIndex": index[diag.code],
        "level": "error" if diag.code == PARSE_ERROR else "warning",
        "message": {"text": diag.full_message},
        "locations": [{"physicalLocation": physical}],
    }
    properties: dict[str, Any] = {}
    if diag.no_fix_reason is not None:
        properties["noFixReason"] = diag.no_fix_reason
    if diag.cell is not None:
        # and the position within the cell (1-based, all cells counted), as ruff gives it
        properties["cell"] = diag.cell
        properties["cellRegion"] = _region(diag.row, diag.column, diag.end_row, diag.end_column)
        result["locations"][0]["logicalLocations"] = [{"name": f"cell {diag.cell}"}]
    if properties:
        result["properties"] = properties
    # a notebook's fix edits its cells, not the JSON lines a SARIF region names
    if diag.fix is not None and diag.fix.edits and diag.cell is None:
        result["fixes"] = [
            {
                "description": {"text": f"{diag.fix.message} ({diag.fix.applicability} fix)"},
                "artifactChanges": [
                    {
                        "artifactLocation": location,
                        "replacements": [
                            {
                                "deletedRegion": _region(e.row, e.column, e.end_row, e.end_column),
                                "insertedContent": {"text": e.content},
                            }
                            for e in diag.fix.edits
                        ],
                    }
                ],
            }
        ]
    return result


def sarif_log(diagnostics: Sequence[Diagnostic]) -> dict[str, Any]:
    rules = rule_descriptors()
    index = {entry["id"]: i for i, entry in enumerate(rules)}
    notebooks = NotebookLines()
    return {
        "$schema": SCHEMA,
        "version": "2.1.0",
        "runs": [
            {
                "tool": {
                    "driver": {
                        "name": "accel-lint",
                        "version": __version__,
                        "informationUri": TOOL_URI,
                        "rules": rules,
                    }
                },
                "originalUriBaseIds": {SRCROOT: {"uri": PurePath(os.getcwd()).as_uri() + "/"}},
                "columnKind": "unicodeCodePoints",
                "results": [_result(d, index, notebooks) for d in diagnostics],
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump(sarif_log(diagnostics), stream, indent=2)
    stream.write("\n")
