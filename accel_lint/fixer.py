"""Apply fixes: one transformer pass per iteration over the tree the rules saw,
imports added once, re-parse and re-lint until nothing fixable is left (ruff's
loop), then an atomic write that keeps encoding, BOM, line endings and mode."""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import libcst as cst

from accel_lint.config import Settings
from accel_lint.edits import Replacer
from accel_lint.engine import Analysis, Source, analyze, safety_allowed
from accel_lint.layout import reflow
from accel_lint.rule import Equivalence, Finding, Fix, Replacement, Rule

MAX_ITERATIONS = 10


def apply_fixes_once(module: cst.Module, fixes: Sequence[Fix]) -> str:
    """The module's code after one pass of non-overlapping `fixes`."""
    replacements: dict[cst.CSTNode, Replacement] = {}
    imports: list[str] = []
    for fix in fixes:
        replacements.update(fix.replacements)
        imports.extend(i for i in fix.imports if i not in imports)
    new_module = module.visit(Replacer(replacements)) if replacements else module
    if imports:
        new_module = add_imports(new_module, imports)
    return new_module.code


# -- imports -------------------------------------------------------------------


def _import_bindings(stmt: cst.BaseSmallStatement) -> set[str]:
    """Canonical forms of what an import statement provides: 'import os', 'from a import b'."""
    from accel_lint.names import dotted_name

    out: set[str] = set()
    if isinstance(stmt, cst.Import):
        for alias in stmt.names:
            name = dotted_name(alias.name)
            if name and alias.asname is None:
                out.add(f"import {name}")
    elif isinstance(stmt, cst.ImportFrom) and stmt.module is not None and not stmt.relative:
        module = dotted_name(stmt.module)
        if isinstance(stmt.names, Sequence):
            for alias in stmt.names:
                name = dotted_name(alias.name)
                if name and alias.asname is None:
                    out.add(f"from {module} import {name}")
    return out


def _is_import_line(stmt: cst.BaseStatement) -> bool:
    return isinstance(stmt, cst.SimpleStatementLine) and all(
        isinstance(s, (cst.Import, cst.ImportFrom)) for s in stmt.body
    )


def _is_docstring(stmt: cst.BaseStatement) -> bool:
    return (
        isinstance(stmt, cst.SimpleStatementLine)
        and len(stmt.body) == 1
        and isinstance(stmt.body[0], cst.Expr)
        and isinstance(stmt.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


def add_imports(module: cst.Module, imports: Iterable[str]) -> cst.Module:
    """Add each import statement not already present, after the file's last top-level
    import of its leading block (or after the docstring), in the file's own style."""
    present: set[str] = set()
    for stmt in module.body:
        if isinstance(stmt, cst.SimpleStatementLine):
            for small in stmt.body:
                present |= _import_bindings(small)
    missing = [i for i in imports if i not in present]
    for code in missing:
        module = _insert_import(module, code)
    return module


def _top_module(stmt: cst.BaseStatement) -> str | None:
    from accel_lint.names import dotted_name

    if not isinstance(stmt, cst.SimpleStatementLine) or not stmt.body:
        return None
    small = stmt.body[0]
    if isinstance(small, cst.Import):
        name = dotted_name(small.names[0].name)
    elif isinstance(small, cst.ImportFrom) and small.module is not None and not small.relative:
        name = dotted_name(small.module)
    else:
        return None
    return name.split(".")[0] if name else None


def _sort_key(code: str) -> tuple[int, str]:
    # isort's default order inside a section: `import x` lines, then `from x import y`
    return (0 if code.startswith("import ") else 1, code.split()[1].lower())


def _insert_import(module: cst.Module, code: str) -> cst.Module:
    """Insert one import where isort would put it among the leading imports: in the
    group of its top-level module (standard library or the same package), sorted."""
    import sys

    body = list(module.body)
    start = 1 if body and _is_docstring(body[0]) else 0
    imports: list[int] = []
    for index in range(start, len(body)):
        if not _is_import_line(body[index]):
            break
        imports.append(index)
    top = code.split()[1].split(".")[0]
    stdlib = top in getattr(sys, "stdlib_module_names", ())
    same_group = [
        i
        for i in imports
        if (_top_module(body[i]) or "") != "__future__"
        and (
            (_top_module(body[i]) in sys.stdlib_module_names) == stdlib
            if stdlib
            else _top_module(body[i]) == top
        )
    ]
    config = module.config_for_parsing
    new = cst.parse_statement(code + module.default_newline, config=config)
    blank = cst.EmptyLine(indent=False, whitespace=cst.SimpleWhitespace(""), comment=None)
    if same_group:
        at = same_group[-1] + 1
        for i in same_group:
            existing = module.code_for_node(body[i]).strip()
            if _sort_key(existing) > _sort_key(code):
                at = i
                break
        if at == same_group[0]:
            # the new line opens the group: it takes over the group's leading lines
            first = body[at]
            assert isinstance(first, cst.SimpleStatementLine)
            new = new.with_changes(leading_lines=first.leading_lines)
            body[at] = first.with_changes(leading_lines=())
        body.insert(at, new)
    elif imports:
        non_future = [i for i in imports if _top_module(body[i]) != "__future__"]
        if stdlib and non_future:
            # a new standard-library group goes before the third-party imports
            at = non_future[0]
            first = body[at]
            assert isinstance(first, cst.SimpleStatementLine)
            new = new.with_changes(leading_lines=first.leading_lines)
            body[at] = first.with_changes(leading_lines=[blank])
            body.insert(at, new)
        else:
            at = imports[-1] + 1
            body.insert(at, new.with_changes(leading_lines=[blank]))
    else:
        at = start
        if at < len(body):
            first = body[at]
            lead = getattr(first, "leading_lines", ())
            new = new.with_changes(leading_lines=lead)
            body[at] = first.with_changes(leading_lines=[blank])
        body.insert(at, new)
    return module.with_changes(body=body)


# -- the fix loop ----------------------------------------------------------------


@dataclass
class AppliedFix:
    code: str
    message: str
    equivalence: Equivalence | None = None  # the finding's own class, when not the rule's


@dataclass
class FixOutcome:
    path: str
    source: Source
    fixed_text: str
    applied: list[AppliedFix] = field(default_factory=list)
    remaining: Analysis | None = None  # the analysis of the final text
    error: str | None = None  # a bug of ours: did not converge / produced invalid code

    @property
    def changed(self) -> bool:
        return self.fixed_text != self.source.text


def _overlaps(
    a: tuple[tuple[int, int], tuple[int, int]], b: tuple[tuple[int, int], tuple[int, int]]
) -> bool:
    return a[0] < b[1] and b[0] < a[1]


def choose_fixes(analysis: Analysis, findings: Sequence[Finding], unsafe: bool) -> list[Finding]:
    """Applicable fixes whose replaced nodes do not overlap; the rest wait for the next pass."""
    chosen: list[Finding] = []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    seen: set[int] = set()
    for finding in findings:
        fix = finding.fix
        if fix is None or not safety_allowed(fix, unsafe) or id(fix) in seen:
            continue
        spans = []
        for node in fix.replacements:
            rng = analysis.range_of(node)
            spans.append(((rng.start.line, rng.start.column), (rng.end.line, rng.end.column)))
        if any(_overlaps(s, t) for s in spans for t in taken):
            continue
        seen.add(id(fix))
        taken.extend(spans)
        chosen.append(finding)
    return chosen


def fix_source(
    path: str,
    source: Source,
    settings: Settings,
    rules: Sequence[type[Rule]],
    *,
    unsafe: bool,
) -> FixOutcome:
    """Fix until nothing fixable is left. The source is never partly fixed: on a bug
    (no convergence, unparsable result) the original text is returned with `error`."""
    text = source.text
    applied: list[AppliedFix] = []
    for _ in range(MAX_ITERATIONS):
        analysis = analyze(path, Source(text, source.encoding), settings, rules)
        if analysis.error is not None or analysis.module is None:
            if applied:
                return FixOutcome(
                    path,
                    source,
                    source.text,
                    [],
                    None,
                    "a fix produced code that does not parse "
                    f"({analysis.error.message if analysis.error else 'unknown'}); "
                    "the file was left unchanged. This is a bug in accel-lint: please report it.",
                )
            return FixOutcome(path, source, text, [], analysis)
        chosen = choose_fixes(analysis, analysis.findings, unsafe)
        if not chosen:
            if applied:
                return _laid_out(path, source, settings, rules, applied, analysis)
            return FixOutcome(path, source, text, applied, analysis)
        new_text = apply_fixes_once(analysis.module, [f.fix for f in chosen if f.fix is not None])
        if new_text == text:
            break
        applied.extend(
            AppliedFix(f.code, f.fix.message, f.equivalence) for f in chosen if f.fix is not None
        )
        text = new_text
    return FixOutcome(
        path,
        source,
        source.text,
        [],
        None,
        f"fixes did not converge after {MAX_ITERATIONS} passes; the file was left unchanged. "
        "This is a bug in accel-lint: please report it.",
    )


def _laid_out(
    path: str,
    source: Source,
    settings: Settings,
    rules: Sequence[type[Rule]],
    applied: list[AppliedFix],
    analysis: Analysis,
) -> FixOutcome:
    """The fixed file with the lines its fixes made too long split (`layout.reflow`),
    and the analysis of that text, so remaining findings point at the right lines."""
    assert analysis.module is not None
    module = analysis.module
    for _ in range(MAX_ITERATIONS):
        again = reflow(source.text, module)
        if again is module:
            break
        module = again
    if module is analysis.module:
        return FixOutcome(path, source, module.code, applied, analysis)
    final = analyze(path, Source(module.code, source.encoding), settings, rules)
    if final.error is not None:
        return FixOutcome(
            path,
            source,
            source.text,
            [],
            None,
            "laying out the fixed lines produced code that does not parse "
            f"({final.error.message}); the file was left unchanged. "
            "This is a bug in accel-lint: please report it.",
        )
    return FixOutcome(path, source, module.code, applied, final)


def write_atomic(path: Path, data: bytes) -> None:
    """Write via a temporary file in the same directory and a rename; keep the mode."""
    mode = stat.S_IMODE(path.stat().st_mode)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".accel-lint.tmp")
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
