"""Small memory pages for the exact engine's large tables.

numpy asks the kernel for transparent huge pages (``madvise(MADV_HUGEPAGE)``) on every array
of 4 MiB or more. The exact engine makes and frees clique tables of up to gigabytes at each
step of its passes, and every new table is faulted in afresh. Where the kernel compacts
memory to find huge pages for such requests (transparent huge pages with ``defrag`` set to
``madvise``, a common default) or zeroes them slowly (under a hypervisor), the faults cost
more than the arithmetic: on this project's 2-core Linux virtual machine, ``perf`` put 46% of
the exact marginals of UAI 2014's ``Promedus_18`` in the kernel's zeroing of huge pages, and
with small pages (best of two runs, alternating) those marginals took 13.3 s against 17.1 s,
``DBN_16``'s 5.2 s against 7.2 s and ``Promedus_19``'s 30 s against 36 s; ``Pedigree_11``
(tables of 32 MiB) and weighted mini-bucket (tables made once, reused by every pass) did not
change.

:func:`small_pages` turns numpy's request off for the duration of a call (a context manager,
or a decorator), unless the environment variable ``NUMPY_MADVISE_HUGEPAGE`` is set: then
numpy does as the user told it. Answers do not depend on it.
"""

from __future__ import annotations

import contextlib
import importlib
import os
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["ENV", "small_pages"]

#: numpy's own switch; when set, :func:`small_pages` leaves numpy as configured.
ENV = "NUMPY_MADVISE_HUGEPAGE"


def _find_setter() -> Callable[[bool], Any] | None:
    """numpy's ``_set_madvise_hugepage`` (it returns the previous setting), if it has one."""
    for name in ("numpy._core.multiarray", "numpy.core.multiarray"):
        try:
            module = importlib.import_module(name)
        except ImportError:
            continue
        setter = getattr(module, "_set_madvise_hugepage", None)
        if setter is not None:
            return setter
    return None


_SETTER = _find_setter()


@contextlib.contextmanager
def small_pages() -> Iterator[None]:
    """numpy allocates without asking for huge pages inside the block (see the module's
    text); the previous setting is restored on leaving it."""
    if _SETTER is None or ENV in os.environ:
        yield
        return
    previous = _SETTER(False)
    try:
        yield
    finally:
        _SETTER(bool(previous))
