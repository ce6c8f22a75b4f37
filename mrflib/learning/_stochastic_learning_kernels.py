"""Numba kernel of the stochastic factor-graph learners
(:mod:`mrflib.learning.stochastic_learning`).

The factor marginals of a set of states (a chain set of PCD or CD) as one pass over the
rows: for every row and factor, the flat position of its entry in the concatenated tables
(``offsets[k] + Σ_a x_{S_k[a]} fstride[a]``, the layout of
:func:`mrflib.inference.sampling.chains.pack`) is counted. The plain numpy reference is
:func:`mrflib.learning._layout.data_marginals_numpy` (one ``bincount`` per
factor).
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange


@njit(cache=True)
def factor_counts(x, fptr, fvars, fstride, offsets, total):  # pragma: no cover - numba
    """Counts ``(total,)`` of every factor's states over the rows of ``x (M, n)``."""
    counts = np.zeros(total, dtype=np.int64)
    for r in range(x.shape[0]):
        for k in range(offsets.shape[0]):
            pos = offsets[k]
            for a in range(fptr[k], fptr[k + 1]):
                pos += x[r, fvars[a]] * fstride[a]
            counts[pos] += 1
    return counts


#: Factors per block of :func:`count_factors`: their tables stay in cache while every row
#: is counted, and the variables they read are a short window of each row.
FACTOR_BLOCK = 512


@njit(cache=True)
def count_factors(x, fptr, fvars, fstride, offsets, counts, k0, k1):  # pragma: no cover
    """Count the factors ``k0:k1`` over all rows of ``x`` into ``counts``, by blocks of
    :data:`FACTOR_BLOCK` consecutive factors: each block counts all rows, so its tables
    stay in cache and the variables it reads are a short window of each row. (Counting
    row by row over all factors scatters the increments over every table, one cache miss
    each on a large model.) The counts are integers, the same in any order. On one thread
    the caller runs it on all factors (its ``counts`` zeros from Python: a cold first call
    compiles no allocation), and :func:`factor_counts_blocked` on one block per task."""
    for b0 in range(k0, k1, FACTOR_BLOCK):
        b1 = b0 + FACTOR_BLOCK if b0 + FACTOR_BLOCK < k1 else k1
        for r in range(x.shape[0]):
            row = x[r]
            for k in range(b0, b1):
                # unsigned positions: no test for a negative index on every read
                pos = np.uint64(offsets[k])
                a = np.uint64(fptr[k])
                a1 = np.uint64(fptr[k + 1])
                while a < a1:
                    pos += np.uint64(row[np.uint64(fvars[a])]) * np.uint64(fstride[a])
                    a += np.uint64(1)
                counts[pos] += 1


@njit(cache=True, parallel=True)
def factor_counts_blocked(x, fptr, fvars, fstride, offsets, total):  # pragma: no cover
    """:func:`factor_counts` by blocks of :data:`FACTOR_BLOCK` consecutive factors, in
    parallel (:func:`count_factors` on each): each block counts all rows into its own
    tables, so every count is written by one thread only and the counts are
    :func:`factor_counts`'s whatever the threads."""
    F = offsets.shape[0]
    counts = np.zeros(total, dtype=np.int64)
    blocks = (F + FACTOR_BLOCK - 1) // FACTOR_BLOCK
    for c in prange(blocks):
        k0 = c * FACTOR_BLOCK
        count_factors(x, fptr, fvars, fstride, offsets, counts, k0,
                      min(F, k0 + FACTOR_BLOCK))
    return counts


@njit(cache=True)
def _count_site_major(xt, fptr, fvars, fstride, offsets, counts, k0, k1):  # pragma: no cover
    """Count the factors ``k0:k1`` over all chains of the site-major states ``xt (n, M)``
    into ``counts``: a factor's variables are rows of ``xt``, read in order."""
    M = xt.shape[1]
    for k in range(k0, k1):
        a0, a1 = fptr[k], fptr[k + 1]
        off = offsets[k]
        if a1 - a0 == 2:  # a pair: two rows, no loop over the scope
            ra, rb = xt[fvars[a0]], xt[fvars[a0 + 1]]
            sa, sb = np.uint64(fstride[a0]), np.uint64(fstride[a0 + 1])
            for c in range(M):
                counts[np.uint64(off) + np.uint64(ra[c]) * sa + np.uint64(rb[c]) * sb] += 1
        elif a1 - a0 == 1:
            ra = xt[fvars[a0]]
            sa = np.uint64(fstride[a0])
            for c in range(M):
                counts[np.uint64(off) + np.uint64(ra[c]) * sa] += 1
        else:
            for c in range(M):
                pos = off
                for a in range(a0, a1):
                    pos += np.int64(xt[fvars[a], c]) * fstride[a]
                counts[pos] += 1


@njit(cache=True, parallel=True)
def site_major_counts(xt, fptr, fvars, fstride, offsets, total):  # pragma: no cover
    """:func:`factor_counts` of the chains held site-major (``xt (n, M)``, row ``i`` the
    states of variable ``i`` in every chain), by blocks of :data:`FACTOR_BLOCK` factors in
    parallel: each block writes only its own factors' counts, so the counts do not depend
    on the threads. A factor's states are read from its variables' rows, contiguous."""
    F = offsets.shape[0]
    counts = np.zeros(total, dtype=np.int64)
    blocks = (F + FACTOR_BLOCK - 1) // FACTOR_BLOCK
    for c in prange(blocks):
        k0 = c * FACTOR_BLOCK
        _count_site_major(xt, fptr, fvars, fstride, offsets, counts, k0,
                          min(F, k0 + FACTOR_BLOCK))
    return counts


@njit(cache=True)
def site_major_counts_serial(xt, fptr, fvars, fstride, offsets, total):  # pragma: no cover
    """:func:`site_major_counts` on one thread (the same counts)."""
    F = offsets.shape[0]
    counts = np.zeros(total, dtype=np.int64)
    for k0 in range(0, F, FACTOR_BLOCK):
        _count_site_major(xt, fptr, fvars, fstride, offsets, counts, k0,
                          min(F, k0 + FACTOR_BLOCK))
    return counts
