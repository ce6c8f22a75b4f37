"""LAPACK's ``dgesv`` called from numba kernels without numba's generic ``np.linalg.solve``.

numba's ``np.linalg.solve`` calls LAPACK's ``dgesv`` (scipy's ``cython_lapack``, through
numba's C helper ``numba_xgesv``) on a Fortran-order copy of the matrix, but compiling it
pulls in its general shape checks and error formatting, several seconds on a kernel's first
call. :func:`solve_symmetric` makes the same call through the same helper on a C-order copy,
which for a symmetric matrix holds the same bytes as the Fortran-order copy: the same LAPACK
call on the same memory, so the same bits, and the same ``LinAlgError`` messages for a
matrix with an infinite or NaN entry and for a singular one. The helper is reached by its
symbol name, so a kernel calling it stays cacheable (a ctypes function pointer would make
it uncacheable).
"""

from __future__ import annotations

import numpy as np
from numba import njit, types
from numba.np.linalg import F_INT_nbtype, F_INT_nptype

__all__ = ["solve_symmetric"]

# numba's C helper around ``?gesv``: (kind, n, nrhs, a, lda, ipiv, b, ldb) -> info
_xgesv = types.ExternalFunction("numba_xgesv", types.intc(
    types.char, types.intp, types.intp, types.CPointer(types.float64), types.intp,
    types.CPointer(F_INT_nbtype), types.CPointer(types.float64), types.intp))
_DOUBLE = ord("d")  # the helper's kind code of float64


@njit(cache=True, nogil=True)
def _finite(A, b):  # pragma: no cover - numba
    """Whether every entry of ``A (n, n)`` and ``b (n,)`` is finite."""
    for i in range(b.shape[0]):
        if not np.isfinite(b[i]):
            return False
        for j in range(A.shape[1]):
            if not np.isfinite(A[i, j]):
                return False
    return True


@njit(cache=True, nogil=True)
def _alive(a, b, c):  # pragma: no cover - numba
    """A use of the copies after the LAPACK call, so that none is freed before it."""
    return a.size + b.size + c.size


@njit(cache=True, nogil=True)
def solve_symmetric(A, b):  # pragma: no cover - numba
    """``x`` with ``A x = b`` for a symmetric float64 ``A (n, n)`` (C-contiguous) and ``b
    (n,)``, LU with partial pivoting (``dgesv``), bit for bit numba's
    ``np.linalg.solve(A, b)``. ``A`` and ``b`` are not changed.

    Raises ``np.linalg.LinAlgError`` ("Array must not contain infs or NaNs.") when an entry
    of ``A`` or ``b`` is not finite, and ("Matrix is singular to machine precision.") when
    ``dgesv`` finds ``A`` singular, as numba's solve does.
    """
    if not _finite(A, b):
        raise np.linalg.LinAlgError("Array must not contain infs or NaNs.")
    n = A.shape[0]
    lu = A.copy()  # C order: the Fortran-order copy of a symmetric matrix, byte for byte
    x = b.copy()
    if n == 0:
        return x
    ipiv = np.empty(n, dtype=F_INT_nptype)
    info = _xgesv(_DOUBLE, n, 1, lu.ctypes, n, ipiv.ctypes, x.ctypes, n)
    _alive(lu, x, ipiv)
    if info != 0:  # info < 0 (a bad argument) cannot happen with these arguments
        raise np.linalg.LinAlgError("Matrix is singular to machine precision.")
    return x

