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
Every update draws from its own counter-based stream: chain ``c``'s update of variable
``i`` in sweep ``s`` uses ``splitmix64(keys[c] + (s n + i + 1) gamma)``, so the bits depend
on neither the blocks, the threads nor the order of a colour class.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

from mrflib.inference._splitmix import _GAMMA, _MIX1, _MIX2

__all__ = ["CHAIN_BLOCK", "FIXED_BLOCK", "MAX_FIXED_STATES", "sweeps_parallel",
           "sweeps_serial", "fixed_parallel", "fixed_serial", "widths"]

#: Chains updated together at each site.
CHAIN_BLOCK = 16
#: Chains updated together at each site by the kernels of a fixed number of states.
FIXED_BLOCK = 32
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
                if logs:
                    for v in range(c):
                        for b in range(nb):
                            sc[v, b] += w[base[b] + v]
                else:
                    for v in range(c):
                        for b in range(nb):
                            sc[v, b] *= w[base[b] + v]
            if logs:  # the largest log-weight to 0 before exponentiating
                for b in range(nb):
                    tot[b] = sc[0, b]
                for v in range(1, c):
                    for b in range(nb):
                        tot[b] = max(tot[b], sc[v, b])
                for v in range(c):
                    for b in range(nb):
                        sc[v, b] = np.exp(sc[v, b] - tot[b])
            # draw s n + i of each chain's stream: a uniform of 53 bits
            step = (first + np.uint64(i)) * _GAMMA
            for b in range(nb):
                z = keys[r0 + b] + step
                z = (z ^ (z >> np.uint64(30))) * _MIX1
                z = (z ^ (z >> np.uint64(27))) * _MIX2
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


@njit(cache=True)
def _fixed_block(qt, r0, nb, x, w, order, nptr, nbr, noff, uoff, keys, record,
                 out):  # pragma: no cover - numba
    """:func:`_block` for products of weights when every variable has ``len(qt)`` states
    (a constant of the compiled kernel: its loops over states unroll), on a block of
    at most :data:`FIXED_BLOCK` chains (``nb``). The same operations in the same order as
    :func:`_block`, so the same bits.

    One chain is updated at a time with its weights in registers; the indices are
    unsigned, which spares every read the test for a negative index (half of the
    instructions of the update otherwise)."""
    Q = len(qt)
    uQ = np.uint64(Q)
    uB = np.uint64(FIXED_BLOCK)
    n = x.shape[1]
    buf = np.zeros(n * FIXED_BLOCK, dtype=np.int32)  # buf[i B + b]: chain b's state of i
    sc = np.empty(Q)
    ks = np.zeros(FIXED_BLOCK, dtype=np.uint64)
    for b in range(nb):
        ks[b] = keys[r0 + b]
        for i in range(n):
            buf[i * FIXED_BLOCK + b] = x[r0 + b, i]
    for s in range(record.shape[0]):
        first = np.uint64(s) * np.uint64(n) + _ONE
        for a in range(order.shape[0]):
            i = np.uint64(order[a])
            u0 = np.uint64(uoff[i])
            k0 = np.uint64(nptr[i])
            k1 = np.uint64(nptr[i + _ONE])
            step = (first + i) * _GAMMA
            iB = i * uB
            for b in range(nb):
                ub = np.uint64(b)
                for v in range(Q):
                    sc[v] = w[u0 + np.uint64(v)]
                k = k0
                while k < k1:  # each neighbour's row, in list order
                    base = (np.uint64(noff[k])
                            + np.uint64(buf[np.uint64(nbr[k]) * uB + ub]) * uQ)
                    for v in range(Q):
                        sc[v] *= w[base + np.uint64(v)]
                    k += _ONE
                z = ks[ub] + step
                z = (z ^ (z >> np.uint64(30))) * _MIX1
                z = (z ^ (z >> np.uint64(27))) * _MIX2
                z = z ^ (z >> np.uint64(31))
                tot = 0.0
                for v in range(Q):
                    tot += sc[v]
                    sc[v] = tot
                target = np.float64(z >> np.uint64(11)) * _TWO_M53 * tot
                pick = 0
                for v in range(Q - 1):
                    pick += sc[v] <= target
                buf[iB + ub] = pick
        if record[s] >= 0:
            for b in range(nb):
                for i in range(n):
                    out[record[s], r0 + b, i] = buf[i * FIXED_BLOCK + b]
    for b in range(nb):
        for i in range(n):
            x[r0 + b, i] = buf[i * FIXED_BLOCK + b]


@njit(cache=True, parallel=True)
def fixed_parallel(qt, x, w, order, nptr, nbr, noff, uoff, keys, record,
                   out):  # pragma: no cover - numba
    """:func:`sweeps_parallel` (products of weights) when every variable has ``len(qt)``
    states, blocks of :data:`FIXED_BLOCK` chains in parallel (:func:`_fixed_block`)."""
    M = x.shape[0]
    blocks = (M + FIXED_BLOCK - 1) // FIXED_BLOCK
    for q in prange(blocks):
        r0 = q * FIXED_BLOCK
        _fixed_block(qt, r0, min(FIXED_BLOCK, M - r0), x, w, order, nptr, nbr, noff, uoff,
                     keys, record, out)


@njit(cache=True)
def fixed_serial(qt, x, w, order, nptr, nbr, noff, uoff, keys, record,
                 out):  # pragma: no cover - numba
    """:func:`fixed_parallel` on one thread (the same bits)."""
    M = x.shape[0]
    for r0 in range(0, M, FIXED_BLOCK):
        _fixed_block(qt, r0, min(FIXED_BLOCK, M - r0), x, w, order, nptr, nbr, noff, uoff,
                     keys, record, out)


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
