"""A file's bytes to text and back, and CPython's own syntax check: everything the
linter does before it needs libcst (a file that mentions no rule's trigger word is
checked with these alone)."""

from __future__ import annotations

import ast
import codecs
import io
import re
import symtable
import threading
import tokenize
import warnings
from dataclasses import dataclass

_SKIP_FILE = re.compile(
    rb"^[ \t]*#[ \t]*accel-lint:[ \t]*skip-file[ \t]*$", re.MULTILINE | re.IGNORECASE
)


class DecodeError(Exception):
    pass


@dataclass
class Source:
    """A file's text and what is needed to write it back byte for byte."""

    text: str
    encoding: str  # codec name; "utf-8-sig" keeps a BOM

    def encode(self, text: str) -> bytes:
        return text.encode(self.encoding)


def decode(data: bytes) -> Source:
    """Decode by BOM and PEP 263 cookie; anything else must be valid UTF-8."""
    try:
        encoding, _ = tokenize.detect_encoding(io.BytesIO(data).readline)
    except SyntaxError as exc:
        if "invalid or missing encoding declaration" not in str(exc):
            raise DecodeError(str(exc)) from None
        encoding = "utf-8"  # no cookie and not UTF-8: say which byte is wrong below
    try:
        text = data.decode(encoding)
    except UnicodeDecodeError as exc:
        if encoding in ("utf-8", "utf-8-sig"):
            raise DecodeError(
                f"not valid UTF-8 (byte 0x{data[exc.start]:02x} at offset {exc.start}); "
                "declare the file's encoding with a `# -*- coding: ... -*-` comment"
            ) from None
        raise DecodeError(f"cannot be decoded as {encoding}: {exc.reason}") from None
    except LookupError:
        raise DecodeError(f"unknown encoding {encoding!r}") from None
    if encoding == "utf-8" and data.startswith(codecs.BOM_UTF8):
        encoding = "utf-8-sig"
    return Source(text, encoding)


def skip_file(data: bytes) -> bool:
    return b"accel-lint" in data and _SKIP_FILE.search(data) is not None


# CPython 3.11 keeps the depth counter of its tree conversion in one global: two
# threads converting at once (verify computes fixes in a second thread) can fail with
# "SystemError: AST constructor recursion depth mismatch", so one converts at a time
_CPYTHON_AST = threading.Lock()


def cpython_ast(text: str, filename: str = "<unknown>", mode: str = "exec") -> ast.AST:
    """`compile(..., PyCF_ONLY_AST)`, one thread at a time; every CPython parse of the
    package goes through here. SyntaxWarnings ("is" with a literal...) are not ours
    to print."""
    with _CPYTHON_AST, warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return compile(text, filename, mode, flags=ast.PyCF_ONLY_AST, dont_inherit=True)


def compile_ast(text: str, path: str) -> ast.Module:
    """CPython's parse of `text`; raises SyntaxError (or ValueError, RecursionError,
    MemoryError for what CPython cannot even tokenize or nest)."""
    tree = cpython_ast(text, path)
    assert isinstance(tree, ast.Module)
    return tree


def syntax_check(path: str, text: str) -> str | None:
    """CPython's verdict on `text`: None when it parses, else the message. A text
    `symtable` accepts needs no tree: it runs the same parser, and builds none of
    the tree's Python objects (most of the cost). It also rejects what the parser
    accepts (a duplicate argument, `nonlocal` at module level): then, and for a
    real error, the tree is built for CPython's own verdict and message."""
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            symtable.symtable(text, path, "exec")
        return None
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        pass
    try:
        compile_ast(text, path)
    except (SyntaxError, ValueError) as exc:
        return str(exc)
    except (RecursionError, MemoryError):
        return "too complex"
    return None
