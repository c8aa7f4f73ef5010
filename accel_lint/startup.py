"""The compiled methods of dataclasses, kept across runs like Python's bytecode.

`@dataclass` writes each class's methods (`__init__`, `__repr__`, `__eq__`; a frozen
class also `__setattr__`, `__delattr__`, `__hash__`) as source text and compiles it
with `exec`: about 0.2 ms a method. `accel-lint check` of one file creates 255
dataclasses (196 of them libcst's nodes), 1,143 methods: 0.24 s, half of its
imports, more than the parse of a training script. The text of each method
depends only on its class's fields, so its compiled code is the same in every run:
`install` makes `dataclasses` compile through a table of code objects read from
`__pycache__/dataclass-methods.<cache tag>.bin` beside this module, and the table
is written again at exit when the run compiled a text it did not hold (never when
Python writes no bytecode either: `PYTHONDONTWRITEBYTECODE`, `-B`). The `__init__`
that `parse.py` gives libcst's node classes compiles through the same table
(`execute`): its text too depends only on the fields.

Only the command line installs it (`cli.main`), never an import of the package: the
verifier's children run the user's script, and its dataclasses are not ours to
cache. A text is compiled exactly as `exec` would compile it in `dataclasses`
(no inherited `__future__` flags), and a table that cannot be read or was written
by another Python is ignored.
"""

from __future__ import annotations

import atexit
import builtins
import dataclasses
import marshal
import os
import sys
from contextlib import suppress
from pathlib import Path
from types import CodeType
from typing import Any

_MAGIC = b"accel-lint dataclass methods 1\n" + sys.version.encode() + b"\n"
# a table grown past this (methods of classes since uninstalled) starts over
_MAX_ENTRIES = 20_000
_codes: dict[str, CodeType] = {}
_compiled = 0  # texts compiled in this run that the table did not hold


def table_path() -> Path:
    tag = sys.implementation.cache_tag or "none"
    return Path(__file__).parent / "__pycache__" / f"dataclass-methods.{tag}.bin"


def _exec(source: object, globals: Any = None, locals: Any = None, /) -> None:
    """`exec` for `dataclasses`: a text it wrote runs from its compiled code."""
    global _compiled
    if isinstance(source, str):
        code = _codes.get(source)
        if code is None:
            # as `exec` compiles a text in `dataclasses`: no future flags of ours
            code = compile(source, "<string>", "exec", dont_inherit=True)
            _codes[source] = code
            _compiled += 1
        source = code
    builtins.exec(source, globals, locals)  # type: ignore[arg-type]


def execute(text: str, namespace: dict[str, Any]) -> None:
    """`exec(text, namespace)` through the table: for a method whose text, like a
    dataclass's, depends only on what it is generated for (`parse._checked_inits`)."""
    _exec(text, namespace)


def install() -> None:
    """Read the table, and make `dataclasses` compile through it (once)."""
    if getattr(dataclasses, "exec", None) is _exec or sys.implementation.cache_tag is None:
        return
    _codes.update(_read(table_path()))
    dataclasses.exec = _exec  # type: ignore[attr-defined]
    atexit.register(save)


def _read(path: Path) -> dict[str, CodeType]:
    try:
        data = path.read_bytes()
    except OSError:
        return {}
    if not data.startswith(_MAGIC):
        return {}  # another Python's table: its code objects are not ours to run
    try:
        table = marshal.loads(data[len(_MAGIC) :])
    except (EOFError, ValueError, TypeError):
        return {}
    if not isinstance(table, dict):
        return {}
    return {k: v for k, v in table.items() if isinstance(k, str) and isinstance(v, CodeType)}


def save() -> None:
    """Write the table when this run compiled what it did not hold (atomically: a
    run reading it meanwhile sees the old table or the new one)."""
    global _compiled
    if not _compiled or sys.dont_write_bytecode:
        return
    path = table_path()
    temporary = path.with_name(f".{path.name}.{os.getpid()}")
    codes = _codes if len(_codes) <= _MAX_ENTRIES else {}
    try:
        path.parent.mkdir(exist_ok=True)
        temporary.write_bytes(_MAGIC + marshal.dumps(codes))
        os.replace(temporary, path)
    except (OSError, ValueError):
        with suppress(OSError):
            temporary.unlink()
        return  # a read-only install: every run compiles, as before
    _compiled = 0
