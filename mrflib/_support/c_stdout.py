"""The standard output of compiled code sent elsewhere for the length of a call.

Some solvers the library calls write to the process's standard output from C or C++
(``printf``, ``std::cout``), whatever their verbosity: d4 prints its statistics on every
count. Python's ``sys.stdout`` does not see those writes, so redirecting it does nothing;
:func:`silenced` points file descriptor 1 itself at ``/dev/null`` while the call runs and
restores it after, so a user's terminal, a notebook's cell or a pipe holding the solver's
answers gets none of it.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import sys
from collections.abc import Iterator

__all__ = ["silenced"]


@contextlib.contextmanager
def silenced() -> Iterator[None]:
    """File descriptor 1 on ``/dev/null`` within the block, restored on the way out.

    Python's own buffered output is flushed first, so nothing written before the block is
    lost or lands after it.

    Yields
    ------
    None
    """
    with contextlib.suppress(ValueError, OSError, AttributeError):  # closed or replaced
        sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no descriptor 1 at all: nothing to silence
        yield
        return
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        os.dup2(null, 1)
        yield
    finally:
        # the C library buffers its own stdout: flushed into /dev/null, not after restore
        with contextlib.suppress(OSError, AttributeError):
            ctypes.CDLL(None).fflush(None)
        os.dup2(saved, 1)
        os.close(saved)
        os.close(null)
