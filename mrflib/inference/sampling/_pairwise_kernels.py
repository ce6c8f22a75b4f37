"""Numba kernels of the pairwise Gibbs sampler (:mod:`mrflib.inference.sampling._pairwise`).

A model is given as one flat array ``w`` (see
:class:`mrflib.inference.sampling._pairwise.Pairwise`):
variable ``i``'s unary row at ``uoff[i]``, and for the ``k``-th entry of its neighbour list
(``nbr[nptr[i]:nptr[i+1]]``) a table at ``noff[k]`` oriented for ``i``: the row of the
neighbour's state ``s`` is ``w[noff[k] + s * card[i]:][:card[i]]``. The weights are either
exponentiated (``logs`` false: a conditional is the product of its rows) or log-weights
(``logs`` true: the sum, then one exponential per state).

Chains are swept in blocks of :data:`CHAIN_BLOCK`, held site-major (``buf[i, b]``), so that a
site's rows are read once for the block while they are in cache; blocks run in parallel.
The kernels for a fixed number of states take the chains site-major themselves
(``xt[i, c]``, uint8: :func:`mrflib.inference.sampling._pairwise.site_major`), so persistent
chains need no copy per call.
Every update draws from its own counter-based stream: chain ``c``'s update of variable
``i`` in sweep ``s`` uses ``splitmix64(keys[c] + (s n + i + 1) gamma)``, so the bits depend
on neither the blocks, the threads nor the order of a colour class.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange
from numba.cpython.unsafe.tuple import tuple_setitem

from mrflib.inference._splitmix import GAMMA, MIX1, MIX2

__all__ = ["CHAIN_BLOCK", "FIXED_BLOCK", "MAX_FIXED_STATES", "TILE",
           "sweeps_parallel", "sweeps_serial", "fixed_parallel", "fixed_serial", "widths",
           "times_row", "column_max", "transpose", "take_columns"]

#: Chains updated together at each site.
CHAIN_BLOCK = 16
#: Most chains updated together at each site by the kernels of a fixed number of states:
#: their states of a site fill one 64-byte cache line (uint8).
FIXED_BLOCK = 64
#: Largest number of states for which a kernel is compiled with it as a constant.
MAX_FIXED_STATES = 8
_ONE = np.uint64(1)
_TWO_M53 = 2.0**-53


@njit(cache=True)
def widths(nptr, card):  # pragma: no cover - numba
    """The most states of a variable and the most neighbours of the layout above: the
    sizes of a kernel's scratch, found once per call (per variable they would cost O(n)
    each)."""
    cmax, dmax = 1, 1
    for i in range(card.shape[0]):
        cmax = max(cmax, card[i])
        dmax = max(dmax, nptr[i + 1] - nptr[i])
    return cmax, dmax


@njit(cache=True, inline="always")
def times_row(acc, w, base, c, nb, logs):  # pragma: no cover - numba
    """``acc[v, b] *= w[base[b] + v]`` (``+=`` for logs): a neighbour's row of each of a
    block's ``nb`` columns multiplied into their conditionals' weights, state ``v`` of
    ``c`` (the step shared by Gibbs sweeps, pseudo-likelihood and 1-SMCI's scopes)."""
    if logs:
        for v in range(c):
            for b in range(nb):
                acc[v, b] += w[base[b] + v]
    else:
        for v in range(c):
            for b in range(nb):
                acc[v, b] *= w[base[b] + v]


@njit(cache=True, inline="always")
def column_max(acc, c, nb, out):  # pragma: no cover - numba
    """``out[b] = max_v acc[v, b]`` over states ``v < c``: the largest log-weight of each
    column, taken to 0 before exponentiating."""
    for b in range(nb):
        out[b] = acc[0, b]
    for v in range(1, c):
        for b in range(nb):
            out[b] = max(out[b], acc[v, b])


@njit(cache=True)
def _block(r0, nb, x, w, order, nptr, nbr, noff, uoff, card, logs, keys, record,
           out):  # pragma: no cover - numba
    """All sweeps of chains ``r0 .. r0 + nb - 1``, in place; after sweep ``s`` with
    ``record[s] >= 0`` their states go to ``out[record[s]]``.

    Every inner loop runs over the block's chains (``b``), so that the compiler makes it a
    vector loop whatever the cardinality: the weights ``sc[v, b]`` of state ``v``, their
    running sums, the uniforms and the draws."""
    n = x.shape[1]
    cmax = 1
    for i in range(n):
        cmax = max(cmax, card[i])
    buf = np.empty((n, nb), dtype=np.int64)
    sc = np.empty((cmax, nb))
    base = np.empty(nb, dtype=np.int64)
    tot = np.empty(nb)
    target = np.empty(nb)
    pick = np.empty(nb, dtype=np.int64)
    for b in range(nb):
        for i in range(n):
            buf[i, b] = x[r0 + b, i]
    for s in range(record.shape[0]):
        first = np.uint64(s) * np.uint64(n) + np.uint64(1)
        for a in range(order.shape[0]):
            i = order[a]
            c = card[i]
            u0 = uoff[i]
            for v in range(c):
                wv = w[u0 + v]
                for b in range(nb):
                    sc[v, b] = wv
            for k in range(nptr[i], nptr[i + 1]):  # each neighbour's row, in list order
                o = noff[k]
                j = nbr[k]
                for b in range(nb):
                    base[b] = o + buf[j, b] * c
                times_row(sc, w, base, c, nb, logs)
            if logs:  # the largest log-weight to 0 before exponentiating
                column_max(sc, c, nb, tot)
                for v in range(c):
                    for b in range(nb):
                        sc[v, b] = np.exp(sc[v, b] - tot[b])
            # draw s n + i of each chain's stream: a uniform of 53 bits
            step = (first + np.uint64(i)) * GAMMA
            for b in range(nb):
                z = keys[r0 + b] + step
                z = (z ^ (z >> np.uint64(30))) * MIX1
                z = (z ^ (z >> np.uint64(27))) * MIX2
                z = z ^ (z >> np.uint64(31))
                target[b] = np.float64(z >> np.uint64(11)) * _TWO_M53
                tot[b] = 0.0
                pick[b] = 0
            for v in range(c):  # cumulative weights
                for b in range(nb):
                    tot[b] += sc[v, b]
                    sc[v, b] = tot[b]
            for b in range(nb):
                target[b] *= tot[b]
            # the first state whose cumulative weight exceeds the target: a state of zero
            # weight adds nothing, so it is never drawn
            for v in range(c - 1):
                for b in range(nb):
                    pick[b] += sc[v, b] <= target[b]
            for b in range(nb):
                buf[i, b] = pick[b]
        if record[s] >= 0:
            for b in range(nb):
                for i in range(n):
                    out[record[s], r0 + b, i] = buf[i, b]
    for b in range(nb):
        for i in range(n):
            x[r0 + b, i] = buf[i, b]


@njit(cache=True, parallel=True)
def sweeps_parallel(x, w, order, nptr, nbr, noff, uoff, card, logs, keys, record, out,
                    block=CHAIN_BLOCK):  # pragma: no cover - numba
    """``len(record)`` sweeps of the chains ``x (M, n)`` in place, blocks of ``block``
    chains in parallel (see :func:`_block`; the bits do not depend on ``block``)."""
    M = x.shape[0]
    blocks = (M + block - 1) // block
    for q in prange(blocks):
        r0 = q * block
        _block(r0, min(block, M - r0), x, w, order, nptr, nbr, noff, uoff, card, logs,
               keys, record, out)


@njit(cache=True)
def sweeps_serial(x, w, order, nptr, nbr, noff, uoff, card, logs, keys, record, out,
                  block=CHAIN_BLOCK):  # pragma: no cover - numba
    """:func:`sweeps_parallel` on one thread (the same bits)."""
    M = x.shape[0]
    for r0 in range(0, M, block):
        _block(r0, min(block, M - r0), x, w, order, nptr, nbr, noff, uoff, card, logs,
               keys, record, out)


@njit(cache=True, inline="always")
def _times_rows(sc, w, flat, nbr, noff, k, k1, M, c, uQ):  # pragma: no cover - numba
    """``sc`` times the rows of the neighbours ``k .. k1 - 1`` (in list order) selected
    by chain ``c``'s states."""
    Q = len(sc)
    while k < k1:
        base = np.uint64(noff[k]) + np.uint64(flat[np.uint64(nbr[k]) * M + c]) * uQ
        for v in range(Q):
            sc = tuple_setitem(sc, v, sc[v] * w[base + np.uint64(v)])
        k += _ONE
    return sc


@njit(cache=True, inline="always")
def _draw(sc, key, step):  # pragma: no cover - numba
    """The state drawn from the weights ``sc`` by the uniform ``splitmix64(key + step)``:
    the first whose cumulative weight exceeds the uniform times the total (a state of zero
    weight adds nothing, so it is never drawn)."""
    Q = len(sc)
    z = key + step
    z = (z ^ (z >> np.uint64(30))) * MIX1
    z = (z ^ (z >> np.uint64(27))) * MIX2
    z = z ^ (z >> np.uint64(31))
    tot = 0.0
    for v in range(Q):  # cumulative weights
        tot += sc[v]
        sc = tuple_setitem(sc, v, tot)
    # below 2**53 the signed conversion is exact and needs no unsigned fix-up
    target = np.float64(np.int64(z >> np.uint64(11))) * _TWO_M53 * tot
    pick = 0
    for v in range(Q - 1):
        pick += sc[v] <= target
    return pick


@njit(cache=True)
def fixed_serial(qt, xt, flat, w, order, nptr, nbr, noff, uoff, keys, record, out, block,
                 c0, c1, fold):  # pragma: no cover - numba
    """:func:`_block` for products of weights when every variable has ``len(qt)`` states
    (``qt``: a tuple of that many floats, a constant of the compiled kernel: its loops over
    states unroll), on the chains ``c0 .. c1 - 1`` of the site-major states ``xt (n, M)``
    (uint8), in place, blocks of ``block`` chains one after the other: all sweeps of a
    block, then the next. ``flat`` is ``xt.ravel()`` and ``fold`` scratch of at least
    ``q^3`` floats, both from the caller: free in Python, where a ``ravel`` or an
    allocation in the kernel would cost a cold first call the compilation of numba's.
    The same operations in the same order as :func:`_block`, so the same bits, whatever
    the blocks. :func:`fixed_parallel` runs it on one block per task: one kernel serves
    both, so that a cold first call compiles one, not a serial loop on top of its block
    kernel. Each update's weights start from the site's unary row or, past the table
    below, from its entry; one inlined product and draw serve both (two would double
    the kernel's compilation).

    One chain is updated at a time. The state weights are a tuple (registers, after the
    unrolling), each a product of the site's unary entry and each neighbour's row in list
    order: an array would send every product through memory, a store and a load on the
    critical path of each factor. For a site of two neighbours or more, the products of
    the unary row and the first two neighbours' rows are tabulated once for the block
    (``fold[s1, s2, v] = (u_v w1[s1, v]) w2[s2, v]``, the very products an update would
    form) when the block has at least ``q^2`` chains, so an update reads one row of the
    table instead of multiplying three. The
    indices are unsigned, which spares every read the test for a negative index. The
    block's states of a site are adjacent bytes (one cache line for a block of 64 chains),
    so the neighbours' states of all the block's chains are read in a few lines while the
    site's rows stay in cache."""
    Q = len(qt)
    uQ = np.uint64(Q)
    n = xt.shape[0]
    M = np.uint64(xt.shape[1])  # site j's state of chain c at flat[j M + c]
    two = np.uint64(2)
    for r0 in range(c0, c1, block):
        nb = block if block < c1 - r0 else c1 - r0
        for s in range(record.shape[0]):
            first = np.uint64(s) * np.uint64(n) + _ONE
            for a in range(order.shape[0]):
                i = np.uint64(order[a])
                u0 = np.uint64(uoff[i])
                k0 = np.uint64(nptr[i])
                k1 = np.uint64(nptr[i + _ONE])
                step = (first + i) * GAMMA
                iM = i * M
                unary = qt
                for v in range(Q):
                    unary = tuple_setitem(unary, v, w[u0 + np.uint64(v)])
                # the table costs 2 q^3 products per block, and saves 2 q per update
                folded = k1 - k0 >= two and nb >= Q * Q
                kf = k0
                m1 = m2 = _ONE
                if folded:
                    o1 = np.uint64(noff[k0])
                    o2 = np.uint64(noff[k0 + _ONE])
                    for s1 in range(Q):
                        for s2 in range(Q):
                            f = (s1 * Q + s2) * Q
                            for v in range(Q):
                                fold[f + v] = ((unary[v] * w[o1 + np.uint64(s1 * Q + v)])
                                               * w[o2 + np.uint64(s2 * Q + v)])
                    m1 = np.uint64(nbr[k0]) * M
                    m2 = np.uint64(nbr[k0 + _ONE]) * M
                    kf = k0 + two
                for b in range(nb):
                    c = np.uint64(r0 + b)
                    sc = unary
                    if folded:
                        f0 = (np.uint64(flat[m1 + c]) * uQ + np.uint64(flat[m2 + c])) * uQ
                        for v in range(Q):
                            sc = tuple_setitem(sc, v, fold[f0 + np.uint64(v)])
                    sc = _times_rows(sc, w, flat, nbr, noff, kf, k1, M, c, uQ)
                    flat[iM + c] = _draw(sc, keys[c], step)
            if record[s] >= 0:
                for b in range(nb):
                    for j in range(n):
                        out[record[s], r0 + b, j] = xt[j, r0 + b]


@njit(cache=True, parallel=True)
def fixed_parallel(qt, xt, flat, w, order, nptr, nbr, noff, uoff, keys, record, out, block,
                   c0, c1, fold):  # pragma: no cover - numba
    """:func:`sweeps_parallel` (products of weights) when every variable has ``len(qt)``
    states (``qt = (0.0,) * q``): :func:`fixed_serial` on the chains ``c0 .. c1 - 1``,
    blocks of ``block`` chains in parallel (the bits depend on neither the block nor the
    threads), block ``q`` with the scratch ``fold[q]`` (``fold``: a row of at least
    ``q^3`` floats per block)."""
    blocks = (c1 - c0 + block - 1) // block
    for q in prange(blocks):
        r0 = c0 + q * block
        r1 = r0 + block if block < c1 - r0 else c1
        fixed_serial(qt, xt, flat, w, order, nptr, nbr, noff, uoff, keys, record, out, block,
                     r0, r1, fold[q])


#: Side of the square tiles of :func:`transpose`: a tile's rows of both arrays stay in cache.
TILE = 64


@njit(cache=True)
def transpose(src, dst):  # pragma: no cover - numba
    """``dst[j, i] = src[i, j]`` (cast to ``dst``'s type) by square tiles of :data:`TILE`:
    element by element, one of the two arrays would be read or written a cache line per
    element."""
    n, m = src.shape
    for i0 in range(0, n, TILE):
        i1 = i0 + TILE if i0 + TILE < n else n  # not min(): one overload fewer to compile
        for j0 in range(0, m, TILE):
            j1 = j0 + TILE if j0 + TILE < m else m
            for i in range(i0, i1):
                for j in range(j0, j1):
                    dst[j, i] = src[i, j]


@njit(cache=True)
def take_columns(src, cols, dst):  # pragma: no cover - numba
    """``dst[:, c] = src[:, cols[c]]``, row by row."""
    for i in range(src.shape[0]):
        for c in range(cols.shape[0]):
            dst[i, c] = src[i, cols[c]]


@njit(cache=True)
def greedy_colouring(nptr, nbr):  # pragma: no cover - numba
    """Colours of a graph given as CSR adjacency: each node, in index order, takes the
    smallest colour none of its coloured neighbours has (at most ``degree + 1`` colours)."""
    n = nptr.shape[0] - 1
    colour = np.full(n, -1, dtype=np.int64)
    seen = np.full(n + 1, -1, dtype=np.int64)
    for i in range(n):
        for k in range(nptr[i], nptr[i + 1]):
            cj = colour[nbr[k]]
            if cj >= 0:
                seen[cj] = i
        c = 0
        while seen[c] == i:
            c += 1
        colour[i] = c
    return colour
