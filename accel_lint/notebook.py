"""Jupyter notebooks (`.ipynb`) as one program, and back.

The code cells, in order, are joined into one module: a DataLoader built in
cell 2 and iterated in cell 5 is one program. Between two cells goes a sentinel
comment line (`# accel-lint-cell: N`), so the fixed text can be cut back into
cells whatever a fix inserted; IPython magics (`%line`, `%%cell`, `!shell`,
`x = !cmd`, `obj?`) are masked as `pass` statements carrying their index and
restored on the way back, never parsed. A cell that does not parse on its own
is reported as ACL000 at its position and left out of the program (blank
lines), so the other cells are still checked.

Positions map back to `cell N` (1-based among all cells, markdown included)
and the row within the cell. Fixes write back only the changed cells'
`source` values, spliced into the original bytes: outputs, metadata, ids,
the JSON's indentation, key order and trailing newline stay byte for byte.
"""

from __future__ import annotations

import json
import re
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from typing import Any

from accel_lint.diagnostic import Diagnostic, Edit, FixView, parse_error
from accel_lint.files import too_large
from accel_lint.source import compile_ast, syntax_check

SUFFIX = ".ipynb"
_SENTINEL = "# accel-lint-cell: {}"
_SENTINEL_RE = re.compile(r"^# accel-lint-cell: (\d+)$")
_MAGIC = "pass  # accel-lint-magic: {}"
_MAGIC_RE = re.compile(r"^([ \t]*)pass  # accel-lint-magic: (\d+)$")
# a line magic, a shell escape, `x = !cmd` / `x = %magic`, or help (`obj?`, `?obj`)
_MAGIC_LINE = re.compile(r"^[ \t]*(?:[%!?]|[\w.]+[ \t]*=[ \t]*[%!]|[\w.()]+\?\??[ \t]*$)")
# Python frames for the JSON decoder: a notebook nesting deeper is ACL000 (the
# C decoder uses little stack per level; this is far inside a main thread's 8 MB)
_JSON_RECURSION_LIMIT = 4000
# cell magics whose body is Python: only their first line is masked
_PYTHON_CELL_MAGICS = ("time", "timeit", "capture", "prun")


def is_notebook(path: str) -> bool:
    return path.lower().endswith(SUFFIX)


class NotebookError(Exception):
    pass


@dataclass
class Cell:
    index: int  # 1-based among all cells
    text: str  # the source as the notebook holds it
    start: int = 0  # 1-based row of its first line in the joined program
    lines: int = 0
    bad: Diagnostic | None = None  # the cell does not parse on its own


@dataclass
class Notebook:
    path: str
    raw: str
    spans: dict[int, tuple[int, int]]  # cell index -> span of its "source" value in `raw`
    cells: list[Cell] = field(default_factory=list)
    magics: list[str] = field(default_factory=list)
    program: str = ""
    python: bool = True

    @property
    def broken(self) -> list[Diagnostic]:
        return [c.bad for c in self.cells if c.bad is not None]

    # -- positions ---------------------------------------------------------------

    def _locate(self, row: int) -> tuple[Cell, int] | None:
        for cell in self.cells:
            if cell.start <= row < cell.start + max(cell.lines, 1):
                return cell, row - cell.start + 1
        return None

    def map_diagnostic(self, diag: Diagnostic) -> Diagnostic:
        where = self._locate(diag.row)
        if where is None:
            return diag
        cell, row = where
        end_row = diag.end_row - diag.row + row
        fix = diag.fix
        if fix is not None:
            fix = FixView(fix.applicability, fix.message, tuple(self._edit(e) for e in fix.edits))
        return replace(diag, row=row, end_row=end_row, cell=cell.index, fix=fix)

    def _edit(self, edit: Edit) -> Edit:
        where = self._locate(edit.row)
        if where is None:
            return edit
        cell, row = where
        return replace(edit, row=row, end_row=edit.end_row - edit.row + row, cell=cell.index)

    # -- back to bytes -------------------------------------------------------------

    def cell_texts(self, program: str) -> dict[int, str]:
        """The cells' new sources, from a (fixed) program; raises NotebookError when
        the cells cannot be told apart any more."""
        pieces: dict[int, list[str]] = {}
        current: list[str] | None = None
        parts = program.split("\n")
        if parts and parts[-1] == "":
            parts.pop()  # the program's own final newline
        for line in parts:
            m = _SENTINEL_RE.match(line)
            if m:
                current = pieces.setdefault(int(m.group(1)), [])
                continue
            if current is None:
                if line.strip():
                    raise NotebookError("code before the first cell")
                continue
            magic = _MAGIC_RE.match(line)
            if magic:
                line = self.magics[int(magic.group(2))]
            current.append(line)
        if sorted(pieces) != sorted(c.index for c in self.cells):
            raise NotebookError("a fix moved code across cells")
        out: dict[int, str] = {}
        for cell in self.cells:
            lines = pieces[cell.index]
            text = "\n".join(lines)
            if cell.text.endswith("\n") or (lines and not cell.text):
                text += "\n"
            out[cell.index] = text
        return out

    def with_sources(self, sources: dict[int, str]) -> str:
        """The notebook's text with the `source` of each changed cell replaced."""
        out = self.raw
        for index in sorted(sources, reverse=True):
            start, end = self.spans[index]
            out = out[:start] + _dump_source(self.raw, start, end, sources[index]) + out[end:]
        return out


def load(path: str, data: bytes) -> Notebook | Diagnostic:
    """The notebook, or the ACL000 that says why it cannot be read."""
    try:
        raw = data.decode("utf-8-sig")
        with _json_depth():
            doc = json.loads(raw)
            spans = _source_spans(raw) if isinstance(doc, dict) else {}
    except (UnicodeDecodeError, ValueError) as exc:
        return parse_error(path, f"not a valid notebook: invalid JSON ({exc})")
    except (IndexError, AssertionError) as exc:  # pragma: no cover - json.loads accepted it
        return parse_error(path, f"not a valid notebook: {exc}")
    except RecursionError:
        return parse_error(
            path, "not a valid notebook: its JSON nests deeper than Python's recursion limit"
        )
    if not isinstance(doc, dict) or not isinstance(doc.get("cells"), list):
        return parse_error(path, "not a valid notebook: no `cells` list")
    code = sum(
        len(_text(c.get("source")) or "")
        for c in doc["cells"]
        if isinstance(c, dict) and c.get("cell_type") == "code"
    )
    large = too_large(code, "the notebook's code")  # outputs are not linted
    if large is not None:
        return parse_error(path, large)
    book = Notebook(path, raw, spans)
    language = _language(doc)
    book.python = language in (None, "python")
    out: list[str] = []
    row = 1
    for number, cell in enumerate(doc["cells"], start=1):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        source = cell.get("source", "")
        if number not in spans:
            continue  # a code cell without a source key: nothing to read or write
        text = _text(source)
        if text is None:  # nbformat: a string or a list of strings; nothing to check, nor to fix
            found = (
                type(source).__name__
                if not isinstance(source, list)
                else "a list of " + (", ".join(sorted({type(line).__name__ for line in source})))
            )
            bad = parse_error(
                path, f"not a valid notebook: the cell's `source` is not text (found {found})"
            )
            out.append(_SENTINEL.format(number))
            book.cells.append(Cell(number, "", row + 1, 0, replace(bad, cell=number)))
            row += 1
            continue
        masked = _mask(text, book.magics)
        lines = masked.split("\n")
        if lines and lines[-1] == "":
            lines.pop()
        entry = Cell(number, text, row + 1, len(lines))
        # a name that is no file: CPython would re-read the line from `path`
        error = syntax_check("<cell>", "\n".join(lines) + "\n") if lines else None
        dedented = _leading_indent(text) if error is not None else None
        if dedented is not None and _parses(_mask(dedented, [])):
            # indented as a whole, which IPython runs: its lines are kept out of the
            # analysis, as a cell magic's are (analysing it would move its columns)
            lines = [_MAGIC.format(len(book.magics) + k) for k in range(len(lines))]
            book.magics.extend(text.split("\n")[: len(lines)])
        elif error is not None:
            entry.bad = _cell_error(path, "\n".join(lines) + "\n", number)
            lines = [""] * len(lines)
        out.append(_SENTINEL.format(number))
        out.extend(lines)
        row += 1 + len(lines)
        book.cells.append(entry)
    book.program = "\n".join(out) + "\n" if out else ""
    return book


def _parses(text: str) -> bool:
    return syntax_check("<cell>", text + "\n") is None


def _text(source: Any) -> str | None:
    """A cell's `source` as text: a string, or a list of strings; None otherwise."""
    if isinstance(source, str):
        return source
    if isinstance(source, list) and all(isinstance(line, str) for line in source):
        return "".join(source)
    return None


@contextmanager
def _json_depth() -> Iterator[None]:
    """Python's recursion limit raised for the JSON decoder (one frame per level:
    metadata 1,000 brackets deep is valid nbformat), on the main thread only, whose
    stack is the process's."""
    limit = sys.getrecursionlimit()
    raise_it = (
        threading.current_thread() is threading.main_thread() and limit < _JSON_RECURSION_LIMIT
    )
    if raise_it:
        sys.setrecursionlimit(_JSON_RECURSION_LIMIT)
    try:
        yield
    finally:
        if raise_it:
            sys.setrecursionlimit(limit)


def _language(doc: dict[str, Any]) -> str | None:
    meta = doc.get("metadata")
    if not isinstance(meta, dict):
        return None
    for key in ("language_info", "kernelspec"):
        info = meta.get(key)
        if isinstance(info, dict):
            name = info.get("name" if key == "language_info" else "language")
            if isinstance(name, str):
                return name.lower()
    return None


def mask_cell(text: str) -> str:
    """A code cell's text with IPython's own lines (magics, shell escapes, help) made
    `pass` lines, line for line, so that the rest parses as Python (the server uses it)."""
    return _mask(text, [])


def _mask(text: str, magics: list[str]) -> str:
    lines = text.split("\n")
    first = lines[0].lstrip() if lines else ""
    whole = first.startswith("%%") and first[2:].split(maxsplit=1)[:1] not in [
        [m] for m in _PYTHON_CELL_MAGICS
    ]
    out = []
    state = _LineState()
    magic: _LineState | None = None  # the logical line of the magic being masked
    indent = ""
    for number, line in enumerate(lines):
        if magic is not None and not magic.at_logical_start():
            # IPython reads a magic to the end of its logical line: a backslash or an
            # open bracket (`%timeit f(x,\n          y)`) continues it
            out.append(indent + _MAGIC.format(len(magics)))
            magics.append(line)
            magic.feed(line)
            continue
        magic = None
        starts = state.at_logical_start()
        if (whole and (line.strip() or number == 0)) or (
            starts and line.strip() and _MAGIC_LINE.match(line)
        ):
            indent = line[: len(line) - len(line.lstrip())] if not whole else ""
            out.append(indent + _MAGIC.format(len(magics)))
            magics.append(line)
            if not whole:
                magic = _LineState()
                magic.feed(line)
        else:
            out.append(line)
            state.feed(line)
    return "\n".join(out)


def _leading_indent(text: str) -> str | None:
    """IPython's `leading_indent`: a cell whose first line is indented runs with that
    indentation taken off every line that starts with it. The dedented text, or None
    when the first line is not indented."""
    first = text.split("\n", 1)[0]
    indent = first[: len(first) - len(first.lstrip(" \t"))]
    if not indent or not first.strip():
        return None
    return "\n".join(
        line[len(indent) :] if line.startswith(indent) else line for line in text.split("\n")
    )


class _LineState:
    """Where a line of Python leaves the tokenizer, for one question: does the next
    line start a logical line? A magic starts one; a line that continues a bracket,
    a triple-quoted string or a backslash (`print('%d'\n      % x)`) is Python."""

    def __init__(self) -> None:
        self.depth = 0  # open brackets
        self.quote: str | None = None  # the open string's delimiter
        self.backslash = False

    def at_logical_start(self) -> bool:
        return self.depth == 0 and self.quote is None and not self.backslash

    def feed(self, line: str) -> None:
        self.backslash = False
        i, n = 0, len(line)
        while i < n:
            if self.quote is not None:
                end = line.find(self.quote, i)
                slash = line.find("\\", i)
                if slash != -1 and (end == -1 or slash < end):
                    i = slash + 2
                    continue
                if end == -1:
                    if len(self.quote) == 1:
                        self.quote = None  # an unterminated one-line string: an error anyway
                    return
                i = end + len(self.quote)
                self.quote = None
                continue
            c = line[i]
            if c == "#":
                return
            if c in "\"'":
                triple = line.startswith(c * 3, i)
                self.quote = c * 3 if triple else c
                i += 3 if triple else 1
                continue
            if c in "([{":
                self.depth += 1
            elif c in ")]}":
                self.depth = max(0, self.depth - 1)
            elif c == "\\" and i == n - 1:
                self.backslash = True
            i += 1


def _cell_error(path: str, text: str, cell: int) -> Diagnostic:
    try:
        compile_ast(text, "<cell>")
    except SyntaxError as exc:
        return replace(
            parse_error(path, f"SyntaxError: {exc.msg}", exc.lineno or 1, exc.offset or 1),
            cell=cell,
        )
    except (ValueError, RecursionError, MemoryError) as exc:
        return replace(parse_error(path, f"SyntaxError: {exc}"), cell=cell)
    return replace(parse_error(path, "SyntaxError"), cell=cell)  # pragma: no cover


# -- where each cell's "source" value lies in the JSON text ---------------------------

_WS = re.compile(r"[ \t\n\r]*")
_DECODER = json.JSONDecoder()


def _skip(text: str, i: int) -> int:
    m = _WS.match(text, i)
    assert m is not None
    return m.end()


def _source_spans(text: str) -> dict[int, tuple[int, int]]:
    """{cell number: (start, end)} of each cell's `source` value."""
    spans: dict[int, tuple[int, int]] = {}
    i = _skip(text, 0)
    for key, start, _end in _members(text, i):
        if key != "cells" or text[start] != "[":
            continue
        j = _skip(text, start + 1)
        number = 0
        while text[j] != "]":
            number += 1
            if text[j] == "{":
                for ckey, cstart, cend in _members(text, j):
                    if ckey == "source":
                        spans[number] = (cstart, cend)
            _, j = _DECODER.raw_decode(text, j)
            j = _skip(text, j)
            if text[j] == ",":
                j = _skip(text, j + 1)
    return spans


def _members(text: str, i: int) -> list[tuple[str, int, int]]:
    """(key, value start, value end) of the object at `i`."""
    out: list[tuple[str, int, int]] = []
    assert text[i] == "{"
    j = _skip(text, i + 1)
    while text[j] != "}":
        key, j = _DECODER.raw_decode(text, j)
        j = _skip(text, j)
        assert text[j] == ":"
        j = _skip(text, j + 1)
        _, end = _DECODER.raw_decode(text, j)
        out.append((key, j, end))
        j = _skip(text, end)
        if text[j] == ",":
            j = _skip(text, j + 1)
    return out


def _dump_source(raw: str, start: int, end: int, text: str) -> str:
    """`text` as a `source` value in the style of the one at raw[start:end]."""
    old = raw[start:end]
    ascii_only = "\\u" in raw and raw.isascii()
    if not old.startswith("["):
        return json.dumps(text, ensure_ascii=ascii_only)
    lines = text.splitlines(keepends=True)
    if not lines:
        return "[]"
    newline = "\r\n" if "\r\n" in raw else "\n"
    line_start = raw.rfind("\n", 0, start) + 1
    before = raw[line_start:start]
    key_indent = before[: len(before) - len(before.lstrip())]
    m = re.match(r"\[\s*?\r?\n([ \t]*)", old)
    if m is not None:
        item_indent = m.group(1)
    else:
        unit = _indent_unit(raw)
        if old.strip("[] \t\r\n") and not old.startswith("[\n") and "\n" not in old:
            # a one-line list (`["a\n", "b"]`): keep it on one line
            return "[" + ", ".join(json.dumps(s, ensure_ascii=ascii_only) for s in lines) + "]"
        item_indent = key_indent + unit
    items = ("," + newline).join(
        item_indent + json.dumps(s, ensure_ascii=ascii_only) for s in lines
    )
    return "[" + newline + items + newline + key_indent + "]"


def _indent_unit(raw: str) -> str:
    m = re.search(r"\{\r?\n([ \t]+)\"", raw)
    return m.group(1) if m else " "


def source_lines(text: str) -> dict[int, list[int]]:
    """For each cell (1-based, all cells), the line of the `.ipynb` file on which each
    row of its source starts (row r at index r - 1): what a consumer that knows only
    the file's lines (GitHub annotations, SARIF regions) needs. One row per element is
    how Jupyter writes `source`; an element holding several rows, or a single string,
    puts them all on that element's line. Iterative, so no nesting depth matters; on
    text that is not JSON it returns what it found."""
    found: dict[int, list[int]] = {}
    starts: dict[int, bool] = {}
    # one frame per open container: [is_object, key or index, expecting a key]
    frames: list[list[Any]] = []
    i, line, n = 0, 1, len(text)
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
        elif c in " \t\r\ufeff":
            i += 1
        elif c == '"':
            end = i + 1
            while True:
                end = text.find('"', end)
                if end < 0:
                    return found
                slashes = 0
                while text[end - 1 - slashes] == "\\":
                    slashes += 1
                if slashes % 2 == 0:
                    break
                end += 1
            try:
                value = json.loads(text[i : end + 1])
            except ValueError:
                return found
            i = end + 1
            if frames and frames[-1][0] and frames[-1][2]:
                frames[-1][1], frames[-1][2] = value, False
                continue
            cell = _source_cell(frames)
            if cell is not None:
                rows = found.setdefault(cell, [])
                for ch in value:
                    if starts.get(cell, True):
                        rows.append(line)
                        starts[cell] = False
                    if ch == "\n":
                        starts[cell] = True
        elif c in "{[":
            frames.append([c == "{", None if c == "{" else 0, c == "{"])
            i += 1
        elif c in "}]":
            if frames:
                frames.pop()
            i += 1
        elif c == ",":
            if frames:
                if frames[-1][0]:
                    frames[-1][2] = True
                else:
                    frames[-1][1] += 1
            i += 1
        else:  # `:`, numbers, true/false/null
            i += 1
    return found


def _source_cell(frames: list[list[Any]]) -> int | None:
    """The cell (1-based) when the frames put the next value in a cell's `source`
    (the string itself, or an element of its list)."""
    path = [frame[1] for frame in frames]
    if len(path) == 4 and not frames[3][0]:
        path = path[:3]
    if len(path) == 3 and path[0] == "cells" and path[2] == "source":
        index = path[1]
        if isinstance(index, int) and not frames[1][0]:
            return index + 1
    return None


def file_line(lines: dict[int, list[int]], cell: int, row: int) -> int | None:
    """The `.ipynb` line of `row` of `cell`, from `source_lines`; None when unknown."""
    rows = lines.get(cell)
    if not rows:
        return None
    return rows[min(max(row, 1), len(rows)) - 1]


class NotebookLines:
    """`file_line` for the notebooks of one report, each read once. A notebook that
    cannot be read again (standard input, removed meanwhile) has no file lines."""

    def __init__(self) -> None:
        self._lines: dict[str, dict[int, list[int]]] = {}

    def line(self, path: str, cell: int, row: int) -> int | None:
        if path not in self._lines:
            try:
                with open(path, encoding="utf-8", errors="replace") as handle:
                    self._lines[path] = source_lines(handle.read())
            except OSError:
                self._lines[path] = {}
        return file_line(self._lines[path], cell, row)
