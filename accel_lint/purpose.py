"""What a file is for, read from its path alone (no libcst: the rule table asks it
before a file is parsed, and the rules ask it again)."""

from __future__ import annotations

import re
from pathlib import PurePath

# Files (and functions) whose purpose is to check or measure.
CHECKING = re.compile(r"^test_|debug|anomal|profil|check|bench", re.IGNORECASE)


def is_test_or_check_file(path: str) -> bool:
    """A test (`test_*.py`, `*_test.py`, `conftest.py`, anything under `tests/`), or
    a file named for checking, debugging, profiling or benchmarking. An empty path
    (standard input, an unsaved document) is neither."""
    if not path:
        return False
    pure = PurePath(path)
    name = pure.name
    if name.startswith("test_") or name.endswith("_test.py") or name == "conftest.py":
        return True
    if any(part in ("tests", "test") for part in pure.parts[:-1]):
        return True
    return bool(CHECKING.search(pure.stem))
