"""Numba kernels of :mod:`mrflib.models.graphs` (behind :class:`mrflib.models.graphs.Graph`).

``g`` is the graph's :class:`mrflib.models.graphs.Structure` record (``graph.structure``).
"""

from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True, nogil=True)
def one_neighbourhoods(g, q_ptr, q_nodes):
    """A_Q = Q ∪ neighbours of Q (Definition 7) for every clique; CSR output, sorted rows."""
    indptr, indices = g.indptr, g.indices
    C = len(q_ptr) - 1
    total = 0
    for c in range(C):
        for p in range(q_ptr[c], q_ptr[c + 1]):
            u = q_nodes[p]
            total += 1 + indptr[u + 1] - indptr[u]
    out = np.empty(total, np.int64)
    a_ptr = np.zeros(C + 1, np.int64)
    pos = 0
    for c in range(C):
        start = pos
        for p in range(q_ptr[c], q_ptr[c + 1]):
            u = q_nodes[p]
            out[pos] = u
            pos += 1
            for t in range(indptr[u], indptr[u + 1]):
                out[pos] = indices[t]
                pos += 1
        seg = np.sort(out[start:pos])
        m = 0
        for t in range(len(seg)):
            if t == 0 or seg[t] != seg[t - 1]:
                out[start + m] = seg[t]
                m += 1
        pos = start + m
        a_ptr[c + 1] = pos
    return a_ptr, out[:pos].copy()
