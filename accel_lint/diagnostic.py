"""What `check` reports for a file, positioned: the values every output format,
the cache and the fixer's summary read. Nothing here needs a parse."""

from __future__ import annotations

from dataclasses import dataclass

PARSE_ERROR = "ACL000"
PARSE_ERROR_NAME = "parse-error"


@dataclass(frozen=True)
class Edit:
    content: str
    row: int
    column: int
    end_row: int
    end_column: int
    cell: int | None = None  # in a notebook: the cell (1-based) the rows count in


@dataclass(frozen=True)
class FixView:
    applicability: str  # "safe" | "unsafe"
    message: str
    edits: tuple[Edit, ...]


@dataclass(frozen=True)
class Diagnostic:
    code: str
    name: str
    message: str
    filename: str
    row: int
    column: int
    end_row: int
    end_column: int
    fix: FixView | None = None  # with edits, for json/sarif
    has_fix: bool = False
    fix_safety: str | None = None  # "safe" / "unsafe" when a fix is offered
    fix_message: str | None = None
    no_fix_reason: str | None = None  # why a rule that can fix does not fix this one
    cell: int | None = None  # in a notebook: the cell (1-based, all cells counted) of `row`

    @property
    def location(self) -> str:
        """`train.py:12:9`, or ruff's `nb.ipynb:cell 3:2:5` in a notebook."""
        cell = "" if self.cell is None else f"cell {self.cell}:"
        return f"{self.filename}:{cell}{self.row}:{self.column}"

    @property
    def full_message(self) -> str:
        """The message as every format shows it: with the reason a fix is missing."""
        if self.no_fix_reason is None:
            return self.message
        return f"{self.message} (no fix: {self.no_fix_reason})"


def parse_error(path: str, message: str, row: int = 1, column: int = 1) -> Diagnostic:
    return Diagnostic(PARSE_ERROR, PARSE_ERROR_NAME, message, path, row, column, row, column)
