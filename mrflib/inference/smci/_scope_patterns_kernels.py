"""Numba kernels of 1-SMCI of the factor scopes of a pairwise factor graph by the
configurations of each variable's neighbours (:mod:`mrflib.inference.smci._scope_patterns`).

``ids[i, r]`` is the *key* of row ``r``'s configuration of ``i``'s neighbours: their states
in mixed radix, ``i``'s first neighbour the most significant digit (:func:`boundary_keys`).
Every conditional that 1-SMCI sums depends on a row only through these keys:
``P(x_i | rest)`` through ``i``'s, and for a pair ``(i, j)``
``P(x_i, x_j | rest) ∝ cav_i(x_i) pe(x_i, x_j) cav_j(x_j)`` through ``i``'s and ``j``'s
(a cavity leaves the other end out). So a step tabulates, per variable, the product of
its rows over *every* configuration of its neighbours (:func:`_products`, digit by digit
in place: ``O(K c)`` for ``K`` configurations of ``c`` states) and, per pair, both
cavities over the configurations of the other neighbours; for each row it then does one
dot product and one ``q``-vector update, ``S[a] += cav_j[b] / Z`` with
``Z = v[a] · cav_j[b]``, ``v = cav_i pe`` tabulated once; the pair's sums are
``pe ∘ Σ_a cav_i[a] ⊗ S[a]``.

The rows are exponentiated rows of :class:`mrflib.inference.sampling._pairwise.Pairwise`
with no zero weight (the caller checks), so every row has positive weight. Each variable
writes only its conditional and the pairs it is the lower end of, and sums in a fixed
order: the sums do not depend on the threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["boundary_keys", "pattern_sums_parallel", "pattern_sums_serial"]


@njit(cache=True, parallel=True)
def boundary_keys(xt, n_rows, nptr, nbr, card, ids):  # pragma: no cover - numba
    """``ids[i, r]``: the key of row ``r``'s configuration of ``i``'s neighbours (``xt``
    the rows transposed; every key below the range of ``ids``' type, which the caller
    ensures)."""
    for i in prange(card.shape[0]):
        for r in range(n_rows):
            ids[i, r] = 0
        for k in range(nptr[i], nptr[i + 1]):
            j, cj = nbr[k], card[nbr[k]]
            for r in range(n_rows):
                ids[i, r] = ids[i, r] * cj + xt[j, r]


@njit(cache=True)
def _products(i, skip, w, nptr, nbr, noff, uoff, card, out):  # pragma: no cover - numba
    """``out[k * c + v]``: ``i``'s unary row times its neighbours' rows at configuration
    ``k`` of its neighbours other than entry ``skip`` (-1: all), for every ``k`` (mixed
    radix, as :func:`boundary_keys`); returns their number. Digit by digit from the least
    significant, in place: with ``m`` configurations so far, the new digit's state ``x``
    fills block ``x`` of ``m c`` entries from block 0, ``x = 0`` last (indices unsigned,
    as in :func:`_expand`)."""
    c = np.uint64(card[i])
    lo = nptr[i]
    u0 = np.uint64(uoff[i])
    for v in range(c):
        out[v] = w[u0 + v]
    m = np.uint64(1)
    for e in range(nptr[i + 1] - lo - 1, -1, -1):
        if e == skip:
            continue
        ce = card[nbr[lo + e]]
        o = np.uint64(noff[lo + e])
        mc = m * c
        for x in range(ce - 1, -1, -1):
            d0 = np.uint64(x) * mc
            b = o + np.uint64(x) * c
            for k in range(m):
                k0 = k * c
                for v in range(c):
                    out[d0 + k0 + v] = out[k0 + v] * w[b + v]
        m *= np.uint64(ce)
    return np.int64(m)


@njit(cache=True)
def _radix(i, e, nptr, nbr, card):  # pragma: no cover - numba
    """The place value of entry ``e``'s digit in ``i``'s keys."""
    rad = 1
    for t in range(nptr[i + 1] - nptr[i] - 1, e, -1):
        rad *= card[nbr[nptr[i] + t]]
    return rad


@njit(cache=True)
def _expand(src, m, width, ce, rad, dst):  # pragma: no cover - numba
    """``dst[k] = src[k without the digit of place value rad]`` (rows of ``width``) for the
    ``m`` full keys ``k``, the digit ranging over ``ce`` states: for each higher part and
    digit, one contiguous block of ``rad`` rows (indices unsigned: a signed index is tested
    for a negative value on every read, which keeps the compiler from making vector
    loops)."""
    L = np.uint64(rad * width)
    for hi in range(m // (ce * rad)):
        s0 = np.uint64(hi) * L
        for x in range(ce):
            d0 = np.uint64(hi * ce + x) * L
            for t in range(L):
                dst[d0 + t] = src[s0 + t]


@njit(cache=True)
def _fold(src, m, width, ce, rad, dst, m_red):  # pragma: no cover - numba
    """``dst[red] = Σ src[k]`` over the full keys ``k`` of each reduced key ``red`` (the
    reverse of :func:`_expand`), the digit's states in order."""
    L = np.uint64(rad * width)
    for t in range(np.uint64(m_red * width)):
        dst[t] = 0.0
    for hi in range(m // (ce * rad)):
        d0 = np.uint64(hi) * L
        for x in range(ce):
            s0 = np.uint64(hi * ce + x) * L
            for t in range(L):
                dst[d0 + t] += src[s0 + t]


@njit(cache=True)
def _times_table(A, m, c, cb, pe, p0, out):  # pragma: no cover - numba
    """``out[a, s] = Σ_x A[a, x] pe[p0 + x cb + s]`` for ``a < m`` (unsigned indices, as
    in :func:`_expand`)."""
    uc, ucb = np.uint64(c), np.uint64(cb)
    for t in range(np.uint64(m) * ucb):
        out[t] = 0.0
    for a in range(np.uint64(m)):
        for x in range(uc):
            ax = A[a * uc + x]
            t0 = np.uint64(p0) + x * ucb
            for s in range(ucb):
                out[a * ucb + s] += ax * pe[t0 + s]


@njit(cache=True)
def _outer_sum(A, m, c, S, cb, out):  # pragma: no cover - numba
    """``out[x, s] = Σ_a A[a, x] S[a, s]`` over ``a < m`` (unsigned indices)."""
    uc, ucb = np.uint64(c), np.uint64(cb)
    for t in range(uc * ucb):
        out[t] = 0.0
    for a in range(np.uint64(m)):
        for x in range(uc):
            ax = A[a * uc + x]
            for s in range(ucb):
                out[x * ucb + s] += ax * S[a * ucb + s]


@njit(cache=True)
def _variable(i, ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot, poff, khi,
              vacc, pacc, full, A, B, vred, vfull, bfull, S, row):  # pragma: no cover - numba
    """Variable ``i``'s conditional and the conditionals of the pairs it is the lower end
    of, summed over the rows into ``vacc`` and ``pacc``."""
    c = card[i]
    lo = nptr[i]
    m = _products(i, -1, w, nptr, nbr, noff, uoff, card, full)
    uc = np.uint64(c)
    for k in range(np.uint64(m)):
        z = 0.0
        for v in range(uc):
            z += full[k * uc + v]
        z = 1.0 / z
        for v in range(uc):
            full[k * uc + v] *= z
    for v in range(c):
        row[v] = 0.0
    for r in range(n_rows):
        k0 = np.uint64(ids[i, r]) * uc
        for v in range(uc):
            row[v] += full[k0 + v]
    v0 = voff[i]
    for v in range(c):
        vacc[v0 + v] += row[v]
    for e in range(nptr[i + 1] - lo):
        p = pslot[lo + e]
        if p < 0:
            continue
        j = nbr[lo + e]
        cb = card[j]
        p0 = poff[p]
        f = khi[p] - nptr[j]  # i's entry in j's list
        ma = _products(i, e, w, nptr, nbr, noff, uoff, card, A)
        mb = _products(j, f, w, nptr, nbr, noff, uoff, card, B)
        _times_table(A, ma, c, cb, pe, p0, vred)
        rad_i = _radix(i, e, nptr, nbr, card)
        rad_j = _radix(j, f, nptr, nbr, card)
        _expand(vred, m, cb, cb, rad_i, vfull)
        mj = mb * c
        _expand(B, mj, cb, c, rad_j, bfull)
        for t in range(np.uint64(m * cb)):
            S[t] = 0.0
        ucb = np.uint64(cb)
        for r in range(n_rows):
            a0 = np.uint64(ids[i, r]) * ucb
            b0 = np.uint64(ids[j, r]) * ucb
            z = 0.0
            for s in range(ucb):
                z += vfull[a0 + s] * bfull[b0 + s]
            z = 1.0 / z
            for s in range(ucb):
                S[a0 + s] += bfull[b0 + s] * z
        _fold(S, m, cb, cb, rad_i, vred, ma)
        _outer_sum(A, ma, c, vred, cb, vfull)  # the pair's sums before pe
        for t in range(c * cb):
            pacc[p0 + t] += pe[p0 + t] * vfull[t]


@njit(cache=True)
def _chunk(lo, hi, ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot, poff, khi,
           vacc, pacc, width):  # pragma: no cover - numba
    """Variables ``lo .. hi - 1`` with scratch of their own (``width``: the most
    configurations of a variable's neighbours times the most states)."""
    full = np.empty(width)
    A = np.empty(width)
    B = np.empty(width)
    vred = np.empty(width)
    vfull = np.empty(width)
    bfull = np.empty(width)
    S = np.empty(width)
    row = np.empty(width)
    for i in range(lo, hi):
        _variable(i, ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot, poff, khi,
                  vacc, pacc, full, A, B, vred, vfull, bfull, S, row)


#: Variables a thread takes at a time (each chunk allocates its scratch once).
CHUNK = 256


@njit(cache=True, parallel=True)
def pattern_sums_parallel(ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot, poff,
                          khi, vacc, pacc, width):  # pragma: no cover - numba
    """The sums over the rows (keys ``ids``) of every variable's conditional into ``vacc``
    and of every pair's into ``pacc`` (zeros on entry), the variables on all threads."""
    n = card.shape[0]
    for t in prange(-(-n // CHUNK)):
        _chunk(t * CHUNK, min(n, (t + 1) * CHUNK), ids, n_rows, w, pe, nptr, nbr, noff, uoff,
               card, voff, pslot, poff, khi, vacc, pacc, width)


@njit(cache=True)
def pattern_sums_serial(ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot, poff,
                        khi, vacc, pacc, width):  # pragma: no cover - numba
    """:func:`pattern_sums_parallel` on one thread (the same operations, the same sums)."""
    _chunk(0, card.shape[0], ids, n_rows, w, pe, nptr, nbr, noff, uoff, card, voff, pslot,
           poff, khi, vacc, pacc, width)
