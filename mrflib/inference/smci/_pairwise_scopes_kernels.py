"""Numba kernels of 1-SMCI of the factor scopes of a pairwise factor graph
(:mod:`mrflib.inference.smci._pairwise_scopes`).

The weights ``w`` are those of :class:`mrflib.inference.sampling._pairwise.Pairwise` (a
variable's unary row at ``uoff[i]``; for its ``k``-th neighbour a table whose row of the
neighbour's state ``s`` starts at ``noff[k] + s * card[i]``), exponentiated rows (``logs``
false) or log-weights (``logs`` true); ``pe`` holds each pair's table over
``(x_lo, x_hi)`` at ``poff[p]``, exponentiated with its largest entry 1 or in logs.

The rows are taken in chunks of ``buf.shape[0]``. First, every variable in parallel: for
each row of the chunk, its *cavity* towards each neighbour ``k`` (its unary row times the
rows of all its other neighbours, by a prefix and a suffix product over its neighbour
list) into ``buf[b, eoff[k]:]``, and its conditional given the rest, added to ``vacc``.
Then every pair in parallel: ``P(x_lo, x_hi | rest) ∝ cav_lo(x_lo) pe(x_lo, x_hi)
cav_hi(x_hi)``, added to ``pacc``. Each variable and each pair owns its accumulators,
filled in row order: the sums do not depend on the threads.
"""

from __future__ import annotations

import numpy as np
from numba import njit, prange

__all__ = ["scope_sums_parallel", "scope_sums_serial"]


@njit(cache=True)
def _cavities(i, r0, nb, x, batch, w, logs, nptr, nbr, noff, uoff, card, eoff, voff, buf,
              vacc, acc, suf):  # pragma: no cover - numba
    """Variable ``i``'s cavities and conditionals for rows ``r0 .. r0 + nb - 1``; returns
    the first of them whose state of ``x_i`` has zero unary weight, or -1."""
    c = card[i]
    u0 = uoff[i]
    lo, hi = nptr[i], nptr[i + 1]
    bad = -1
    for b in range(nb):
        r = r0 + b
        o = x[r, i]
        if (w[u0 + o] == -np.inf) if logs else (w[u0 + o] == 0.0):
            if bad < 0:
                bad = r
        for v in range(c):
            acc[v] = w[u0 + v]
            suf[v] = 0.0 if logs else 1.0
        for k in range(lo, hi):
            e = eoff[k]
            at = noff[k] + x[r, nbr[k]] * c
            for v in range(c):
                buf[b, e + v] = acc[v]
                if logs:
                    acc[v] += w[at + v]
                else:
                    acc[v] *= w[at + v]
        for k in range(hi - 1, lo - 1, -1):
            e = eoff[k]
            at = noff[k] + x[r, nbr[k]] * c
            for v in range(c):
                if logs:
                    buf[b, e + v] += suf[v]
                    suf[v] += w[at + v]
                else:
                    buf[b, e + v] *= suf[v]
                    suf[v] *= w[at + v]
        if logs:
            mx = acc[0]
            for v in range(1, c):
                mx = max(mx, acc[v])
            if mx == -np.inf:
                continue
            for v in range(c):
                acc[v] = np.exp(acc[v] - mx)
        tot = 0.0
        for v in range(c):
            tot += acc[v]
        if tot == 0.0:  # a row of zero weight, refused by the caller
            continue
        inv = 1.0 / tot
        g = batch[r]
        for v in range(c):
            vacc[g, voff[i] + v] += acc[v] * inv
    return bad


@njit(cache=True)
def _pair(p, r0, nb, x, batch, pe, logs, plo, phi, klo, khi, poff, card, eoff, buf, pacc,
          m):  # pragma: no cover - numba
    """Pair ``p``'s conditionals for rows ``r0 .. r0 + nb - 1``; returns the first of
    them whose states of the pair have zero pair weight, or -1."""
    i, j = plo[p], phi[p]
    ca, cb = card[i], card[j]
    ea, eb = eoff[klo[p]], eoff[khi[p]]
    p0 = poff[p]
    bad = -1
    for b in range(nb):
        r = r0 + b
        obs = pe[p0 + x[r, i] * cb + x[r, j]]
        if (obs == -np.inf) if logs else (obs == 0.0):
            if bad < 0:
                bad = r
        if logs:
            mx = -np.inf
            for a in range(ca):
                ua = buf[b, ea + a]
                for s in range(cb):
                    t = ua + pe[p0 + a * cb + s] + buf[b, eb + s]
                    m[a * cb + s] = t
                    mx = max(mx, t)
            if mx == -np.inf:
                continue
            for t in range(ca * cb):
                m[t] = np.exp(m[t] - mx)
        else:
            for a in range(ca):
                ua = buf[b, ea + a]
                for s in range(cb):
                    m[a * cb + s] = ua * pe[p0 + a * cb + s] * buf[b, eb + s]
        z = 0.0
        for t in range(ca * cb):
            z += m[t]
        if z == 0.0:  # a row of zero weight, refused by the caller
            continue
        inv = 1.0 / z
        g = batch[r]
        for t in range(ca * cb):
            pacc[g, p0 + t] += m[t] * inv
    return bad


@njit(cache=True)
def _sizes(card, plo, phi):  # pragma: no cover - numba
    cmax, pmax = 1, 1
    for i in range(card.shape[0]):
        cmax = max(cmax, card[i])
    for p in range(plo.shape[0]):
        pmax = max(pmax, card[plo[p]] * card[phi[p]])
    return cmax, pmax


@njit(cache=True, parallel=True)
def scope_sums_parallel(x, batch, w, pe, logs, nptr, nbr, noff, uoff, card, eoff, voff,
                        plo, phi, klo, khi, poff, buf, vacc, pacc, vbad, pbad
                        ):  # pragma: no cover - numba
    """The per-batch sums of every variable's and every pair's conditional over the rows
    ``x (N, n)`` (``batch[r]`` the batch of row ``r``) into ``vacc`` and ``pacc`` (zeros
    on entry); ``vbad[i]``, ``pbad[p]`` the first row (or -1) where the variable's unary
    weight, or the pair's weight, of the observed states is zero. Variables, then pairs, on
    all threads, chunk by chunk of rows."""
    n, P = card.shape[0], plo.shape[0]
    cmax, pmax = _sizes(card, plo, phi)
    N, R = x.shape[0], buf.shape[0]
    for r0 in range(0, N, R):
        nb = min(R, N - r0)
        for i in prange(n):
            acc = np.empty(cmax)
            suf = np.empty(cmax)
            bad = _cavities(i, r0, nb, x, batch, w, logs, nptr, nbr, noff, uoff, card, eoff,
                            voff, buf, vacc, acc, suf)
            if bad >= 0 and vbad[i] < 0:
                vbad[i] = bad
        for p in prange(P):
            m = np.empty(pmax)
            bad = _pair(p, r0, nb, x, batch, pe, logs, plo, phi, klo, khi, poff, card, eoff,
                        buf, pacc, m)
            if bad >= 0 and pbad[p] < 0:
                pbad[p] = bad


@njit(cache=True)
def scope_sums_serial(x, batch, w, pe, logs, nptr, nbr, noff, uoff, card, eoff, voff,
                      plo, phi, klo, khi, poff, buf, vacc, pacc, vbad, pbad
                      ):  # pragma: no cover - numba
    """:func:`scope_sums_parallel` on one thread (the same operations, the same sums)."""
    n, P = card.shape[0], plo.shape[0]
    cmax, pmax = _sizes(card, plo, phi)
    acc = np.empty(cmax)
    suf = np.empty(cmax)
    m = np.empty(pmax)
    N, R = x.shape[0], buf.shape[0]
    for r0 in range(0, N, R):
        nb = min(R, N - r0)
        for i in range(n):
            bad = _cavities(i, r0, nb, x, batch, w, logs, nptr, nbr, noff, uoff, card, eoff,
                            voff, buf, vacc, acc, suf)
            if bad >= 0 and vbad[i] < 0:
                vbad[i] = bad
        for p in range(P):
            bad = _pair(p, r0, nb, x, batch, pe, logs, plo, phi, klo, khi, poff, card, eoff,
                        buf, pacc, m)
            if bad >= 0 and pbad[p] < 0:
                pbad[p] = bad
