"""What the command-line runners (``python -m mrflib sweep`` and ``paper``) share: a failure
is ONE line on stderr naming the file or the option, exit status 2; ``--debug`` shows the
traceback instead.

The runners check everything before they run (:func:`check_folder`, :func:`connect` and the
notebook checks of :mod:`mrflib.sweep`), so a bad argument costs nothing; what still fails
later (a disk that fills up) is reported the same way.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any, NoReturn

__all__ = ["Parser", "fail", "one_line", "check_folder", "connect"]


class Parser(argparse.ArgumentParser):
    """``argparse`` with a ``--debug`` flag and one-line usage errors."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.add_argument("--debug", action="store_true",
                          help="show the Python traceback of a failure")

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {one_line(message)} (see --help)\n")


def one_line(err: BaseException | str) -> str:
    """The message of ``err`` on one line; an ``OSError`` names its file."""
    if isinstance(err, OSError) and err.filename is not None:
        text = f"{err.filename}: {err.strerror or err}"
    elif isinstance(err, BaseException):
        text = str(err) or type(err).__name__
        if not isinstance(err, ValueError):
            text = f"{type(err).__name__}: {text}"
    else:
        text = err
    return " ".join(text.split())


def fail(ap: argparse.ArgumentParser, err: BaseException, debug: bool) -> NoReturn:
    """Exit with ``err`` as one line on stderr (status 2), or re-raise it with ``debug``."""
    if debug:
        raise err
    ap.exit(2, f"{ap.prog}: error: {one_line(err)}\n")


def check_folder(folder: Any, what: str) -> Path:
    """``folder`` as a :class:`~pathlib.Path` the run can create and write into.

    Refused with a ``ValueError`` naming ``what``: an empty path (it would mean the current
    folder), a path whose nearest existing part is a file, and a folder in which no file can
    be created (probed with an unnamed temporary file, which leaves nothing behind).
    """
    if not isinstance(folder, (str, Path)) or not str(folder):
        raise ValueError(f"{what} must name a folder, got {folder!r}")
    folder = Path(folder)
    level = next(p for p in (folder, *folder.resolve().parents) if p.exists())
    if not level.is_dir():
        raise ValueError(f"{what}: {str(level)!r} is a file, but {str(folder)!r} must be a "
                         "folder; move the file away or choose another folder")
    try:
        with tempfile.TemporaryFile(dir=level):
            pass
    except OSError as err:
        raise ValueError(f"{what}: cannot write in {str(level)!r} ({err.strerror or err})"
                         ) from None
    return folder


def connect(scheduler: Any, what: str = "scheduler", timeout: float = 10.0) -> Any:
    """A ``distributed.Client`` of the scheduler at address ``scheduler`` (a string), or
    a ``ValueError`` naming ``what`` when none answers within ``timeout`` seconds."""
    from mrflib._support.executor import dask_client_class

    try:
        return dask_client_class()(scheduler, timeout=timeout)
    except Exception as err:  # noqa: BLE001 - any failure to connect is the same message
        raise ValueError(f"{what} {scheduler!r}: no Dask scheduler answers there "
                         f"({one_line(err)})") from None
