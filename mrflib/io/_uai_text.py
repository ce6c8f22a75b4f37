"""The text of a UAI file (:mod:`mrflib.io.uai`): read within the memory, split into tokens
with a cursor whose errors name the file and the place, and written atomically.

:func:`read_text` reads a plain or gzip-compressed file (told by its first bytes) and
refuses, before the text is split, one whose tokens would not fit in memory (a gzip bomb
before it is inflated). :class:`Tokens` holds the tokens, comments removed, with a cursor:
its integers and the decimals of :func:`number` refuse what the format does not allow,
naming the line and token. :func:`write_text` writes atomically, gzip when the name ends in
``.gz``.

The models, evidence and answer files share this text layer and differ only in what the
tokens mean, which :mod:`mrflib.io.uai` reads and writes.
"""

from __future__ import annotations

import gzip
import io as io_module
import math
import os
import re
import zlib
from pathlib import Path
from typing import Any

import numpy as np

from mrflib._support.files import atomic_write
from mrflib._support.validation import available_memory, check_path, require_memory

__all__ = ["PathLike", "INT64_MAX", "DECIMAL", "DECIMAL_WHAT", "file_path", "read_text",
           "Tokens", "number", "write_text"]

_GZIP_MAGIC = b"\x1f\x8b"
_TOKEN = re.compile(r"\S+")
#: A comment: ``#`` to the end of its line (pyAgrum writes them; no token holds a ``#``).
_COMMENT = re.compile(r"#[^\n]*")
#: A scope line as pyAgrum's ``saveBN`` writes it: size and variables, then ``# name``.
_PYAGRUM_SCOPE = re.compile(r"^[ \t]*\d+(?:[ \t]+\d+)+[ \t]+#[^\n]*$", re.M)
#: Bytes a token costs once split (a ``str`` object and its list slot), for the memory check.
_TOKEN_BYTES = 64
#: Bytes that may end a token for ``str.split``: ASCII whitespace (form feeds and the
#: separators 0x1c-0x1f too) and the first byte of every other Unicode space in UTF-8
#: (U+0085, U+00A0, U+1680, U+2000-U+205F, U+3000), so the token count is a bound.
_SPLIT_BYTES = [9, 10, 11, 12, 13, 28, 29, 30, 31, 32, 0xC2, 0xE1, 0xE2, 0xE3]
#: The largest integer a file may hold (its numbers are stored as int64).
INT64_MAX = 2**63 - 1
#: A number as the format writes it: ASCII decimal digits, an optional point and exponent
#: (``inf`` and ``nan`` pass, to be refused by value with the range they are out of).
DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?"
                     r"|[+-]?(?:inf|infinity|nan)", re.IGNORECASE)
#: What the errors call a :data:`DECIMAL` token.
DECIMAL_WHAT = "a decimal number in ASCII digits (such as 0.25 or 1e-3)"

#: A file's path as the readers and writers take it.
PathLike = str | os.PathLike


def file_path(path: Any, what: str, exists: bool = False) -> Path:
    """``path`` as a :class:`~pathlib.Path` naming a file: ``""`` is refused (``Path("")``
    is the current folder, so it was reported as "'.' cannot be read")."""
    if isinstance(path, str) and not path:
        raise ValueError(f"{what} must name a file, got an empty string")
    return check_path(path, what, exists=exists)


def read_text(path: PathLike, what: str = "path") -> str:
    """The file's text, gunzipped when it starts with gzip's magic bytes (``what``: the
    argument that named the file)."""
    path = file_path(path, what, exists=True)
    name = os.fspath(path)
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except OSError as err:  # a folder, no permission, an I/O error
        raise ValueError(f"{what} {name!r} cannot be read: {err.strerror or err}") from None
    if data[:2] == _GZIP_MAGIC:
        data = _gunzip(data, name)
    # Splitting makes one str object per token: refuse before that if it cannot fit.
    blanks = int(np.bincount(np.frombuffer(data, np.uint8), minlength=256)[_SPLIT_BYTES].sum())
    require_memory(_TOKEN_BYTES * (blanks + 1) + 2 * len(data),
                   f"{name}: the tokens of its {len(data)} bytes")
    try:
        return data.decode("utf-8-sig")  # a byte-order mark some editors write is skipped
    except UnicodeDecodeError as err:
        raise ValueError(f"{name}: byte {err.start} is not text (UTF-8 or ASCII expected)"
                         ) from None


def _gunzip(data: bytes, name: str, chunk: int = 2**24) -> bytes:
    """Decompress in chunks, refusing (through :func:`require_memory`) as soon as the text
    read so far, with its tokens, could not fit: a small file that inflates to gigabytes
    (a gzip bomb) is refused before it is held in memory."""
    have = available_memory()
    parts, total = [], 0
    try:
        with gzip.GzipFile(fileobj=io_module.BytesIO(data)) as fh:
            while part := fh.read(chunk):
                parts.append(part)
                total += len(part)
                require_memory(4.0 * total, f"{name}: its text, more than {total} bytes once "
                               "decompressed, with its tokens", limit=have)
    except (OSError, EOFError, zlib.error) as err:
        raise ValueError(f"{name}: not a readable gzip file ({err})") from None
    return b"".join(parts)


class Tokens:
    """A file's whitespace-separated tokens with a cursor; errors name the file and line."""

    def __init__(self, path: PathLike, what: str = "path") -> None:
        self.name = os.fspath(file_path(path, what))
        text = read_text(path, what)
        # a comment goes, its line end stays: line numbers still count the comment lines
        self.text = _COMMENT.sub("", text) if "#" in text else text
        #: scope lines ending in a ``# name`` comment (pyAgrum's signature)
        self.named_scopes = len(_PYAGRUM_SCOPE.findall(text)) if "#" in text else 0
        self.tokens = self.text.split()
        self.pos = 0
        self.hint = ""  # what every later error adds (the header's counts, once read)

    def remaining(self) -> int:
        return len(self.tokens) - self.pos

    def line(self, i: int) -> int:
        """Line number (from 1) of token ``i``, or of the file's last line for the end."""
        if i >= len(self.tokens):
            return self.text.rstrip().count("\n") + 1
        for k, m in enumerate(_TOKEN.finditer(self.text)):
            if k == i:
                return self.text.count("\n", 0, m.start()) + 1
        raise AssertionError("token index past the text")  # pragma: no cover

    def place(self, i: int) -> str:
        if i >= len(self.tokens):
            return f"end of file (after line {self.line(i)})"
        tok = self.tokens[i]  # a token of 5000 digits is shown by its start
        shown = repr(tok) if len(tok) <= 40 else f"{tok[:30]!r}... ({len(tok)} characters)"
        return f"line {self.line(i)}, token {shown}"

    def error(self, i: int, expected: str) -> ValueError:
        return ValueError(f"{self.name}: {self.place(i)}: expected {expected}{self.hint}")

    def word(self, expected: str) -> str:
        if self.pos >= len(self.tokens):
            raise self.error(self.pos, expected)
        self.pos += 1
        return self.tokens[self.pos - 1]

    def integer(self, expected: str, minimum: int = 0) -> int:
        """The next token as an integer ``>= minimum`` (digits only) that fits in int64
        (cardinalities, variables and states are stored as int64)."""
        i = self.pos
        tok = self.word(expected)
        if not (tok.isascii() and tok.isdigit()):
            raise self.error(i, expected)
        # by length first, without the leading zeros: int() refuses more than 4300 digits
        digits = tok.lstrip("0") or "0"
        if len(digits) > len(str(INT64_MAX)) or int(digits) > INT64_MAX:
            raise self.error(i, f"{expected}, at most {INT64_MAX} (int64)")
        if int(digits) < minimum:
            raise self.error(i, expected)
        return int(digits)

    def need(self, count: int, expected: str, declared: int | None = None) -> None:
        """Refuse a declared count that the rest of the file cannot hold (``declared``: the
        index of the token that declared it)."""
        if count > self.remaining():
            where = "" if declared is None else f", declared on line {self.line(declared)}"
            raise ValueError(f"{self.name}: {self.place(len(self.tokens))}: expected "
                             f"{expected}{where}; the file is truncated ({self.remaining()} "
                             f"tokens left){self.hint}")

    def end(self, after: str) -> None:
        if self.pos < len(self.tokens):
            raise self.error(self.pos, f"the end of the file after {after}")


def number(tok: Tokens, expected: str, lowest: float = 0.0) -> float:
    i = tok.pos
    token = tok.word(expected)
    if not DECIMAL.fullmatch(token):  # float() also reads '1_0', '١' and '１'
        raise tok.error(i, f"{expected}, as {DECIMAL_WHAT}")
    v = float(token)
    if math.isnan(v) or v == math.inf or v < lowest:
        raise tok.error(i, expected)
    return v


def write_text(path: PathLike, text: str) -> None:
    path = file_path(path, "path")
    data = text.encode("ascii")
    if os.fspath(path).endswith(".gz"):
        data = gzip.compress(data, mtime=0)  # no time stamp: same model, same bytes
    try:
        atomic_write(Path(path), data)
    except ValueError as err:
        raise ValueError(f"path {err}") from None
    except OSError as err:  # no such folder, no permission, a full disk
        raise ValueError(f"path {os.fspath(path)!r} cannot be written: "
                         f"{err.strerror or err}") from None
