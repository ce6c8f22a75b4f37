"""Numba kernel shared by the samplers and estimators: local fields tabulated over the
spin configurations of each node's neighbours.

For a node ``i`` of degree ``d`` the local field ``h_i = b_i + Σ_j J_ij x_j`` takes at
most ``2^d`` values, one per configuration of its neighbours. Bit ``q`` of a
configuration index is set when the ``q``-th neighbour (in CSR order) is ``+1``; the
sum runs in CSR order, the same order as a direct evaluation, so a table entry has the
same bits as the field computed from a sample.
"""

from __future__ import annotations

import numpy as np
from numba import njit

__all__ = ["neighbour_fields"]


@njit(cache=True)
def neighbour_fields(bias, indptr, weights, use):  # pragma: no cover - numba
    """Offsets ``(n,)`` (-1 where ``use[i]`` is false) and the table of ``h_i(cfg)``;
    node ``i``'s entries are ``h[off[i]:off[i] + 2^deg(i)]``."""
    n = bias.shape[0]
    off = np.empty(n, dtype=np.int64)  # not np.full: one generic less to compile
    size = 0
    for i in range(n):
        off[i] = -1
        if use[i]:
            off[i] = size
            size += 1 << (indptr[i + 1] - indptr[i])
    h = np.empty(size)
    for i in range(n):
        if off[i] < 0:
            continue
        d = indptr[i + 1] - indptr[i]
        for cfg in range(1 << d):
            g = bias[i]
            for q in range(d):
                g += weights[indptr[i] + q] * (2.0 * ((cfg >> q) & 1) - 1.0)
            h[off[i] + cfg] = g
    return off, h
