"""Edits to a tree: the non-overlapping fixes of one pass applied in one transform,
and the imports they need, inserted where isort would put them."""

from __future__ import annotations

import sys
from collections.abc import Iterable, Sequence

import libcst as cst

from accel_lint.edits import replaced
from accel_lint.names import dotted_name
from accel_lint.rule import Fix, Replacement


def apply_fixes_once(module: cst.Module, fixes: Sequence[Fix]) -> str:
    """The module's code after one pass of non-overlapping `fixes`."""
    replacements: dict[cst.CSTNode, Replacement] = {}
    imports: list[str] = []
    for fix in fixes:
        replacements.update(fix.replacements)
        imports.extend(i for i in fix.imports if i not in imports)
    new_module = replaced(module, replacements)
    if imports:
        new_module = add_imports(new_module, imports)
    return new_module.code


# -- imports -------------------------------------------------------------------


def _import_bindings(stmt: cst.BaseSmallStatement) -> set[str]:
    """Canonical forms of what an import statement provides: 'import os', 'from a import b'."""
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
