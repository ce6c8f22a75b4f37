"""Where numba caches mrflib's compiled kernels, decided before numba is imported.

Every kernel is compiled with ``cache=True``. numba caches beside the source
(``mrflib/__pycache__``) or in the user's cache folder (``~/.cache/numba``, or
``$XDG_CACHE_HOME/numba``), and when it can write neither (an install folder owned by root
and a ``$HOME`` that is not writable or does not exist) it refuses every cached kernel at
import with ``RuntimeError: cannot cache function ...: no locator available``, so the
library could not even be imported. :func:`ensure_cache_dir` (run by ``import mrflib``,
at the cost of one temporary file) checks both places and, when neither can be written and
``NUMBA_CACHE_DIR`` is not set, points ``NUMBA_CACHE_DIR`` at a private folder in the
temporary directory (created ``0700``; an existing one must be the user's own and writable
by nobody else, else a fresh one is made) and says so in one line on stderr. The package's
folder stands for its sub-folders: they are installed with the same owner.
"""

from __future__ import annotations

import os
import stat
import sys
import tempfile

__all__ = ["ensure_cache_dir"]


def _writable(folder: str) -> bool:
    """True when a file can be created in ``folder`` (made if missing), as numba tests it."""
    try:
        os.makedirs(folder, exist_ok=True)
        tempfile.TemporaryFile(dir=folder).close()
    except OSError:
        return False
    return True


def _user_cache_dir() -> str:
    """numba's user-wide cache folder (imports numba's small ``appdirs`` helper)."""
    from numba.misc.appdirs import AppDirs

    return AppDirs(appname="numba", appauthor=False).user_cache_dir


def _private_temp_dir() -> str | None:
    """A folder in the temporary directory only this user can write, or None."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    name = f"mrflib-numba-cache-{'user' if uid is None else uid}"
    path = os.path.join(tempfile.gettempdir(), name)
    try:
        os.makedirs(path, mode=0o700, exist_ok=True)
        st = os.lstat(path)
        # another user's folder (or one others may write) could hold planted cache files
        if (not stat.S_ISDIR(st.st_mode) or (uid is not None and st.st_uid != uid)
                or st.st_mode & 0o022):
            path = tempfile.mkdtemp(prefix="mrflib-numba-cache-")
    except OSError:
        return None
    return path if _writable(path) else None


def ensure_cache_dir(package_dir: str) -> str | None:
    """Make numba's cache writable for the kernels under ``package_dir``: returns the
    fallback folder it chose (after one line on stderr), or None when numba can cache
    where it would anyway (or ``NUMBA_CACHE_DIR`` is set)."""
    if os.environ.get("NUMBA_CACHE_DIR") or _writable(os.path.join(package_dir, "__pycache__")):
        return None
    user = _user_cache_dir()
    if _writable(user):
        return None
    fallback = _private_temp_dir()
    where = f"{os.path.join(package_dir, '__pycache__')} nor {user}"
    if fallback is None:
        _say(f"mrflib: warning: numba can write neither {where} nor a temporary folder: set "
             "NUMBA_CACHE_DIR to a writable folder")
        return None
    os.environ["NUMBA_CACHE_DIR"] = fallback
    config = sys.modules.get("numba.core.config")
    if config is not None:  # numba already imported: it read the variable already
        config.CACHE_DIR = fallback
    _say(f"mrflib: numba cannot write {where}; its compiled kernels are cached in {fallback}")
    return fallback


def _say(line: str) -> None:
    if sys.stderr is not None:
        print(line, file=sys.stderr)
