"""`--output-format junit`: JUnit XML as CI test reports read it (GitLab
`artifacts:reports:junit`, Jenkins, Azure): one `testsuite` per file with
findings, one failed `testcase` per finding; a run without findings is one
passing test case."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from typing import TextIO
from xml.etree import ElementTree as ET

from accel_lint.diagnostic import Diagnostic


def render_junit(diagnostics: Sequence[Diagnostic], stream: TextIO) -> None:
    root = ET.Element(
        "testsuites",
        name="accel-lint",
        tests=str(max(1, len(diagnostics))),
        failures=str(len(diagnostics)),
        errors="0",
    )
    if not diagnostics:
        suite = ET.SubElement(root, "testsuite", name="accel-lint", tests="1", failures="0")
        suite.set("errors", "0")
        ET.SubElement(suite, "testcase", name="No findings", classname="accel-lint")
    for filename, group in groupby(diagnostics, key=lambda d: d.filename):
        items = list(group)
        suite = ET.SubElement(
            root,
            "testsuite",
            name=filename,
            tests=str(len(items)),
            failures=str(len(items)),
            errors="0",
        )
        for d in items:
            case = ET.SubElement(
                suite,
                "testcase",
                name=f"accel-lint.{d.code}",
                classname=filename,
                file=filename,
                line=str(d.row),
            )
            where = f"cell {d.cell}, " if d.cell is not None else ""
            failure = ET.SubElement(case, "failure", message=d.full_message, type=d.code)
            failure.text = f"{where}line {d.row}, col {d.column}, {d.full_message}"
    ET.indent(root)
    stream.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    stream.write(ET.tostring(root, encoding="unicode") + "\n")
