"""Numba kernels of the factor-graph elimination engine (:mod:`mrflib.elimination`).

``logsumexp_reduce`` sums the exponentials of a C-contiguous table over any set of its
axes in two streaming passes (the maximum of each output cell, then the shifted sum), with
no temporary as large as the table: numpy's ``log(sum(exp(a - max)))`` allocates two. The
input is walked in memory order; an odometer over the leading axes tracks the output cell,
the last axis is an inner loop with its own output stride. The plain numpy twin is
:func:`mrflib._factor_ops.logsumexp_numpy`; the tests compare both.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit


@njit(cache=True)
def _pass(flat, shape, ostride, mx, out, second):  # pragma: no cover - compiled
    nd = shape.shape[0]
    inner = shape[nd - 1]
    s_in = ostride[nd - 1]
    coord = np.zeros(nd, dtype=np.int64)
    off = 0
    i = 0
    total = flat.shape[0]
    while i < total:
        if second:
            for j in range(inner):
                o = off + j * s_in
                out[o] += math.exp(flat[i + j] - mx[o])
        else:
            for j in range(inner):
                o = off + j * s_in
                if flat[i + j] > mx[o]:
                    mx[o] = flat[i + j]
        i += inner
        d = nd - 2
        while d >= 0:
            coord[d] += 1
            off += ostride[d]
            if coord[d] < shape[d]:
                break
            off -= ostride[d] * shape[d]
            coord[d] = 0
            d -= 1


@njit(cache=True)
def logsumexp_reduce(flat, shape, ostride, out):  # pragma: no cover - compiled
    """``out[o] = log Σ exp(flat[i])`` over the entries ``i`` whose kept coordinates give
    cell ``o = Σ_d coord_d ostride_d`` (``ostride_d = 0`` on a reduced axis); ``-inf``
    where every term is ``-inf``."""
    mx = np.full(out.shape[0], -np.inf)
    _pass(flat, shape, ostride, mx, out, False)
    for o in range(out.shape[0]):
        if not np.isfinite(mx[o]):
            mx[o] = 0.0
        out[o] = 0.0
    _pass(flat, shape, ostride, mx, out, True)
    for o in range(out.shape[0]):
        out[o] = math.log(out[o]) + mx[o] if out[o] > 0.0 else -np.inf
