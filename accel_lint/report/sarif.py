"""`--output-format sarif`: SARIF 2.1.0, one rule entry per code, results with fixes."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any, TextIO

from accel_lint import __version__
from accel_lint.config import all_rules
from accel_lint.engine import PARSE_ERROR, PARSE_ERROR_NAME, Diagnostic
from accel_lint.pages import page_url, read_page

SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"
TOOL_URI = "https://github.com/accel-lint/accel-lint"


def _uri(path: str) -> str:
    p = PurePath(path)
    if p.is_absolute():
        return p.as_uri()
    return p.as_posix()


def _rule_entries() -> list[dict[str, Any]]:
    entries: list[dict[str, Any]] = [
        {
            "id": PARSE_ERROR,
            "name": PARSE_ERROR_NAME,
            "shortDescription": {"text": "The file could not be read, decoded or parsed"},
            "help": {"text": "accel-lint reports a file it cannot read, decode or parse as ACL000."},
            "defaultConfiguration": {"level": "error"},
        }
    ]
    for rule in all_rules():
        page = read_page(rule.code)
        help_entry: dict[str, str] = {"text": f"{rule.summary}. See {page_url(rule.code)}"}
        if page:
            help_entry["markdown"] = page
        entries.append(
            {
                "id": rule.code,
                "name": rule.name,
                "shortDescription": {"text": rule.summary},
                "fullDescription": {"text": rule.summary},
                "help": help_entry,
                "helpUri": page_url(rule.code),
                "defaultConfiguration": {"level": "warning", "enabled": rule.default_enabled},
                "properties": {
                    "fix": rule.fix_safety.value,
                    "equivalence": rule.equivalence.value if rule.equivalence else None,
                },
            }
        )
    return entries


def _result(diag: Diagnostic, index: dict[str, int]) -> dict[str, Any]:
    region = {
        "startLine": diag.row,
        "startColumn": diag.column,
        "endLine": diag.end_row,
        "endColumn": diag.end_column,
    }
    location = {"physicalLocation": {"artifactLocation": {"uri": _uri(diag.filename)}, "region": region}}
    result: dict[str, Any] = {
        "ruleId": diag.code,
        "ruleIndex": index[diag.code],
        "level": "error" if diag.code == PARSE_ERROR else "warning",
        "message": {"text": diag.message},
        "locations": [location],
    }
    if diag.fix is not None and diag.fix.edits:
        result["fixes"] = [
            {
                "description": {"text": f"{diag.fix.message} ({diag.fix.applicability} fix)"},
                "artifactChanges": [
                    {
                        "artifactLocation": {"uri": _uri(diag.filename)},
                        "replacements": [
                            {
                                "deletedRegion": {
                                    "startLine": e.row,
                                    "startColumn": e.column,
                                    "endLine": e.end_row,
                                    "endColumn": e.end_column,
                                },
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
    rules = _rule_entries()
    index = {entry["id"]: i for i, entry in enumerate(rules)}
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
                "originalUriBaseIds": {"%SRCROOT%": {"uri": PurePath(os.getcwd()).as_uri() + "/"}},
                "results": [_result(d, index) for d in diagnostics],
            }
        ],
    }


def render_sarif(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    json.dump(sarif_log(diagnostics), stream, indent=2)
    stream.write("\n")
