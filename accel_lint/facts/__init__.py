"""Whole-file facts and the analyses several rules share, computed once per file
and asked, not rebuilt (see `file.FileFacts`)."""

from accel_lint.facts.file import (
    ArgparseOption,
    CallSite,
    FileFacts,
    Guard,
    KwargsDict,
    conditions,
    is_exit_statement,
)
from accel_lint.facts.literals import int_value, is_literal, string_value

__all__ = [
    "ArgparseOption",
    "CallSite",
    "FileFacts",
    "Guard",
    "KwargsDict",
    "conditions",
    "int_value",
    "is_exit_statement",
    "is_literal",
    "string_value",
]
