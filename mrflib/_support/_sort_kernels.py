"""A sort of int64 arrays for numba kernels, without numba's generic sort.

Sorted integers are the same whatever the algorithm, and ``np.sort`` inside a kernel
compiles numba's generic quicksort (seconds on a kernel's first call). :func:`sort_int64`
is a least-significant-digit radix sort, one stable counting pass per byte: ``O(N)`` per
pass, a few small loops to compile.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["sort_int64"]


@njit(cache=True, nogil=True)
def sort_int64(a):  # pragma: no cover - numba
    """A sorted copy of the int64 array ``a (N,)`` (``a`` is not changed), as ``np.sort``.

    Bytes from the least significant, each pass stable; the passes stop after the highest
    nonzero byte of the largest entry when none is negative, else the eighth pass orders
    the sign."""
    n = a.shape[0]
    src = a.copy()
    dst = np.empty(n, dtype=np.int64)
    top = 0
    negative = False
    for i in range(n):
        if src[i] > top:
            top = src[i]
        if src[i] < 0:
            negative = True
    count = np.empty(257, dtype=np.int64)
    shift = 0
    while shift < 64 and (negative or (top >> shift) > 0):
        flip = 128 if shift == 56 else 0  # the sign byte: negatives first
        for b in range(257):
            count[b] = 0
        for i in range(n):
            count[(((src[i] >> shift) & 255) ^ flip) + 1] += 1
        for b in range(256):
            count[b + 1] += count[b]
        for i in range(n):  # stable: equal digits keep the previous passes' order
            d = ((src[i] >> shift) & 255) ^ flip
            dst[count[d]] = src[i]
            count[d] += 1
        src, dst = dst, src
        shift += 8
    return src
