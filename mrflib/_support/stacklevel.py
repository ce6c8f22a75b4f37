"""The ``stacklevel`` of a warning that names the user's call, however deep the library.

A warning raised inside an engine is most useful pointing at the line of the user's code
that led to it (the call of :func:`mrflib.exact.marginals`, of a learner...), not at the
library's inner frame: :func:`user_stacklevel` counts the frames up to the first one
outside mrflib.
"""

from __future__ import annotations

import contextlib
import os
import sys
from pathlib import Path

__all__ = ["user_stacklevel"]

#: Files whose frames a warning skips to reach the user's call: the package and the
#: context managers it enters.
_INSIDE = (str(Path(__file__).resolve().parents[1]) + os.sep, contextlib.__file__)


def user_stacklevel() -> int:
    """The ``stacklevel`` of :func:`warnings.warn`, called by the function that calls this
    one, that names the first frame outside mrflib: the user's call.

    Returns
    -------
    int
        ``1`` for the calling function's own frame, plus one per frame of mrflib (or of
        :mod:`contextlib`) above it.
    """
    frame, level = sys._getframe(1), 1
    while frame is not None and frame.f_code.co_filename.startswith(_INSIDE):
        frame, level = frame.f_back, level + 1
    return level
